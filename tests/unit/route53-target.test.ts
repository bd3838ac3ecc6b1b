/**
 * The Route 53 target through its SDK calls. No Route 53 emulator installs from the registries this project reaches
 * (npm, Debian), so the client is aws-sdk-client-mock's, answering with Route 53's own error shapes: the `Throttling`
 * code ("Rate exceeded"), ThrottlingException, PriorRequestNotComplete, and InvalidChangeBatch with its messages.
 */
import {
  ChangeResourceRecordSetsCommand,
  InvalidChangeBatch,
  ListResourceRecordSetsCommand,
  PriorRequestNotComplete,
  Route53Client,
  Route53ServiceException,
  ThrottlingException,
  type Change,
  type ResourceRecordSet,
} from '@aws-sdk/client-route-53';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { dnsTargets } from '../../shared/adapters/dns/targets.ts';
import {
  RequestPace,
  ROUTE53_LIMITS,
  Route53Target,
  type Route53Time,
} from '../../shared/adapters/dns/route53-target.ts';
import { ownerText, type NameChange, type RecordSet } from '../../shared/core/dns/records.ts';

const route53 = mockClient(Route53Client);
const ZONE = 'pods.example.internal.';
const REVERSE = '0.0.10.in-addr.arpa.';
const HOSTED = { hostedZoneId: 'ZFORWARD', reverseZoneIds: { [REVERSE]: 'ZREVERSE' } };

/** Time that passes only when the adapter sleeps: each sleep and each request's time is recorded. */
function fakeTime(randoms: number[] = []) {
  const t = { now: 0, sleeps: [] as number[] };
  return {
    t,
    time: {
      nowMs: () => t.now,
      sleep: async (ms: number) => {
        t.sleeps.push(ms);
        t.now += ms;
      },
      random: () => randoms.shift() ?? 0.5,
    },
  };
}

const unpaced = (time: Route53Time) => new RequestPace(time, Infinity);

const txt = (claim: string): RecordSet => ({
  name: `${claim}.${ZONE}`,
  type: 'TXT',
  ttl: 60,
  values: [ownerText({ pool: 'pods', claim, uid: `uid-${claim}-0000-0000-0000-000000000000` })],
});
const a = (claim: string, ...values: string[]): RecordSet => ({ name: `${claim}.${ZONE}`, type: 'A', ttl: 60, values });
const create = (claim: string, address = '10.0.0.7'): NameChange => ({
  zone: ZONE,
  name: `${claim}.${ZONE}`,
  before: [],
  after: [a(claim, address), txt(claim)],
});
const move = (claim: string, from: string, to: string): NameChange => ({
  zone: ZONE,
  name: `${claim}.${ZONE}`,
  before: [a(claim, from), txt(claim)],
  after: [a(claim, to), txt(claim)],
});

const sentChanges = (): Change[][] =>
  route53.commandCalls(ChangeResourceRecordSetsCommand).map((c) => c.args[0].input.ChangeBatch!.Changes!);
const sentNames = (): string[][] =>
  sentChanges().map((changes) => [...new Set(changes.map((c) => c.ResourceRecordSet!.Name!))]);
const throttled = () =>
  new Route53ServiceException({
    name: 'Throttling',
    $fault: 'client',
    message: 'Rate exceeded',
    $metadata: { httpStatusCode: 400 },
  });
const invalidBatch = (...messages: string[]) =>
  new InvalidChangeBatch({ message: messages.join(', '), messages, $metadata: { httpStatusCode: 400 } });
const applied = { ChangeInfo: { Id: '/change/C1', Status: 'PENDING' as const, SubmittedAt: new Date(0) } };

beforeEach(() => route53.reset());

