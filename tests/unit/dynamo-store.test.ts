import {
  BatchGetItemCommand,
  DynamoDBClient,
  GetItemCommand,
  InternalServerError,
  ProvisionedThroughputExceededException,
  PutItemCommand,
  RequestLimitExceeded,
  ThrottlingException,
  TransactionCanceledException,
  TransactWriteItemsCommand,
  type CancellationReason,
} from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { buildContainer } from '../../shared/adapters/composition.ts';
import { claimToItem, generatedToItem, leaseToItem } from '../../shared/adapters/dynamodb/codec.ts';
import {
  either,
  hasExpired,
  hasLabels,
  belongsToClaim,
  holds,
  itemIsAbsent,
  render,
} from '../../shared/adapters/dynamodb/conditions.ts';
import { SdkTable, translateError } from '../../shared/adapters/dynamodb/sdk-table.ts';
import { tableStores } from '../../shared/adapters/dynamodb/stores.ts';
import { loadConfig } from '../../shared/config.ts';
import { NotReadyError } from '../../shared/core/errors.ts';
import { IpFamily } from '../../shared/core/ip/address.ts';
import { IpFamilyPolicy, type Claim, type ClaimAddress, type Lease } from '../../shared/core/model.ts';

const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);
const TABLE = 'ipam-unit';
const SHARDS = 4;
const OWNER = { kind: 'Pod', name: 'web-0', uid: 'owner-1' };

const client = new DynamoDBClient({
  region: 'us-east-1',
  credentials: { accessKeyId: 'unit', secretAccessKey: 'unit' },
});
const ddb = mockClient(client);
const table = new SdkTable(client, TABLE);
const store = tableStores(table, { shards: SHARDS, cursorSecret: 'unit-secret' }).claims;

beforeEach(() => {
  ddb.reset();
});

/** A claim of pool-a holding the given addresses. */
function claimOf(addresses: readonly string[], overrides: Partial<Claim> = {}): Claim {
  return {
    pool: 'pool-a',
    name: 'claim-1',
    uid: 'uid-1',
    spec: {
      owner: OWNER,
      ipFamilyPolicy: addresses.length > 1 ? IpFamilyPolicy.RequireDualStack : IpFamilyPolicy.SingleStack,
      ipFamilies: [],
      addresses: [],
    },
    addresses: addresses.map(
      (address): ClaimAddress => ({
        address,
        family: address.includes(':') ? IpFamily.IPv6 : IpFamily.IPv4,
        range: address.includes(':') ? 'fd00::-64' : '10.0.0.0-24',
      }),
    ),
    createdAt: new Date(NOW).toISOString(),
    version: 1,
    ...overrides,
  };
}

/** The leases a claim writes. */
const leasesOf = (claim: Claim, claimName = claim.name, claimUid = claim.uid): Lease[] =>
  claim.addresses.map((a) => ({
    pool: claim.pool,
    address: a.address,
    family: a.family,
    range: a.range,
    claim: claimName,
    claimUid,
    owner: claim.spec.owner,
    createdAt: claim.createdAt,
  }));

/** A lease of the address held by another claim. */
const heldBy = (address: string, claim: string): Lease => ({
  pool: 'pool-a',
  address,
  family: address.includes(':') ? IpFamily.IPv6 : IpFamily.IPv4,
  range: 'r',
  claim,
  claimUid: `${claim}-uid`,
  owner: { kind: 'Pod', name: claim, uid: `${claim}-owner` },
  createdAt: new Date(NOW - 60_000).toISOString(),
});

const canceled = (reasons: CancellationReason[]) =>
  new TransactionCanceledException({
    message: 'Transaction cancelled, please refer cancellation reasons for specific reasons',
    $metadata: {},
    CancellationReasons: reasons,
  });

