import { afterEach, describe, expect, it } from 'vitest';
import { mockClient } from 'aws-sdk-client-mock';
import {
  BatchGetItemCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
} from '@aws-sdk/client-dynamodb';
import type { DynamoDBRecord } from 'aws-lambda';
import { testApi, type TestApi } from '../support/api.ts';
import { StreamReader } from '../support/stream.ts';
import { dynamoLocalWithStream } from '../support/engines.ts';
import { bitmapHolds, inWindow, leasedAddresses, mirrorOf, owner } from '../support/legacy.ts';

const DUAL_WRITE = 'MultiCIDRServiceAllocator=true,DisableAllocatorDualWrite=false';
const NO_DUAL_WRITE = 'MultiCIDRServiceAllocator=true,DisableAllocatorDualWrite=true';
const LEGACY = 'MultiCIDRServiceAllocator=false';

const readers: StreamReader[] = [];
afterEach(() => {
  for (const reader of readers.splice(0)) reader.close();
});

/** An API on a fresh table with a dual-stack pool of two legacy ranges, and a reader of the table's stream. */
async function stack(
  gates: string,
  v4 = '10.96.0.0/27',
  v6 = 'fd00:96::/123',
): Promise<{ api: TestApi; reader: StreamReader }> {
  const api = await testApi({}, { FEATURE_GATES: gates }, undefined, dynamoLocalWithStream);
  expect((await api.call('POST', '/v1/pools', { name: 'p' })).status).toBe(201);
  expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: v4, name: 'v4', legacy: true })).status).toBe(201);
  expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: v6, name: 'v6', legacy: true })).status).toBe(201);
  const reader = new StreamReader(api.endpoint, api.tableName);
  readers.push(reader);
  return { api, reader };
}