describe('Class: Route53Target', () => {
  describe('Method: read', () => {
    it("lists from each name and answers only that name's sets, TXT unquoted, names lower-case", async () => {
      // Prepare
      const owner = ownerText({ pool: 'pods', claim: 'web-0', uid: 'u1' });
      route53.on(ListResourceRecordSetsCommand).resolves({
        ResourceRecordSets: [
          { Name: 'Web-0.pods.example.internal.', Type: 'A', TTL: 60, ResourceRecords: [{ Value: '10.0.0.7' }] },
          { Name: 'web-0.pods.example.internal.', Type: 'TXT', TTL: 60, ResourceRecords: [{ Value: `"${owner}"` }] },
          { Name: 'web-1.pods.example.internal.', Type: 'A', TTL: 60, ResourceRecords: [{ Value: '10.0.0.8' }] },
        ],
        IsTruncated: true,
        MaxItems: 100,
        NextRecordName: 'web-2.pods.example.internal.',
        NextRecordType: 'A',
      });
      const target = new Route53Target({ client: new Route53Client({}), ...HOSTED, time: fakeTime().time });
      // Act
      const read = await target.read(ZONE, [`web-0.${ZONE}`]);
      // Assess
      expect(read.get(`web-0.${ZONE}`)).toEqual([
        { name: `web-0.${ZONE}`, type: 'A', ttl: 60, values: ['10.0.0.7'] },
        { name: `web-0.${ZONE}`, type: 'TXT', ttl: 60, values: [owner] },
      ]);
      expect(route53.commandCalls(ListResourceRecordSetsCommand).map((c) => c.args[0].input)).toEqual([
        { HostedZoneId: 'ZFORWARD', StartRecordName: `web-0.${ZONE}`, MaxItems: 100 },
      ]);
    });

    it('refuses a reverse zone the target has no hosted zone id for', async () => {
      const target = new Route53Target({ client: new Route53Client({}), ...HOSTED, time: fakeTime().time });
      await expect(target.read('1.10.in-addr.arpa.', ['7.0.1.10.in-addr.arpa.'])).rejects.toThrow(
        /no hosted zone id for 1\.10\.in-addr\.arpa\./,
      );
    });
  });

  describe('Method: change', () => {
    it("writes a change as exact DELETEs of what was read and CREATEs of the new sets, TXT quoted, in the name's zone", async () => {
      // Prepare
      route53.on(ChangeResourceRecordSetsCommand).resolves(applied);
      const target = new Route53Target({ client: new Route53Client({}), ...HOSTED, time: fakeTime().time });
      const ptr: NameChange = {
        zone: REVERSE,
        name: `7.0.0.10.in-addr.arpa.`,
        before: [],
        after: [{ name: '7.0.0.10.in-addr.arpa.', type: 'PTR', ttl: 60, values: [`web-0.${ZONE}`] }],
      };
      // Act
      const forward = await target.change(ZONE, [move('web-0', '10.0.0.7', '10.0.0.8')]);
      const reverse = await target.change(REVERSE, [ptr]);
      // Assess
      expect([...forward, ...reverse]).toEqual([{ kind: 'applied' }, { kind: 'applied' }]);
      const calls = route53.commandCalls(ChangeResourceRecordSetsCommand).map((c) => c.args[0].input);
      expect(calls.map((c) => c.HostedZoneId)).toEqual(['ZFORWARD', 'ZREVERSE']);
      const quoted = `"${txt('web-0').values[0]}"`;
      expect(calls[0]!.ChangeBatch!.Changes).toEqual([
        {
          Action: 'DELETE',
          ResourceRecordSet: { Name: `web-0.${ZONE}`, Type: 'A', TTL: 60, ResourceRecords: [{ Value: '10.0.0.7' }] },
        },
        {
          Action: 'DELETE',
          ResourceRecordSet: { Name: `web-0.${ZONE}`, Type: 'TXT', TTL: 60, ResourceRecords: [{ Value: quoted }] },
        },
        {
          Action: 'CREATE',
          ResourceRecordSet: { Name: `web-0.${ZONE}`, Type: 'A', TTL: 60, ResourceRecords: [{ Value: '10.0.0.8' }] },
        },
        {
          Action: 'CREATE',
          ResourceRecordSet: { Name: `web-0.${ZONE}`, Type: 'TXT', TTL: 60, ResourceRecords: [{ Value: quoted }] },
        },
      ]);
      expect(calls[1]!.ChangeBatch!.Changes).toEqual([
        {
          Action: 'CREATE',
          ResourceRecordSet: {
            Name: '7.0.0.10.in-addr.arpa.',
            Type: 'PTR',
            TTL: 60,
            ResourceRecords: [{ Value: `web-0.${ZONE}` }],
          },
        },
      ]);
    });

    it.each([
      [
        'already exists',
        "Tried to create resource record set [name='web-0.pods.example.internal.', type='A'] but it already exists",
      ],
      [
        'not found',
        "Tried to delete resource record set [name='web-0.pods.example.internal.', type='A'] but it was not found",
      ],
      [
        'values differ',
        "Tried to delete resource record set [name='web-0.pods.example.internal.', type='TXT'] but the values provided do not match the current values",
      ],
    ])('answers stale when the name moved since it was read (InvalidChangeBatch: %s)', async (_, message) => {
      // Prepare
      route53.on(ChangeResourceRecordSetsCommand).rejects(invalidBatch(message));
      const target = new Route53Target({ client: new Route53Client({}), ...HOSTED, time: fakeTime().time });
      // Act
      const outcomes = await target.change(ZONE, [move('web-0', '10.0.0.7', '10.0.0.8')]);
      // Assess
      expect(outcomes).toEqual([{ kind: 'stale' }]);
      expect(sentChanges()).toHaveLength(1);
    });

    it('answers stale only for the names a refused batch names, and sends the others again without them', async () => {
      // Prepare: one batch of three names; Route 53 refuses it whole for web-1's record
      route53
        .on(ChangeResourceRecordSetsCommand)
        .rejectsOnce(
          invalidBatch(
            "Tried to create resource record set [name='web-1.pods.example.internal.', type='TXT'] but it already exists",
          ),
        )
        .resolves(applied);
      const target = new Route53Target({ client: new Route53Client({}), ...HOSTED, time: fakeTime().time });
      // Act
      const outcomes = await target.change(ZONE, [create('web-0'), create('web-1'), create('web-2')]);
      // Assess
      expect(outcomes).toEqual([{ kind: 'applied' }, { kind: 'stale' }, { kind: 'applied' }]);
      expect(sentNames()).toEqual([
        [`web-0.${ZONE}`, `web-1.${ZONE}`, `web-2.${ZONE}`],
        [`web-0.${ZONE}`, `web-2.${ZONE}`],
      ]);
    });

    it("a refused batch whose messages name no change's name is tried one change at a time", async () => {
      // Prepare
      route53
        .on(ChangeResourceRecordSetsCommand)
        .rejectsOnce(invalidBatch('RRSet of type A with DNS name x. is not permitted in zone pods.example.internal.'))
        .resolves(applied);
      const target = new Route53Target({ client: new Route53Client({}), ...HOSTED, time: fakeTime().time });
      // Act
      const outcomes = await target.change(ZONE, [create('web-0'), create('web-1')]);
      // Assess
      expect(outcomes).toEqual([{ kind: 'applied' }, { kind: 'applied' }]);
      expect(sentNames()).toEqual([[`web-0.${ZONE}`, `web-1.${ZONE}`], [`web-0.${ZONE}`], [`web-1.${ZONE}`]]);
    });

    it("batches the widest stream batch's changes within Route 53's limits a request, paced, each change sent once", async () => {
      // Prepare: a stream batch of 1,000 lease changes touches up to 3,000 names (the claim's name before and after,
      // and the PTR); here all 3,000 in one zone, with the longest owner texts (63-character claim names)
      route53.on(ChangeResourceRecordSetsCommand).resolves(applied);
      const { t, time } = fakeTime();
      const sentAt: number[] = [];
      route53.on(ChangeResourceRecordSetsCommand).callsFake(() => {
        sentAt.push(t.now);
        return applied;
      });
      const target = new Route53Target({ client: new Route53Client({}), ...HOSTED, time });
      const label = (i: number) => `${'w'.repeat(58)}${String(i).padStart(5, '0')}`;
      const changes = Array.from({ length: 3_000 }, (_, i) =>
        i % 3 === 0
          ? create(label(i), `10.0.${i >> 8}.${i & 255}`)
          : i % 3 === 1
            ? move(label(i), '10.0.0.1', `10.0.${i >> 8}.${i & 255}`)
            : { ...move(label(i), '10.0.0.1', '10.0.0.2'), after: [] },
      );
      // Act
      const outcomes = await target.change(ZONE, changes);
      // Assess
      expect(outcomes.every((o) => o.kind === 'applied')).toBe(true);
      const requests = sentChanges();
      for (const changeList of requests) {
        const weight = (c: Change) => (c.Action === 'UPSERT' ? 2 : 1);
        const records = changeList.reduce((n, c) => n + weight(c) * c.ResourceRecordSet!.ResourceRecords!.length, 0);
        const chars = changeList.reduce(
          (n, c) => n + weight(c) * c.ResourceRecordSet!.ResourceRecords!.reduce((m, r) => m + r.Value!.length, 0),
          0,
        );
        expect(records).toBeLessThanOrEqual(ROUTE53_LIMITS.recordsPerRequest);
        expect(chars).toBeLessThanOrEqual(ROUTE53_LIMITS.valueCharactersPerRequest);
      }
      // Every change once, whole in one request; no request much emptier than the limits allow
      const names = requests.flatMap((r) => [...new Set(r.map((c) => c.ResourceRecordSet!.Name!))]);
      expect(names).toHaveLength(3_000);
      expect(new Set(names).size).toBe(3_000);
      const totalChars = requests
        .flat()
        .reduce((n, c) => n + c.ResourceRecordSet!.ResourceRecords![0]!.Value!.length, 0);
      expect(requests.length).toBeLessThanOrEqual(Math.ceil(totalChars / ROUTE53_LIMITS.valueCharactersPerRequest) + 1);
      // At most `requestsPerSecond` a second (5), through the injected clock
      for (let i = 1; i < sentAt.length; i++) expect(sentAt[i]! - sentAt[i - 1]!).toBeGreaterThanOrEqual(200);
    });

    it('retries Throttling, ThrottlingException and PriorRequestNotComplete with growing jittered back-off, and keeps a name in order', async () => {
      // Prepare: web-0 is created, then moved (two changes of one name); its first request is refused three times
      route53
        .on(ChangeResourceRecordSetsCommand)
        .rejectsOnce(throttled())
        .rejectsOnce(new ThrottlingException({ message: 'Rate exceeded', $metadata: { httpStatusCode: 400 } }))
        .rejectsOnce(
          new PriorRequestNotComplete({
            message: 'The request was rejected because Route 53 was still processing a prior request.',
            $metadata: { httpStatusCode: 400 },
          }),
        )
        .resolves(applied);
      const { t, time } = fakeTime([1, 1, 1, 1]);
      // Unpaced, so every sleep is a back-off
      const target = new Route53Target({ client: new Route53Client({}), ...HOSTED, time, pace: unpaced(time) });
      // Act
      const outcomes = await target.change(ZONE, [
        create('web-0', '10.0.0.7'),
        create('web-1'),
        move('web-0', '10.0.0.7', '10.0.0.8'),
      ]);
      // Assess
      expect(outcomes).toEqual([{ kind: 'applied' }, { kind: 'applied' }, { kind: 'applied' }]);
      const requests = sentChanges();
      // The same request four times, then web-0's second change alone, after its first was applied
      expect(sentNames()).toEqual([
        [`web-0.${ZONE}`, `web-1.${ZONE}`],
        [`web-0.${ZONE}`, `web-1.${ZONE}`],
        [`web-0.${ZONE}`, `web-1.${ZONE}`],
        [`web-0.${ZONE}`, `web-1.${ZONE}`],
        [`web-0.${ZONE}`],
      ]);
      expect(requests[4]!.map((c) => [c.Action, c.ResourceRecordSet!.Type])).toEqual([
        ['DELETE', 'A'],
        ['DELETE', 'TXT'],
        ['CREATE', 'A'],
        ['CREATE', 'TXT'],
      ]);
      // Back-off: each wait longer than the last (full jitter at random() = 1: the cap of each attempt)
      const backoffs = t.sleeps.slice(0, 3);
      expect(backoffs[0]!).toBeGreaterThan(0);
      expect(backoffs[1]!).toBeGreaterThan(backoffs[0]!);
      expect(backoffs[2]!).toBeGreaterThan(backoffs[1]!);
    });

    it('draws each back-off from the jitter source (full jitter: 0 to the cap)', async () => {
      // Prepare
      route53.on(ChangeResourceRecordSetsCommand).rejectsOnce(throttled()).rejectsOnce(throttled()).resolves(applied);
      const { t, time } = fakeTime([0.25, 0.75]);
      const target = new Route53Target({ client: new Route53Client({}), ...HOSTED, time, pace: unpaced(time) });
      // Act
      await target.change(ZONE, [create('web-0')]);
      // Assess: cap 100 ms then 200 ms
      expect(t.sleeps).toEqual([25, 150]);
    });

    it("leaves a name's later change unsent when its earlier change's batch fails, and reports both failed", async () => {
      // Prepare: the first request is refused for good (throttled past every attempt)
      route53.on(ChangeResourceRecordSetsCommand).rejects(throttled());
      const target = new Route53Target({
        client: new Route53Client({}),
        ...HOSTED,
        time: fakeTime().time,
        maxAttempts: 3,
      });
      // Act
      const outcomes = await target.change(ZONE, [
        create('web-0'),
        create('web-1'),
        move('web-0', '10.0.0.7', '10.0.0.8'),
      ]);
      // Assess: three tries of the first request, and web-0's move never sent
      expect(outcomes.map((o) => o.kind)).toEqual(['failed', 'failed', 'failed']);
      expect(sentNames()).toEqual([
        [`web-0.${ZONE}`, `web-1.${ZONE}`],
        [`web-0.${ZONE}`, `web-1.${ZONE}`],
        [`web-0.${ZONE}`, `web-1.${ZONE}`],
      ]);
      expect(String((outcomes[2] as { error: Error }).error.message)).toMatch(/earlier change of web-0/);
    });

    it("leaves a name's later change unsent when its earlier change is stale", async () => {
      // Prepare
      route53
        .on(ChangeResourceRecordSetsCommand)
        .rejectsOnce(
          invalidBatch(
            "Tried to create resource record set [name='web-0.pods.example.internal.', type='A'] but it already exists",
          ),
        )
        .resolves(applied);
      const target = new Route53Target({ client: new Route53Client({}), ...HOSTED, time: fakeTime().time });
      // Act
      const outcomes = await target.change(ZONE, [create('web-0'), move('web-0', '10.0.0.7', '10.0.0.8')]);
      // Assess
      expect(outcomes.map((o) => o.kind)).toEqual(['stale', 'stale']);
      expect(sentNames()).toEqual([[`web-0.${ZONE}`]]);
    });
  });

  describe('Method: list', () => {
    it("reads every page of the zone, continuing from each page's next record", async () => {
      // Prepare
      const set = (name: string, type: string, value: string): ResourceRecordSet => ({
        Name: name,
        Type: type as ResourceRecordSet['Type'],
        TTL: 60,
        ResourceRecords: [{ Value: value }],
      });
      route53
        .on(ListResourceRecordSetsCommand)
        .resolvesOnce({
          ResourceRecordSets: [set(ZONE, 'SOA', 'ns. admin. 1 7200 900 1209600 86400')],
          IsTruncated: true,
          MaxItems: 300,
          NextRecordName: `web-0.${ZONE}`,
          NextRecordType: 'A',
        })
        .resolvesOnce({
          ResourceRecordSets: [set(`web-0.${ZONE}`, 'A', '10.0.0.7')],
          IsTruncated: true,
          MaxItems: 300,
          NextRecordName: `web-0.${ZONE}`,
          NextRecordType: 'TXT',
          NextRecordIdentifier: 'weighted-1',
        })
        .resolvesOnce({
          ResourceRecordSets: [set(`web-0.${ZONE}`, 'TXT', '"hand made"')],
          IsTruncated: false,
          MaxItems: 300,
        });
      const target = new Route53Target({ client: new Route53Client({}), ...HOSTED, time: fakeTime().time });
      // Act
      const sets = await target.list(ZONE);
      // Assess
      expect(sets.map((s) => [s.name, s.type, s.values])).toEqual([
        [ZONE, 'SOA', ['ns. admin. 1 7200 900 1209600 86400']],
        [`web-0.${ZONE}`, 'A', ['10.0.0.7']],
        [`web-0.${ZONE}`, 'TXT', ['hand made']],
      ]);
      expect(route53.commandCalls(ListResourceRecordSetsCommand).map((c) => c.args[0].input)).toEqual([
        { HostedZoneId: 'ZFORWARD', MaxItems: 300 },
        { HostedZoneId: 'ZFORWARD', MaxItems: 300, StartRecordName: `web-0.${ZONE}`, StartRecordType: 'A' },
        {
          HostedZoneId: 'ZFORWARD',
          MaxItems: 300,
          StartRecordName: `web-0.${ZONE}`,
          StartRecordType: 'TXT',
          StartRecordIdentifier: 'weighted-1',
        },
      ]);
    });

    it('retries a throttled page', async () => {
      // Prepare
      route53
        .on(ListResourceRecordSetsCommand)
        .rejectsOnce(throttled())
        .resolves({ ResourceRecordSets: [], IsTruncated: false, MaxItems: 300 });
      const target = new Route53Target({ client: new Route53Client({}), ...HOSTED, time: fakeTime().time });
      // Act
      const sets = await target.list(ZONE);
      // Assess
      expect(sets).toEqual([]);
      expect(route53.commandCalls(ListResourceRecordSetsCommand)).toHaveLength(2);
    });
  });
});

describe('Function: dnsTargets (route53)', () => {
  it("makes a Route 53 target for a pool's route53 spec, reading its forward and reverse hosted zones", async () => {
    // Prepare
    route53.on(ListResourceRecordSetsCommand).resolves({ ResourceRecordSets: [], IsTruncated: false, MaxItems: 100 });
    const target = dnsTargets()({
      kind: 'route53',
      hostedZoneId: 'ZFORWARD',
      reverseZoneIds: { [REVERSE]: 'ZREVERSE' },
    });
    // Act
    await target.read(ZONE, [`web-0.${ZONE}`]);
    await target.read(REVERSE, ['7.0.0.10.in-addr.arpa.']);
    // Assess
    expect(route53.commandCalls(ListResourceRecordSetsCommand).map((c) => c.args[0].input.HostedZoneId)).toEqual([
      'ZFORWARD',
      'ZREVERSE',
    ]);
  });
});
