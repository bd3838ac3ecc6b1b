import { describe, expect, it } from 'vitest';
import { mockClient } from 'aws-sdk-client-mock';
import { DynamoDBClient, TransactWriteItemsCommand, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { SdkTable } from '../../shared/adapters/dynamodb/sdk-table.ts';
import { tableStores } from '../../shared/adapters/dynamodb/stores.ts';
import { NotReadyError } from '../../shared/core/errors.ts';
import type { Claim, Lease } from '../../shared/core/model.ts';

const owner = { kind: 'Pod', name: 'web', uid: 'o1' };
const claim: Claim = {
  pool: 'p',
  name: 'web',
  uid: 'c-uid',
  version: 1,
  createdAt: '2026-01-01T00:00:00.000Z',
  spec: { owner, ipFamilyPolicy: 'SingleStack', ipFamilies: [], addresses: [] },
  addresses: [{ address: '10.0.0.1', family: 'IPv4', range: 'v4' }],
};
const lease: Lease = {
  pool: 'p',
  address: '10.0.0.1',
  family: 'IPv4',
  range: 'v4',
  claim: 'web',
  claimUid: 'c-uid',
  owner,
  createdAt: claim.createdAt,
};
const bitmap = (expected: { version: number } | 'absent') => ({
  pool: 'p',
  rangeName: 'v4',
  allocation: {
    range: '10.0.0.0/24',
    data: Uint8Array.of(1),
    version: expected === 'absent' ? 1 : expected.version + 1,
  },
  expected,
});

function setup() {
  const client = new DynamoDBClient({ region: 'us-east-1', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } });
  const mock = mockClient(client);
  return { mock, store: tableStores(new SdkTable(client, 't'), { shards: 2, cursorSecret: 'unit' }).bitmaps };
}

const cancelled = (codes: { Code: string; Item?: Record<string, unknown> }[]) =>
  new TransactionCanceledException({
    message: 'cancelled',
    $metadata: {},
    CancellationReasons: codes.map((c) => ({ Code: c.Code, ...(c.Item ? { Item: marshall(c.Item) } : {}) })),
  });

describe('Class: TableBitmapStore on the SDK engine', () => {
  describe('Method: commitClaim', () => {
    it('writes claim, leases and bitmap in one transaction, in that order, each under its own condition', async () => {
      // Prepare
      const { mock, store } = setup();
      mock.on(TransactWriteItemsCommand).resolves({});
      // Act
      const outcome = await store.commitClaim(claim, [lease], [bitmap({ version: 7 })], 1000);
      // Assess
      expect(outcome).toEqual({ kind: 'committed' });
      const items = mock.commandCalls(TransactWriteItemsCommand)[0]!.args[0].input.TransactItems!;
      expect(items.map((i) => i.Put!.Item!.PK!.S)).toEqual(['CLAIM#p#web', 'LEASE#p#10.0.0.1', 'BITMAP#p#v4']);
      expect(items[0]!.Put!.ConditionExpression).toBe('(attribute_not_exists(#cn0)) OR (#cn1 <= :cv0)');
      expect(items[1]!.Put!.ConditionExpression).toBe(
        '(attribute_not_exists(#cn0)) OR (#cn1 <= :cv0) OR ((#cn2 = :cv1) AND (#cn3 = :cv2) AND (#cn4 = :cv3) AND (attribute_not_exists(#cn5)))',
      );
      expect(items[2]!.Put).toMatchObject({
        ConditionExpression: '(attribute_exists(#cn0)) AND (#cn1 = :cv0)',
        ExpressionAttributeValues: { ':cv0': { N: '7' } },
        Item: {
          entity: { S: 'bitmap' },
          range: { S: '10.0.0.0/24' },
          data: { B: Uint8Array.of(1) },
          version: { N: '8' },
        },
      });
      // The old bitmap (up to 128 KiB) is never asked back on a failed condition.
      expect(items[2]!.Put!.ReturnValuesOnConditionCheckFailure).toBeUndefined();
    });

    it('creates a missing bitmap only if it is still absent', async () => {
      // Prepare
      const { mock, store } = setup();
      mock.on(TransactWriteItemsCommand).resolves({});
      // Act
      await store.commitClaim(claim, [lease], [bitmap('absent')], 1000);
      // Assess
      expect(
        mock.commandCalls(TransactWriteItemsCommand)[0]!.args[0].input.TransactItems![2]!.Put!.ConditionExpression,
      ).toBe('attribute_not_exists(#cn0)');
    });

    it('reads a failed bitmap condition as bitmapsChanged, and a failed lease as addressesTaken with the holder', async () => {
      // Prepare
      const { mock, store } = setup();
      mock
        .on(TransactWriteItemsCommand)
        .rejectsOnce(cancelled([{ Code: 'None' }, { Code: 'None' }, { Code: 'ConditionalCheckFailed' }]))
        .rejectsOnce(
          cancelled([
            { Code: 'None' },
            {
              Code: 'ConditionalCheckFailed',
              Item: { pool: 'p', address: '10.0.0.1', claim: 'other', claimUid: 'u2', ownerUid: 'o2' },
            },
            { Code: 'None' },
          ]),
        );
      // Act, Assess
      expect(await store.commitClaim(claim, [lease], [bitmap({ version: 7 })], 1000)).toEqual({
        kind: 'bitmapsChanged',
        ranges: ['v4'],
      });
      expect(await store.commitClaim(claim, [lease], [bitmap({ version: 7 })], 1000)).toMatchObject({
        kind: 'addressesTaken',
        taken: [{ address: '10.0.0.1', holder: { claim: 'other' } }],
      });
    });

    it('throws NotReadyError when the transaction was throttled', async () => {
      // Prepare
      const { mock, store } = setup();
      mock
        .on(TransactWriteItemsCommand)
        .rejects(cancelled([{ Code: 'None' }, { Code: 'ThrottlingError' }, { Code: 'None' }]));
      // Act, Assess
      await expect(store.commitClaim(claim, [lease], [bitmap({ version: 7 })], 1000)).rejects.toThrow(NotReadyError);
    });
  });
});