async function claim(api: TestApi, name: string, body: Record<string, unknown> = {}): Promise<string[]> {
  const res = await api.call('POST', '/v1/pools/p/claims', {
    name,
    owner: owner(name),
    ipFamilyPolicy: 'RequireDualStack',
    ...body,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return (res.body.addresses as { address: string }[]).map((a) => a.address);
}

const release = async (api: TestApi, name: string) =>
  expect((await api.call('DELETE', `/v1/pools/p/claims/${name}`)).status).toBe(204);

/** Both bitmaps equal the leases of their windows. */
async function expectMirrored(api: TestApi): Promise<void> {
  const leased = await leasedAddresses(api, 'p');
  expect((await bitmapHolds(api.container, 'p', 'v4'))?.addresses).toEqual(inWindow('10.96.0.0/27', leased));
  expect((await bitmapHolds(api.container, 'p', 'v6'))?.addresses).toEqual(inWindow('fd00:96::/123', leased));
}

const leaseRecords = (records: DynamoDBRecord[]) =>
  records.filter((r) => (r.dynamodb?.NewImage ?? r.dynamodb?.OldImage)?.entity?.S === 'lease');

describe('Function: stream mirror (real stream records from DynamoDB Local)', () => {
  it('keeps the bit of an address held after its release (reuse delay) until the held item is gone', async () => {
    // Prepare: a lease-mode fleet with dual-write on, a pool with a reuse delay
    const api = await testApi({}, { FEATURE_GATES: DUAL_WRITE }, undefined, dynamoLocalWithStream);
    expect((await api.call('POST', '/v1/pools', { name: 'p', reuseDelaySeconds: 600 })).status).toBe(201);
    expect(
      (await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.96.0.0/27', name: 'v4', legacy: true })).status,
    ).toBe(201);
    const reader = new StreamReader(api.endpoint, api.tableName);
    readers.push(reader);
    const made = await api.call('POST', '/v1/pools/p/claims', { name: 'web', owner: owner('web') });
    const [held] = (made.body.addresses as { address: string }[]).map((a) => a.address);
    await reader.drain(mirrorOf(api.container));
    // Act
    await release(api, 'web');
    const { failed } = await reader.drain(mirrorOf(api.container));
    // Assess: the Released item is a lease item still: its bit stays
    expect(failed).toEqual([]);
    expect((await bitmapHolds(api.container, 'p', 'v4'))?.addresses).toEqual([held]);
    expect((await api.call('GET', `/v1/pools/p/addresses/${held}`)).body).toMatchObject({ state: 'Released' });
  });

  it('creates the missing bitmaps of a new environment from each range own leases, in both families', async () => {
    // Prepare: a lease-mode fleet with dual-write on allocates before any bitmap exists.
    const { api, reader } = await stack(DUAL_WRITE);
    for (let i = 0; i < 4; i += 1) await claim(api, `c${i}`);
    expect(await bitmapHolds(api.container, 'p', 'v4')).toBeUndefined();
    expect(await bitmapHolds(api.container, 'p', 'v6')).toBeUndefined();
    // Act
    const { records, failed } = await reader.drain(mirrorOf(api.container));
    // Assess
    expect(leaseRecords(records)).toHaveLength(8);
    expect(failed).toEqual([]);
    const v4 = await bitmapHolds(api.container, 'p', 'v4');
    const v6 = await bitmapHolds(api.container, 'p', 'v6');
    expect(v4).toMatchObject({ range: '10.96.0.0/27', version: 1 });
    expect(v6).toMatchObject({ range: 'fd00:96::/123', version: 1 });
    expect(v6!.addresses).toHaveLength(4);
    await expectMirrored(api);
  });

  it('follows allocations and releases, and stays right under duplicated, reversed and stale redeliveries', async () => {
    // Prepare
    const { api, reader } = await stack(DUAL_WRITE);
    const mirror = mirrorOf(api.container);
    for (let i = 0; i < 6; i += 1) await claim(api, `c${i}`);
    const allocations = (await reader.drain(mirror)).records;
    await release(api, 'c1');
    await release(api, 'c4');
    await claim(api, 'c6');
    const later = (await reader.drain(mirror)).records;
    await expectMirrored(api);
    const settled = await bitmapHolds(api.container, 'p', 'v4');
    // Act: the whole history again, twice, backwards, and the stale allocation batch alone after the releases.
    const everything = [...allocations, ...later];
    expect((await mirror({ Records: [...everything, ...everything] })).batchItemFailures).toEqual([]);
    expect((await mirror({ Records: [...everything].reverse() })).batchItemFailures).toEqual([]);
    expect((await mirror({ Records: allocations })).batchItemFailures).toEqual([]);
    // Assess: every bit still equals its lease item; nothing was rewritten for nothing.
    await expectMirrored(api);
    expect((await bitmapHolds(api.container, 'p', 'v4'))!.version).toBe(settled!.version);
  });

  it('keeps the bit set when another claim takes over an expired lease (a MODIFY), and clears it on release', async () => {
    // Prepare: a clock the test moves.
    let now = Date.parse('2026-06-01T00:00:00Z');
    const api0 = await testApi(
      { clock: { nowMs: () => now } },
      { FEATURE_GATES: DUAL_WRITE },
      undefined,
      dynamoLocalWithStream,
    );
    expect((await api0.call('POST', '/v1/pools', { name: 'p' })).status).toBe(201);
    expect(
      (await api0.call('POST', '/v1/pools/p/ranges', { cidr: '10.96.0.0/27', name: 'v4', legacy: true })).status,
    ).toBe(201);
    const reader = new StreamReader(api0.endpoint, api0.tableName);
    readers.push(reader);
    const mirror = mirrorOf(api0.container);
    const [address] = await claim(api0, 'old', {
      ipFamilyPolicy: 'SingleStack',
      addresses: ['10.96.0.9'],
      ttlSeconds: 60,
    });
    await reader.drain(mirror);
    now += 120_000;
    // Act
    await claim(api0, 'new', { ipFamilyPolicy: 'SingleStack', addresses: [address] });
    const takeover = leaseRecords((await reader.drain(mirror)).records);
    // Assess
    expect(takeover.map((r) => r.eventName)).toEqual(['MODIFY']);
    expect((await bitmapHolds(api0.container, 'p', 'v4'))!.addresses).toEqual(['10.96.0.9']);
    await release(api0, 'new');
    await reader.drain(mirror);
    expect((await bitmapHolds(api0.container, 'p', 'v4'))!.addresses).toEqual([]);
  });

  it('reports only the failed bitmap records when one write is throttled, and the redelivery heals it', async () => {
    // Prepare: the mirror's client throttles every write of the IPv6 bitmap and passes everything else through.
    const { api, reader } = await stack(DUAL_WRITE);
    for (let i = 0; i < 3; i += 1) await claim(api, `c${i}`);
    const records = leaseRecords(await reader.read());
    const real = new DynamoDBClient({
      endpoint: api.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const flaky = new DynamoDBClient({
      endpoint: api.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const mock = mockClient(flaky);
    mock.on(GetItemCommand).callsFake((input) => real.send(new GetItemCommand(input)));
    mock.on(BatchGetItemCommand).callsFake((input) => real.send(new BatchGetItemCommand(input)));
    mock.on(QueryCommand).callsFake((input) => real.send(new QueryCommand(input)));
    mock.on(PutItemCommand).callsFake((input) => {
      if (input.Item?.PK?.S === 'BITMAP#p#v6')
        throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), {
          name: 'ThrottlingException',
        });
      return real.send(new PutItemCommand(input));
    });
    const logged: Record<string, unknown>[] = [];
    const flakyMirror = mirrorOf(api.sibling({ client: flaky }).container, logged);
    // Act
    const answer = await flakyMirror({ Records: records });
    // Assess: exactly the IPv6 lease records come back; the IPv4 bitmap was written.
    const v6Records = records
      .filter((r) => r.dynamodb!.NewImage!.family!.S === 'IPv6')
      .map((r) => r.dynamodb!.SequenceNumber);
    expect(answer.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(v6Records.sort());
    expect(logged).toEqual([expect.objectContaining({ range: 'v6', records: 3, error: 'NotReadyError' })]);
    expect((await bitmapHolds(api.container, 'p', 'v4'))!.addresses).toHaveLength(3);
    expect(await bitmapHolds(api.container, 'p', 'v6')).toBeUndefined();
    // Act: Lambda retries from the lowest failed record, which replays IPv4 records after it too.
    const first = records.findIndex((r) => v6Records.includes(r.dynamodb!.SequenceNumber));
    const retry = await mirrorOf(api.container)({ Records: records.slice(first) });
    // Assess
    expect(retry.batchItemFailures).toEqual([]);
    await expectMirrored(api);
    real.destroy();
    mock.restore();
  });

  it('does nothing once dual-write is off: no bitmap is created or changed', async () => {
    // Prepare
    const { api, reader } = await stack(NO_DUAL_WRITE);
    for (let i = 0; i < 3; i += 1) await claim(api, `c${i}`);
    // Act
    const { records, failed } = await reader.drain(mirrorOf(api.container));
    // Assess
    expect(leaseRecords(records)).toHaveLength(6);
    expect(failed).toEqual([]);
    expect(await bitmapHolds(api.container, 'p', 'v4')).toBeUndefined();
    expect(await bitmapHolds(api.container, 'p', 'v6')).toBeUndefined();
  });

  it('in legacy mode finds the bitmaps already right (allocations and releases wrote them) and leaves them be', async () => {
    // Prepare
    const { api, reader } = await stack(LEGACY);
    for (let i = 0; i < 4; i += 1) await claim(api, `c${i}`);
    await release(api, 'c2');
    await expectMirrored(api);
    const before = await bitmapHolds(api.container, 'p', 'v4');
    // Act
    const { failed } = await reader.drain(mirrorOf(api.container));
    // Assess
    expect(failed).toEqual([]);
    expect(await bitmapHolds(api.container, 'p', 'v4')).toEqual(before);
    await expectMirrored(api);
  });
});

describe('Window of a /108 legacy range', () => {
  it('keeps every dynamic pick inside the 65,535-address bitmap while dual-write is on, and the mirror covers them all', async () => {
    // Prepare
    const { api, reader } = await stack(DUAL_WRITE, '10.96.0.0/27', 'fd00:108::/108');
    // Act: 1 in 16 of the /108's hosts lie in the window; 40 picks outside the window would all but surely show.
    const picked: string[] = [];
    for (let i = 0; i < 40; i += 1)
      picked.push(...(await claim(api, `c${i}`, { ipFamilyPolicy: 'SingleStack', ipFamilies: ['IPv6'] })));
    await reader.drain(mirrorOf(api.container));
    // Assess
    expect(inWindow('fd00:108::/108', picked)).toEqual([...picked].sort());
    expect((await bitmapHolds(api.container, 'p', 'v6'))!.addresses).toEqual([...picked].sort());
  });

  it('lets dynamic picks use the whole /108 once dual-write is off (no bitmap to stay inside)', async () => {
    // Prepare
    const { api } = await stack(NO_DUAL_WRITE, '10.96.0.0/27', 'fd00:108::/108');
    // Act
    const picked: string[] = [];
    for (let i = 0; i < 40; i += 1)
      picked.push(...(await claim(api, `c${i}`, { ipFamilyPolicy: 'SingleStack', ipFamilies: ['IPv6'] })));
    // Assess: (1/16)^40 is the chance that all 40 land in the window by luck.
    expect(inWindow('fd00:108::/108', picked).length).toBeLessThan(picked.length);
  });
});