const none: CancellationReason = { Code: 'None' };
const conditionFailed = (item?: Record<string, unknown>): CancellationReason => ({
  Code: 'ConditionalCheckFailed',
  Message: 'The conditional request failed',
  ...(item ? { Item: marshall(item, { removeUndefinedValues: true }) } : {}),
});

/** The condition every put of commitClaim carries: the item is absent, or has expired at NOW. */
const absentOrExpired = {
  ConditionExpression: '(attribute_not_exists(#cn0)) OR (#cn1 <= :cv0)',
  ExpressionAttributeNames: { '#cn0': 'PK', '#cn1': 'expiresAt' },
  ExpressionAttributeValues: { ':cv0': { N: String(NOW) } },
  ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
};

/**
 * The condition of commitClaim's lease puts: absent, expired at NOW, or Released and held for the claim's owner
 * identity (kind, name, and creator: none for these unsigned claims).
 */
const takeableBy = (kind: string, name: string) => ({
  ConditionExpression:
    '(attribute_not_exists(#cn0)) OR (#cn1 <= :cv0) OR ((#cn2 = :cv1) AND (#cn3 = :cv2) AND (#cn4 = :cv3) AND (attribute_not_exists(#cn5)))',
  ExpressionAttributeNames: {
    '#cn0': 'PK',
    '#cn1': 'expiresAt',
    '#cn2': 'state',
    '#cn3': 'ownerKind',
    '#cn4': 'ownerName',
    '#cn5': 'createdBy',
  },
  ExpressionAttributeValues: {
    ':cv0': { N: String(NOW) },
    ':cv1': { S: 'Released' },
    ':cv2': { S: kind },
    ':cv3': { S: name },
  },
  ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
});

describe('Conditions', () => {
  it('renders "absent or expired" from its named clauses', () => {
    // Act
    const rendered = render(either(itemIsAbsent(), hasExpired(NOW)));

    // Assess
    expect(rendered).toEqual({
      expression: '(attribute_not_exists(#n0)) OR (#n1 <= :v0)',
      names: { '#n0': 'PK', '#n1': 'expiresAt' },
      values: { ':v0': NOW },
    });
  });

  it('renders "held by this claim incarnation"', () => {
    // Act
    const rendered = render(belongsToClaim('uid-1'), 'c');

    // Assess
    expect(rendered).toEqual({ expression: '#cn0 = :cv0', names: { '#cn0': 'claimUid' }, values: { ':cv0': 'uid-1' } });
  });

  it('renders "has these labels" as one placeholder per step of each document path, a step shared once', () => {
    // Act
    const rendered = render(
      hasLabels([
        ['cni.ipam/node', 'n1'],
        ['app', ''],
      ]),
      'f',
    );

    // Assess: '/' and '.' stay inside a placeholder, so they never read as DynamoDB path syntax.
    expect(rendered).toEqual({
      expression: '(#fn0.#fn1.#fn2 = :fv0) AND (#fn0.#fn1.#fn3 = :fv1)',
      names: { '#fn0': 'spec', '#fn1': 'labels', '#fn2': 'cni.ipam/node', '#fn3': 'app' },
      values: { ':fv0': 'n1', ':fv1': '' },
    });
  });

  it.each([
    ['labels holding the pair', { spec: { labels: { 'cni.ipam/node': 'n1' } } }, true],
    ['another value', { spec: { labels: { 'cni.ipam/node': 'n2' } } }, false],
    ['no labels map', { spec: {} }, false],
    ['no spec', { PK: 'x' }, false],
    ['a spec that is not a map', { spec: 'x' }, false],
    ['a label stored at the top level instead', { 'cni.ipam/node': 'n1', spec: {} }, false],
  ])('evaluates "has these labels" on %s as DynamoDB does', (_what, item, expected) => {
    expect(holds(hasLabels([['cni.ipam/node', 'n1']]), item)).toBe(expected);
  });

  it.each([
    ['an absent item', undefined, true],
    ['an item that expired at now', { PK: 'x', expiresAt: NOW }, true],
    ['an item expiring after now', { PK: 'x', expiresAt: NOW + 1 }, false],
    ['an item without an expiry', { PK: 'x' }, false],
    ['an item whose expiry is not a number', { PK: 'x', expiresAt: String(NOW - 1) }, false],
  ])('evaluates "absent or expired" on %s as DynamoDB does', (_what, item, expected) => {
    expect(holds(either(itemIsAbsent(), hasExpired(NOW)), item)).toBe(expected);
  });
});

describe('Class: TableClaimStore on the SDK engine', () => {
  describe('Method: commitClaim', () => {
    it('writes the claim and each lease in one transaction: the claim put conditioned on "absent or expired", each lease put also on "or held for this owner"', async () => {
      // Prepare
      ddb.on(TransactWriteItemsCommand).resolves({});
      const claim = claimOf(['10.0.0.10', 'fd00::10']);

      // Act
      const outcome = await store.commitClaim(claim, leasesOf(claim), NOW);

      // Assess
      expect(outcome).toEqual({ kind: 'committed' });
      const calls = ddb.commandCalls(TransactWriteItemsCommand);
      expect(calls).toHaveLength(1);
      expect(calls[0]!.args[0].input).toEqual({
        TransactItems: [
          {
            Put: {
              TableName: TABLE,
              Item: expect.objectContaining({
                PK: { S: 'CLAIM#pool-a#claim-1' },
                SK: { S: 'CLAIM' },
                entity: { S: 'claim' },
                schema: { N: '1' },
                uid: { S: 'uid-1' },
                version: { N: '1' },
              }),
              ...absentOrExpired,
            },
          },
          {
            Put: {
              TableName: TABLE,
              Item: expect.objectContaining({
                PK: { S: 'LEASE#pool-a#10.0.0.10' },
                SK: { S: 'LEASE' },
                entity: { S: 'lease' },
                claim: { S: 'claim-1' },
                claimUid: { S: 'uid-1' },
                GSI1PK: { S: expect.stringMatching(/^ADDR#pool-a#IPv4#[0-3]$/) },
                GSI1SK: { S: '0a00000a' },
              }),
              ...takeableBy(claim.spec.owner.kind, claim.spec.owner.name),
            },
          },
          {
            Put: {
              TableName: TABLE,
              Item: expect.objectContaining({
                PK: { S: 'LEASE#pool-a#fd00::10' },
                SK: { S: 'LEASE' },
                entity: { S: 'lease' },
                GSI1PK: { S: expect.stringMatching(/^ADDR#pool-a#IPv6#[0-3]$/) },
                GSI1SK: { S: `fd00${'0'.repeat(26)}10` },
              }),
              ...takeableBy(claim.spec.owner.kind, claim.spec.owner.name),
            },
          },
        ],
      });
    });

    it('writes the generateName marker between the claim and the leases, under the same condition', async () => {
      // Prepare
      ddb.on(TransactWriteItemsCommand).resolves({});
      const claim = claimOf(['10.0.0.10'], { name: 'web-x7k2p', spec: { ...claimOf([]).spec, generateName: 'web-' } });

      // Act
      await store.commitClaim(claim, leasesOf(claim), NOW);

      // Assess
      const items = ddb.commandCalls(TransactWriteItemsCommand)[0]!.args[0].input.TransactItems!;
      expect(items.map((i) => i.Put!.Item!.PK)).toEqual([
        { S: 'CLAIM#pool-a#web-x7k2p' },
        { S: 'GEN#pool-a#owner-1#web-' },
        { S: 'LEASE#pool-a#10.0.0.10' },
      ]);
      expect(items[1]!.Put).toMatchObject(absentOrExpired);
      expect(items[1]!.Put!.Item).toMatchObject({ claim: { S: 'web-x7k2p' }, claimUid: { S: 'uid-1' } });
    });

    it('adds the TTL attributes to a claim with an expiry', async () => {
      // Prepare
      ddb.on(TransactWriteItemsCommand).resolves({});
      const claim = claimOf(['10.0.0.10'], { expiresAt: NOW + 60_000 });

      // Act
      await store.commitClaim(claim, [{ ...leasesOf(claim)[0]!, expiresAt: NOW + 60_000 }], NOW);

      // Assess
      const items = ddb.commandCalls(TransactWriteItemsCommand)[0]!.args[0].input.TransactItems!;
      for (const item of items)
        expect(item.Put!.Item).toMatchObject({
          expiresAt: { N: String(NOW + 60_000) },
          ttl: { N: expect.any(String) },
        });
    });

    it('answers claimExists with the existing claim when the claim put failed its condition', async () => {
      // Prepare
      const existing = claimOf(['10.0.0.99'], { uid: 'uid-0' });
      const claim = claimOf(['10.0.0.10']);
      ddb.on(TransactWriteItemsCommand).rejects(canceled([conditionFailed(claimToItem(existing, SHARDS)), none]));

      // Act
      const outcome = await store.commitClaim(claim, leasesOf(claim), NOW);

      // Assess
      expect(outcome).toEqual({ kind: 'claimExists', existing });
      expect(ddb.calls()).toHaveLength(1);
    });

    it('reads the existing claim when the cancellation reason carries no item', async () => {
      // Prepare
      const existing = claimOf(['10.0.0.99'], { uid: 'uid-0' });
      const claim = claimOf(['10.0.0.10']);
      ddb.on(TransactWriteItemsCommand).rejects(canceled([conditionFailed(), none]));
      ddb
        .on(GetItemCommand)
        .resolves({ Item: marshall(claimToItem(existing, SHARDS), { removeUndefinedValues: true }) });

      // Act
      const outcome = await store.commitClaim(claim, leasesOf(claim), NOW);

      // Assess
      expect(outcome).toEqual({ kind: 'claimExists', existing });
      expect(ddb.commandCalls(GetItemCommand)[0]!.args[0].input).toEqual({
        TableName: TABLE,
        Key: { PK: { S: 'CLAIM#pool-a#claim-1' }, SK: { S: 'CLAIM' } },
        ConsistentRead: true,
      });
    });

    it('answers addressesTaken with the holder when a lease put failed its condition', async () => {
      // Prepare
      const holder = heldBy('10.0.0.10', 'other');
      const claim = claimOf(['10.0.0.10']);
      ddb.on(TransactWriteItemsCommand).rejects(canceled([none, conditionFailed(leaseToItem(holder, SHARDS))]));

      // Act
      const outcome = await store.commitClaim(claim, leasesOf(claim), NOW);

      // Assess
      expect(outcome).toEqual({ kind: 'addressesTaken', taken: [{ address: '10.0.0.10', holder }] });
      expect(ddb.calls()).toHaveLength(1);
    });

    it('names only the address that was taken in a dual-stack claim', async () => {
      // Prepare
      const holder = heldBy('fd00::10', 'other');
      const claim = claimOf(['10.0.0.10', 'fd00::10']);
      ddb.on(TransactWriteItemsCommand).rejects(canceled([none, none, conditionFailed(leaseToItem(holder, SHARDS))]));

      // Act
      const outcome = await store.commitClaim(claim, leasesOf(claim), NOW);

      // Assess
      expect(outcome).toEqual({ kind: 'addressesTaken', taken: [{ address: 'fd00::10', holder }] });
    });

    it('counts a transaction conflict on a lease as a taken address without a holder, marked in flight', async () => {
      // Prepare
      const claim = claimOf(['10.0.0.10']);
      ddb
        .on(TransactWriteItemsCommand)
        .rejects(canceled([none, { Code: 'TransactionConflict', Message: 'Transaction is ongoing for the item' }]));

      // Act
      const outcome = await store.commitClaim(claim, leasesOf(claim), NOW);

      // Assess
      expect(outcome).toEqual({ kind: 'addressesTaken', taken: [{ address: '10.0.0.10', inFlight: true }] });
    });

    it('answers generatedNameExists with the name the marker points to', async () => {
      // Prepare
      const claim = claimOf(['10.0.0.10'], { name: 'web-x7k2p', spec: { ...claimOf([]).spec, generateName: 'web-' } });
      const earlier = { ...claim, name: 'web-b4c5d', uid: 'uid-0' };
      ddb.on(TransactWriteItemsCommand).rejects(canceled([none, conditionFailed(generatedToItem(earlier)), none]));

      // Act
      const outcome = await store.commitClaim(claim, leasesOf(claim), NOW);

      // Assess
      expect(outcome).toEqual({ kind: 'generatedNameExists', claimName: 'web-b4c5d' });
    });

    it('throws NotReadyError when only the claim item met a transaction conflict', async () => {
      // Prepare
      const claim = claimOf(['10.0.0.10']);
      ddb.on(TransactWriteItemsCommand).rejects(canceled([{ Code: 'TransactionConflict' }, none]));

      // Act
      const commit = store.commitClaim(claim, leasesOf(claim), NOW);

      // Assess
      await expect(commit).rejects.toThrow(NotReadyError);
      expect(ddb.calls()).toHaveLength(1);
    });

    it.each(['ThrottlingError', 'ProvisionedThroughputExceeded'])(
      'throws NotReadyError after one send when a cancellation reason is %s',
      async (code) => {
        // Prepare
        const claim = claimOf(['10.0.0.10']);
        const error = canceled([none, { Code: code, Message: 'Throughput exceeds the current capacity' }]);
        ddb.on(TransactWriteItemsCommand).rejectsOnce(error).resolves({});

        // Act
        const commit = store.commitClaim(claim, leasesOf(claim), NOW);

        // Assess
        await expect(commit).rejects.toThrow(NotReadyError);
        await expect(commit).rejects.toMatchObject({ cause: error });
        expect(ddb.calls()).toHaveLength(1);
      },
    );

    it('passes a cancellation for any other reason through unchanged', async () => {
      // Prepare
      const claim = claimOf(['10.0.0.10']);
      const error = canceled([
        { Code: 'ValidationError', Message: 'Item size has exceeded the maximum allowed size' },
        none,
      ]);
      ddb.on(TransactWriteItemsCommand).rejects(error);

      // Act
      const commit = store.commitClaim(claim, leasesOf(claim), NOW);

      // Assess
      await expect(commit).rejects.toBe(error);
    });

    it.each([
      [
        'ProvisionedThroughputExceededException',
        () => new ProvisionedThroughputExceededException({ message: 'Rate exceeded', $metadata: {} }),
      ],
      [
        'ThrottlingException',
        () => new ThrottlingException({ message: 'Rate of requests exceeds the allowed throughput', $metadata: {} }),
      ],
      [
        'RequestLimitExceeded',
        () => new RequestLimitExceeded({ message: 'Throughput exceeds the account limit', $metadata: {} }),
      ],
    ])(
      'throws NotReadyError after exactly one send on %s, even when a second send would succeed',
      async (_name, makeError) => {
        // Prepare
        const claim = claimOf(['10.0.0.10']);
        const error = makeError();
        ddb.on(TransactWriteItemsCommand).rejectsOnce(error).resolves({});

        // Act
        const commit = store.commitClaim(claim, leasesOf(claim), NOW);

        // Assess
        await expect(commit).rejects.toThrow(NotReadyError);
        await expect(commit).rejects.toMatchObject({ cause: error });
        expect(ddb.calls()).toHaveLength(1);
      },
    );

    it('throws NotReadyError after exactly one send when the request times out', async () => {
      // Prepare
      const claim = claimOf(['10.0.0.10']);
      const timeout = Object.assign(new Error('Connection timed out after 3000 ms'), { name: 'TimeoutError' });
      ddb.on(TransactWriteItemsCommand).rejectsOnce(timeout).resolves({});

      // Act
      const commit = store.commitClaim(claim, leasesOf(claim), NOW);

      // Assess
      await expect(commit).rejects.toThrow('The address store did not answer in time; retry shortly.');
      await expect(commit).rejects.toBeInstanceOf(NotReadyError);
      expect(ddb.calls()).toHaveLength(1);
    });

    it("answers DynamoDB Local's lock timeout as DynamoDB answers contention: a cancellation for TransactionConflict", async () => {
      // Prepare: what DynamoDB Local throws when a concurrent transaction holds an item's lock too long
      const claim = claimOf(['10.0.0.10']);
      ddb.on(TransactWriteItemsCommand).rejects(
        new InternalServerError({
          message:
            'This action timed out because it too long waiting for a lock. This request will succeed in actual DynamoDB API',
          $metadata: {},
        }),
      );
      // Act
      const commit = store.commitClaim(claim, leasesOf(claim), NOW);
      // Assess: every item in conflict, as a cancellation would say: its lease lost to a transaction in flight (the
      // allocator tries again), not an internal error
      await expect(commit).resolves.toEqual({
        kind: 'addressesTaken',
        taken: [{ address: '10.0.0.10', inFlight: true }],
      });
    });

    it('passes an unknown error through unchanged after one send', async () => {
      // Prepare
      const claim = claimOf(['10.0.0.10']);
      const error = new InternalServerError({ message: 'Internal server error', $metadata: {} });
      ddb.on(TransactWriteItemsCommand).rejects(error);

      // Act
      const commit = store.commitClaim(claim, leasesOf(claim), NOW);

      // Assess
      await expect(commit).rejects.toBe(error);
      expect(ddb.calls()).toHaveLength(1);
    });
  });

  describe('Method: getClaim', () => {
    it('throws NotReadyError after one send when the read is throttled', async () => {
      // Prepare
      ddb
        .on(GetItemCommand)
        .rejectsOnce(new ProvisionedThroughputExceededException({ message: 'Rate exceeded', $metadata: {} }))
        .resolves({});

      // Act
      const read = store.getClaim('pool-a', 'claim-1');

      // Assess
      await expect(read).rejects.toThrow(NotReadyError);
      expect(ddb.calls()).toHaveLength(1);
    });
  });

  describe('Method: renewClaim', () => {
    it('confirms a hold (no expiry): REMOVEs the expiry, the TTL and the expiry index keys of the claim and each lease, under the same conditions', async () => {
      // Prepare
      ddb.on(TransactWriteItemsCommand).resolves({});
      const claim = claimOf(['10.0.0.10', '10.0.0.11'], { expiresAt: NOW + 60_000 });

      // Act
      const outcome = await store.renewClaim(claim, undefined);

      // Assess
      expect(outcome).toBe('renewed');
      const items = ddb.commandCalls(TransactWriteItemsCommand)[0]!.args[0].input.TransactItems!;
      expect(items.map((i) => i.Update!.Key!.PK)).toEqual([
        { S: 'CLAIM#pool-a#claim-1' },
        { S: 'LEASE#pool-a#10.0.0.10' },
        { S: 'LEASE#pool-a#10.0.0.11' },
      ]);
      // The claim is this incarnation with the expiry read (a renewal is judged against the expiry it replaces).
      expect(items[0]!.Update).toMatchObject({
        UpdateExpression: 'ADD #a2 :x2 REMOVE #a3, #a4, #a5, #a6',
        ConditionExpression: '(#cn0 = :cv0) AND (#cn1 = :cv1)',
        ExpressionAttributeNames: {
          '#cn0': 'uid',
          '#cn1': 'expiresAt',
          '#a2': 'version',
          '#a3': 'expiresAt',
          '#a4': 'ttl',
          '#a5': 'GSI3PK',
          '#a6': 'GSI3SK',
        },
        ExpressionAttributeValues: { ':cv0': { S: 'uid-1' }, ':cv1': { N: String(NOW + 60_000) }, ':x2': { N: '1' } },
      });
      for (const lease of items.slice(1)) {
        expect(lease.Update).toMatchObject({
          UpdateExpression: 'REMOVE #a1, #a2, #a3, #a4',
          ConditionExpression: '#cn0 = :cv0',
          ExpressionAttributeNames: {
            '#cn0': 'claimUid',
            '#a1': 'expiresAt',
            '#a2': 'ttl',
            '#a3': 'GSI3PK',
            '#a4': 'GSI3SK',
          },
          ExpressionAttributeValues: { ':cv0': { S: 'uid-1' } },
        });
      }
    });
  });

  describe('Method: renewClaim, cancelled', () => {
    it('answers "busy" when another transaction was writing one of its items (on any item), "changed" when the claim was renewed meanwhile', async () => {
      // Prepare: a renewal to an earlier expiry (claim, lease, freed counter); the engine cancels it three times
      const claim = claimOf(['10.0.0.10'], { expiresAt: NOW + 60_000 });
      const conflict: CancellationReason = {
        Code: 'TransactionConflict',
        Message: 'Transaction is ongoing for the item',
      };
      ddb
        .on(TransactWriteItemsCommand)
        .rejectsOnce(canceled([conflict, none, none]))
        .rejectsOnce(canceled([none, none, conflict]))
        .rejectsOnce(canceled([conditionFailed(), none, none]));
      ddb.on(GetItemCommand).resolves({
        Item: marshall(claimToItem({ ...claim, expiresAt: NOW + 90_000, version: 2 }, SHARDS), {
          removeUndefinedValues: true,
        }),
      });
      // Act
      const outcomes = [
        await store.renewClaim(claim, NOW + 30_000),
        await store.renewClaim(claim, NOW + 30_000),
        await store.renewClaim(claim, NOW + 30_000),
      ];
      // Assess
      expect(
        ddb
          .commandCalls(TransactWriteItemsCommand)[1]!
          .args[0].input.TransactItems!.map((i) => i.Update!.Key!.PK!.S!.split('#')[0]),
      ).toEqual(['CLAIM', 'LEASE', 'FREED']);
      expect(outcomes).toEqual(['busy', 'busy', 'changed']);
    });
  });

  describe('Method: releaseClaim', () => {
    it('deletes only the leases still held by this claim incarnation, each conditioned on its uid', async () => {
      // Prepare: 10.0.0.10 is still ours; fd00::10 expired and was taken by another claim meanwhile
      const claim = claimOf(['10.0.0.10', 'fd00::10']);
      const [ours] = leasesOf(claim);
      ddb.on(BatchGetItemCommand).resolves({
        Responses: {
          [TABLE]: [marshall(leaseToItem(ours!, SHARDS)), marshall(leaseToItem(heldBy('fd00::10', 'other'), SHARDS))],
        },
      });
      ddb.on(TransactWriteItemsCommand).resolves({});

      // Act
      const outcome = await store.releaseClaim(claim, 1);

      // Assess
      expect(outcome).toBe('released');
      expect(ddb.commandCalls(TransactWriteItemsCommand)[0]!.args[0].input).toEqual({
        TransactItems: [
          {
            Delete: {
              TableName: TABLE,
              Key: { PK: { S: 'CLAIM#pool-a#claim-1' }, SK: { S: 'CLAIM' } },
              // A claim that is the source of another pool's range (children) is never released.
              ConditionExpression:
                '((#cn0 = :cv0) AND (#cn1 = :cv1) AND (attribute_not_exists(#cn2))) AND (attribute_not_exists(#cn3))',
              ExpressionAttributeNames: { '#cn0': 'uid', '#cn1': 'version', '#cn2': 'pinned', '#cn3': 'children' },
              ExpressionAttributeValues: { ':cv0': { S: 'uid-1' }, ':cv1': { N: '1' } },
            },
          },
          {
            Delete: {
              TableName: TABLE,
              Key: { PK: { S: 'LEASE#pool-a#10.0.0.10' }, SK: { S: 'LEASE' } },
              ConditionExpression: '#cn0 = :cv0',
              ExpressionAttributeNames: { '#cn0': 'claimUid' },
              ExpressionAttributeValues: { ':cv0': { S: 'uid-1' } },
            },
          },
          // The range of the freed address: its freed counter moves, so a used-up seal on it no longer holds (issue 20)
          {
            Update: {
              TableName: TABLE,
              Key: { PK: { S: 'FREED#pool-a#10.0.0.0-24#70' }, SK: { S: 'FREED' } },
              UpdateExpression: 'SET #a0 = :x0, #a1 = :x1 ADD #a2 :x2',
              ExpressionAttributeNames: { '#a0': 'entity', '#a1': 'schema', '#a2': 'n' },
              ExpressionAttributeValues: { ':x0': { S: 'freed' }, ':x1': { N: '1' }, ':x2': { N: '1' } },
            },
          },
        ],
      });
    });
  });
});

describe('Function: translateError', () => {
  it.each([
    ['ProvisionedThroughputExceededException'],
    ['ThrottlingException'],
    ['RequestLimitExceeded'],
    ['LimitExceededException'],
    ['TimeoutError'],
    ['AbortError'],
    ['RequestTimeout'],
    ['RequestTimeoutException'],
  ])('turns %s into NotReadyError carrying the cause', (name) => {
    // Prepare
    const error = Object.assign(new Error('from the SDK'), { name });

    // Act
    const translated = translateError(error);

    // Assess
    expect(translated).toBeInstanceOf(NotReadyError);
    expect((translated as NotReadyError).cause).toBe(error);
  });

  it('turns TransactionConflictException on a single write into NotReadyError, so a single write a transaction held is retried (issue 20)', async () => {
    // Prepare: DynamoDB refuses a PutItem on an item a transaction is writing
    ddb
      .on(PutItemCommand)
      .rejects(
        Object.assign(new Error('Transaction is ongoing for the item'), { name: 'TransactionConflictException' }),
      );

    // Act
    const write = table.write({ kind: 'put', item: { PK: 'RECONCILER', SK: 'CHECKPOINT#expiry' } });

    // Assess
    await expect(write).rejects.toThrow(NotReadyError);
  });

  it('turns a socket ETIMEDOUT into NotReadyError', () => {
    // Prepare
    const error = Object.assign(new Error('connect ETIMEDOUT 10.0.0.1:443'), { code: 'ETIMEDOUT' });

    // Act
    const translated = translateError(error);

    // Assess
    expect(translated).toBeInstanceOf(NotReadyError);
  });

  it.each([
    [
      'an SDK error that is not about capacity',
      new InternalServerError({ message: 'Internal server error', $metadata: {} }),
    ],
    ['a plain Error', new Error('bug')],
    ['a thrown string', 'not an error'],
    ['undefined', undefined],
  ])('passes %s through unchanged', (_what, error) => {
    // Act
    const translated = translateError(error);

    // Assess
    expect(translated).toBe(error);
  });
});

describe('Function: buildContainer', () => {
  it('builds a DynamoDB client that tries each request once, so a throttle surfaces to the allocator', async () => {
    // Prepare
    const config = loadConfig({ TABLE_NAME: TABLE, LOCAL_STACK: 'true' });

    // Act
    const container = buildContainer(config);

    // Assess
    await expect((container.table as SdkTable).client.config.maxAttempts()).resolves.toBe(1);
  });
});
