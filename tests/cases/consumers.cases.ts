import { afterEach, describe, expect, it } from 'vitest';
import { testApi, type TestApi } from '../support/api.ts';
import { allItems, tableSnapshot } from '../support/items.ts';
import { mirrorOf } from '../support/legacy.ts';
import type { LeaseStream, StreamEngine } from '../support/lease-stream.ts';
import type { TestEngine } from '../support/engines.ts';
import { dynamoItemBytes } from '../support/item-size.ts';
import { reconcilerHarness, T0 } from '../support/reconciler.ts';
import { events } from '../../shared/core/events.ts';
import { PassThroughTable } from '../support/pass-through-table.ts';
import { claimToItem, itemToClaim } from '../../shared/adapters/dynamodb/codec.ts';
import { consumerIndexItem } from '../../shared/adapters/dynamodb/writes/consumers.ts';
import type { TxVerdict, WriteOp } from '../../shared/adapters/dynamodb/table.ts';
import type { Table } from '../../shared/adapters/dynamodb/table.ts';
import type { Item } from '../../shared/adapters/dynamodb/codec.ts';
import { keys, type Key } from '../../shared/adapters/dynamodb/keys.ts';

/**
 * Issue 38: a claim's consumers (the DRA claim's `reservedFor`) through the real HTTP handler, on one table engine:
 * concurrent adds recorded once each, release with the last consumer (seen through the address route and the address
 * history, fed the table's own stream), the owner release of a uid that consumes several claims, the limits.
 */
export function consumersCases(engine: TestEngine, streams: StreamEngine): void {
  const owner = (name: string) => ({ kind: 'Pod', name, uid: `uid-${name}` });
  const consumer = (i: number | string) => ({ kind: 'Pod', name: `pod-${i}`, uid: `c-${i}` });
  const opened: LeaseStream[] = [];
  afterEach(() => {
    for (const s of opened.splice(0)) s.close();
  });

  /** A pool `p` on the engine; `streamed`: on the stream engine, whose stream feeds the address history. */
  async function stack(
    cidrs: string[] = ['10.9.0.0/24'],
    poolBody: Record<string, unknown> = {},
    streamed = false,
  ): Promise<TestApi> {
    const api = await testApi({}, {}, undefined, streamed ? streams.engine : engine);
    if (streamed) opened.push(streams.stream());
    expect((await api.call('POST', '/v1/pools', { name: 'p', ...poolBody })).status).toBe(201);
    for (const cidr of cidrs) expect((await api.call('POST', '/v1/pools/p/ranges', { cidr })).status).toBe(201);
    return api;
  }

  async function claim(api: TestApi, name: string, body: Record<string, unknown> = {}): Promise<string> {
    const res = await api.call('POST', '/v1/pools/p/claims', { name, owner: owner(name), ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return (res.body.addresses as { address: string }[])[0]!.address;
  }

  const add = (api: TestApi, name: string, c: { kind: string; name: string; uid: string }) =>
    api.call('POST', `/v1/pools/p/claims/${name}/consumers`, c);
  const remove = (api: TestApi, name: string, uid: string) =>
    api.call('DELETE', `/v1/pools/p/claims/${name}/consumers/${encodeURIComponent(uid)}`);
  const consumerUids = async (api: TestApi, name: string) =>
    ((await api.call('GET', `/v1/pools/p/claims/${name}`)).body.consumers as { uid: string }[] | undefined)?.map(
      (c) => c.uid,
    ) ?? [];
  const indexItems = async (api: TestApi) =>
    (await allItems(api.container.table)).filter((i) => i.entity === 'consumer');

  describe(`Claim consumers (${engine.name})`, () => {
    it('records 50 consumers added concurrently through 4 containers, each exactly once, with one index item each', async () => {
      // Prepare
      const api = await stack();
      await claim(api, 'vip');
      const containers = [api, api.sibling(), api.sibling(), api.sibling()];

      // Act
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => add(containers[i % 4]!, 'vip', consumer(i))),
      );

      // Assess
      expect(results.filter((r) => r.status !== 201).map((r) => r.body)).toEqual([]);
      const uids = await consumerUids(api, 'vip');
      expect(uids).toHaveLength(50);
      expect(new Set(uids)).toEqual(new Set(Array.from({ length: 50 }, (_, i) => `c-${i}`)));
      expect((await indexItems(api)).map((i) => i.uid).sort()).toEqual([...uids].sort());
      // 50 changes, each a new version of the claim.
      expect((await api.call('GET', '/v1/pools/p/claims/vip')).body.version).toBe(51);
    });

    it('keeps the address while any consumer is left, and releases it with the last one: address route, events and history agree', async () => {
      // Prepare
      const api = await stack(['10.9.0.0/24'], {}, true);
      const address = await claim(api, 'vip');
      for (const i of [1, 2, 3]) expect((await add(api, 'vip', consumer(i))).status).toBe(201);
      const repeat = await add(api, 'vip', consumer(2));

      // Act
      const first = await remove(api, 'vip', 'c-1');
      const second = await remove(api, 'vip', 'c-2');
      const again = await remove(api, 'vip', 'c-2');
      const kept = await api.call('GET', `/v1/pools/p/addresses/${address}`);
      const last = await remove(api, 'vip', 'c-3');

      // Assess
      expect(repeat.status).toBe(200);
      expect([first.body.removed, first.body.released, second.body.removed, second.body.released]).toEqual([
        true,
        false,
        true,
        false,
      ]);
      expect([again.status, again.body.removed]).toEqual([200, false]);
      expect((second.body.claim as { consumers: unknown[] }).consumers).toEqual([consumer(3)]);
      expect([kept.status, kept.body.claim]).toEqual([200, 'vip']);
      expect([last.status, last.body.removed, last.body.released, last.body.claim]).toEqual([
        200,
        true,
        true,
        undefined,
      ]);
      expect((await api.call('GET', `/v1/pools/p/addresses/${address}`)).status).toBe(404);
      expect((await api.call('GET', '/v1/pools/p/claims/vip')).status).toBe(404);
      expect(await indexItems(api)).toEqual([]);
      const reasons = ((await api.call('GET', '/v1/pools/p/events')).body.items as { reason: string }[])
        .map((e) => e.reason)
        .sort();
      expect(reasons).toEqual([
        'ConsumerAdded',
        'ConsumerAdded',
        'ConsumerAdded',
        'ConsumerRemoved',
        'ConsumerRemoved',
        'ConsumerRemoved',
      ]);
      const { failed } = await streams.stream().drain(mirrorOf(api.container));
      expect(failed).toEqual([]);
      const history = await api.call('GET', `/v1/pools/p/addresses/${address}/history`);
      const holdings = history.body.items as { claim: string; to?: string; endReason?: string }[];
      expect(holdings.map((h) => [h.claim, h.to !== undefined, h.endReason])).toEqual([['vip', true, 'released']]);
    });

    it("releases a claim whose last consumer leaves into the pool's reuse delay, as any release", async () => {
      // Prepare
      const api = await stack(['10.9.0.0/24'], { reuseDelaySeconds: 600 });
      const address = await claim(api, 'vip');
      expect((await add(api, 'vip', consumer(1))).status).toBe(201);

      // Act
      const last = await remove(api, 'vip', 'c-1');

      // Assess
      expect(last.body.released, JSON.stringify(last.body)).toBe(true);
      const held = await api.call('GET', `/v1/pools/p/addresses/${address}`);
      expect([held.body.state, held.body.previousClaim]).toEqual(['Released', 'vip']);
    });

    it("leaves a claim that never had a consumer untouched: removing a stranger, its owner's DELETE and owner release work as before", async () => {
      // Prepare
      const api = await stack();
      const address = await claim(api, 'plain');
      await claim(api, 'gone');
      const before = await tableSnapshot(api.container.table);

      // Act
      const stranger = await remove(api, 'plain', 'c-nobody');
      const unchanged = await tableSnapshot(api.container.table);
      const ownerGone = await api.call('DELETE', `/v1/pools/p/owners/${owner('gone').uid}`);
      const deleted = await api.call('DELETE', '/v1/pools/p/claims/plain');

      // Assess
      expect([stranger.status, stranger.body.removed, stranger.body.released]).toEqual([200, false, false]);
      expect((stranger.body.claim as { version: number; consumers?: unknown }).version).toBe(1);
      expect((stranger.body.claim as { consumers?: unknown }).consumers).toBeUndefined();
      expect(unchanged).toEqual(before);
      expect([ownerGone.body.released, ownerGone.body.left]).toEqual([['gone'], undefined]);
      expect(deleted.status).toBe(204);
      expect((await api.call('GET', `/v1/pools/p/addresses/${address}`)).status).toBe(404);
    });

    it('refuses to release a claim with consumers directly (ClaimInUse), and consumers on a claim with a TTL (Conflict)', async () => {
      // Prepare
      const api = await stack();
      await claim(api, 'vip');
      await claim(api, 'ttl', { ttlSeconds: 600 });
      expect((await add(api, 'vip', consumer(1))).status).toBe(201);

      // Act
      const deleted = await api.call('DELETE', '/v1/pools/p/claims/vip');
      const onTtl = await add(api, 'ttl', consumer(2));
      const otherWorkload = await add(api, 'vip', { ...consumer(1), name: 'another' });
      const badField = await add(api, 'vip', { ...consumer(3), uid: 'é'.repeat(200) });

      // Assess
      expect([deleted.status, deleted.body.code]).toEqual([409, 'ClaimInUse']);
      expect(deleted.body.detail).toMatch(/has 1 consumer; it is released when the last one is removed/);
      expect([onTtl.status, onTtl.body.code]).toEqual([409, 'Conflict']);
      expect(onTtl.body.detail).toMatch(/confirm its hold first/);
      expect([otherWorkload.status, otherWorkload.body.code]).toEqual([409, 'Conflict']);
      expect([badField.status, badField.body.code]).toEqual([400, 'InvalidArgument']);
      expect(await consumerUids(api, 'vip')).toEqual(['c-1']);
      expect((await api.call('GET', '/v1/pools/p/claims/vip')).status).toBe(200);
    });

    it("refuses a TTL for a claim with consumers (ClaimHasConsumers), also when the consumer lands between the renewal's read and its write", async () => {
      // Prepare: `vip` has a consumer; `raced` gets its first one just after the renewal has read it (no consumers yet).
      const api = await stack();
      await claim(api, 'vip');
      await claim(api, 'raced');
      expect((await add(api, 'vip', consumer(1))).status).toBe(201);
      const racing = api.sibling({
        table: new AfterGet(api.container.table, keys.claim('p', 'raced'), () => add(api, 'raced', consumer(2))),
      });

      // Act
      const renewed = await api.call('POST', '/v1/pools/p/claims/vip/renew', { ttlSeconds: 60 });
      const racedRenewal = await racing.call('POST', '/v1/pools/p/claims/raced/renew', { ttlSeconds: 60 });
      const confirmed = await api.call('POST', '/v1/pools/p/claims/vip/renew', { ttlSeconds: null });

      // Assess: both refused with the code and a sentence; neither claim took an expiry; confirming stays allowed.
      for (const res of [renewed, racedRenewal]) {
        expect([res.status, res.body.code], JSON.stringify(res.body)).toEqual([409, 'ClaimHasConsumers']);
        expect(res.body.detail).toMatch(/has 1 consumer; a claim with consumers is held until the last one leaves/);
      }
      expect(confirmed.status).toBe(200);
      for (const name of ['vip', 'raced']) {
        const read = await api.call('GET', `/v1/pools/p/claims/${name}`);
        expect([read.body.expiresAt, (read.body.consumers as unknown[]).length]).toEqual([undefined, 1]);
      }
    });

    it("the reconciler's expiry release leaves a claim that has consumers (one given an expiry before the renewal's guard)", async () => {
      // Prepare: a claim with a consumer and an expiry, as a renewal without the consumers condition left it.
      const h = await reconcilerHarness({ engine });
      await h.pool('p', ['10.9.0.0/24']);
      const address = await claim(h.api, 'vip');
      expect((await add(h.api, 'vip', consumer(1))).status).toBe(201);
      const stored = itemToClaim((await h.get(keys.claim('p', 'vip')))!);
      await h.putClaim({ ...stored, expiresAt: h.clock.t + 60_000 });

      // Act
      h.clock.advance(10 * 60_000);
      const report = await h.run();
      // The release's own condition, for a reader that saw the claim before its consumer arrived.
      const early = { ...stored, consumers: undefined, expiresAt: T0 + 60_000 };
      const direct = await h.api.container.deps.reconcile.releaseExpiredClaim(
        early,
        h.clock.t,
        events.claimExpired(early, h.clock.iso()),
      );

      // Assess
      expect(report.errors).toEqual([]);
      expect(direct).toBe('changed');
      expect((await h.api.call('GET', `/v1/pools/p/addresses/${address}`)).body.claim).toBe('vip');
      expect(itemToClaim((await h.get(keys.claim('p', 'vip')))!).consumers).toEqual([consumer(1)]);
    });

    it('removes a gone uid from the three claims it consumes and releases only the one it was the last consumer of', async () => {
      // Prepare
      const api = await stack();
      const addresses = {
        a: await claim(api, 'a'),
        b: await claim(api, 'b'),
        c: await claim(api, 'c'),
        own: await claim(api, 'own'),
      };
      const gone = { kind: 'Pod', name: 'web-0', uid: 'uid-web-0' };
      for (const name of ['a', 'b', 'c']) expect((await add(api, name, gone)).status).toBe(201);
      expect((await add(api, 'b', consumer('b2'))).status).toBe(201);
      expect((await add(api, 'c', consumer('c2'))).status).toBe(201);
      // A claim the gone uid owns but others consume stays theirs.
      const ownedUsed = await api.call('POST', '/v1/pools/p/claims', { name: 'owned', owner: gone });
      expect((await add(api, 'owned', consumer('o2'))).status).toBe(201);

      // Act
      const res = await api.call('DELETE', `/v1/pools/p/owners/${gone.uid}`);

      // Assess
      expect(res.status).toBe(200);
      expect(res.body.released).toEqual(['a']);
      expect([...(res.body.left as string[])].sort()).toEqual(['a', 'b', 'c']);
      expect((await api.call('GET', `/v1/pools/p/addresses/${addresses.a}`)).status).toBe(404);
      for (const [name, left] of [
        ['b', 'c-b2'],
        ['c', 'c-c2'],
      ] as const) {
        expect(await consumerUids(api, name)).toEqual([left]);
        expect((await api.call('GET', `/v1/pools/p/addresses/${addresses[name]}`)).body.claim).toBe(name);
      }
      expect((await api.call('GET', `/v1/pools/p/addresses/${addresses.own}`)).body.claim).toBe('own');
      expect((await api.call('GET', `/v1/pools/p/claims/owned`)).body.consumers).toEqual([consumer('o2')]);
      expect(ownedUsed.status).toBe(201);
      expect((await indexItems(api)).map((i) => i.uid).sort()).toEqual(['c-b2', 'c-c2', 'c-o2']);
    });

    it("the reconciler's follow-up of a gone uid removes it from a claim it joined after the report, releasing it if it was the last", async () => {
      // Prepare: the report finds nothing; a consumer add in flight during it lands afterwards.
      const h = await reconcilerHarness({ engine });
      expect((await h.api.call('POST', '/v1/pools', { name: 'p' })).status).toBe(201);
      expect((await h.api.call('POST', '/v1/pools/p/ranges', { cidr: '10.9.0.0/24' })).status).toBe(201);
      const address = await claim(h.api, 'late');
      await claim(h.api, 'shared');
      expect((await h.api.call('DELETE', '/v1/pools/p/owners/uid-gone')).body.released).toEqual([]);
      const gone = { kind: 'Pod', name: 'gone', uid: 'uid-gone' };
      for (const name of ['late', 'shared']) expect((await add(h.api, name, gone)).status).toBe(201);
      expect((await add(h.api, 'shared', consumer(1))).status).toBe(201);

      // Act
      h.clock.advance(60_000);
      const report = await h.run();

      // Assess
      expect(report.errors).toEqual([]);
      expect((await h.api.call('GET', `/v1/pools/p/addresses/${address}`)).status).toBe(404);
      expect(await consumerUids(h.api, 'shared')).toEqual(['c-1']);
    });

    it("in a pool with access, lets the claim's creator and an administrator add and remove consumers, and no other allocator", async () => {
      // Prepare
      const account = '123456789012';
      const as = (role: string) => ({ 'x-ipam-principal': `arn:aws:iam::${account}:role/${role}` });
      const api = await testApi({}, {}, undefined, engine);
      expect(
        (
          await api.call(
            'POST',
            '/v1/pools',
            {
              name: 'p',
              access: {
                administrators: [`arn:aws:iam::${account}:role/netops`],
                allocators: [`arn:aws:iam::${account}:role/team-?`],
              },
            },
            as('netops'),
          )
        ).status,
      ).toBe(201);
      expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.9.0.0/24' }, as('netops'))).status).toBe(201);
      expect(
        (await api.call('POST', '/v1/pools/p/claims', { name: 'vip', owner: owner('vip') }, as('team-a'))).status,
      ).toBe(201);

      // Act
      const byOther = await api.call('POST', '/v1/pools/p/claims/vip/consumers', consumer(1), as('team-b'));
      const byCreator = await api.call('POST', '/v1/pools/p/claims/vip/consumers', consumer(1), as('team-a'));
      const byAdmin = await api.call('POST', '/v1/pools/p/claims/vip/consumers', consumer(2), as('netops'));
      const removeByOther = await api.call('DELETE', '/v1/pools/p/claims/vip/consumers/c-1', undefined, as('team-b'));
      const removeByAdmin = await api.call('DELETE', '/v1/pools/p/claims/vip/consumers/c-1', undefined, as('netops'));
      const lastByCreator = await api.call('DELETE', '/v1/pools/p/claims/vip/consumers/c-2', undefined, as('team-a'));

      // Assess
      expect([byOther.status, byOther.body.rule]).toEqual([403, 'own-claims-only']);
      expect([byCreator.status, byAdmin.status]).toEqual([201, 201]);
      expect([removeByOther.status, removeByOther.body.rule]).toEqual([403, 'own-claims-only']);
      expect([removeByAdmin.status, removeByAdmin.body.removed]).toEqual([200, true]);
      expect([lastByCreator.status, lastByCreator.body.released]).toEqual([200, true]);
      // The release names who released it, as any release in a pool with access does.
      const events = (await api.call('GET', '/v1/pools/p/events', undefined, as('netops'))).body.items as {
        reason: string;
        by: string;
      }[];
      expect(events.filter((e) => e.reason === 'ClaimReleased').map((e) => e.by)).toEqual([
        `arn:aws:iam::${account}:role/team-a`,
      ]);
      expect(
        events
          .filter((e) => e.reason === 'ConsumerAdded')
          .map((e) => e.by)
          .sort(),
      ).toEqual([`arn:aws:iam::${account}:role/netops`, `arn:aws:iam::${account}:role/team-a`]);
    });

    it('refuses the 257th consumer with TooManyConsumers and a sentence; the widest claim item stays under 400 KB and its release under 100 operations', async () => {
      // Prepare: the widest claim: dual-stack, 32 addresses a family, an owner of 253 three-byte characters a field, 32
      // labels as long as the rest of a 16 KB request body allows, and 256 consumers of 253 bytes a field.
      const api = await stack(['10.9.0.0/24', 'fd00:9::/64']);
      const labels = Object.fromEntries(
        Array.from({ length: 32 }, (_, i) => [
          `${'d'.repeat(197)}${String(i).padStart(3, '0')}/${'n'.repeat(63)}`,
          'v'.repeat(128),
        ]),
      );
      const wide = (i: number) => ({
        kind: `K${'k'.repeat(249)}${String(i).padStart(3, '0')}`,
        name: `N${'n'.repeat(249)}${String(i).padStart(3, '0')}`,
        uid: `U${'u'.repeat(249)}${String(i).padStart(3, '0')}`,
      });
      const made = await api.call('POST', '/v1/pools/p/claims', {
        name: 'w'.repeat(63),
        owner: { kind: '€'.repeat(253), name: '€'.repeat(253), uid: '€'.repeat(253) },
        ipFamilyPolicy: 'RequireDualStack',
        count: 32,
        labels,
      });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      const name = 'w'.repeat(63);
      // 255 consumers written straight into the claim's item (256 requests of 200 KB writes would be minutes on a
      // loaded machine); the 256th goes through the API's write shape, which DynamoDB refuses beyond 400 KB.
      const shards = api.container.config.leaseIndexShards;
      const stored = itemToClaim((await api.container.table.get({ PK: `CLAIM#p#${name}`, SK: 'CLAIM' }))!);
      await api.container.table.write({
        kind: 'put',
        item: claimToItem({ ...stored, consumers: Array.from({ length: 255 }, (_, i) => wide(i)) }, shards),
      });
      for (let i = 0; i < 255; i += 1)
        await api.container.table.write({ kind: 'put', item: consumerIndexItem(stored, wide(i)) });
      const widest = await add(api, name, wide(255));

      // Act
      const refused = await add(api, name, wide(256));
      const item = (await allItems(api.container.table)).find((i) => i.entity === 'claim')!;
      // The release happens with one consumer left, whatever the claim had before: leave it the first one.
      const full = itemToClaim(item);
      await api.container.table.write({ kind: 'put', item: claimToItem({ ...full, consumers: [wide(0)] }, shards) });
      for (let i = 1; i < 256; i += 1)
        await api.container.table.write({
          kind: 'delete',
          key: { PK: `CONSUMER#p#${wide(i).uid}`, SK: `CLAIM#${name}` },
        });
      const recording = new RecordingTable(api.container.table);
      const last = await api
        .sibling({ table: recording })
        .call('DELETE', `/v1/pools/p/claims/${name}/consumers/${wide(0).uid}`);

      // Assess
      expect(widest.status, JSON.stringify(widest.body).slice(0, 300)).toBe(201);
      expect([refused.status, refused.body.code]).toEqual([409, 'TooManyConsumers']);
      expect(refused.body.detail).toBe(
        `Claim "${name}" already has 256 consumers, the most a claim may have; remove one before adding another.`,
      );
      expect((item.consumers as unknown[]).length).toBe(256);
      const bytes = dynamoItemBytes(item);
      // Most of it is the consumers' 256 x 759 bytes of values.
      expect(bytes).toBeGreaterThan(256 * 759);
      expect(bytes).toBeLessThan(400 * 1024);
      expect(last.body.released, JSON.stringify(last.body)).toBe(true);
      const released = recording.transactions.find((ops) =>
        ops.some((op) => op.kind === 'delete' && op.key.SK === 'CLAIM'),
      )!;
      // The claim, its 64 leases and the freed counters of its two ranges.
      expect(released.length).toBeGreaterThanOrEqual(65);
      expect(released.length).toBeLessThanOrEqual(100);
      expect(
        (await allItems(api.container.table)).filter(
          (i) => i.entity === 'lease' || i.entity === 'claim' || i.entity === 'consumer',
        ),
      ).toEqual([]);
    });
  });
}

/** A table that records the operations of each transaction it passes on. */
class RecordingTable extends PassThroughTable {
  readonly transactions: WriteOp[][] = [];
  override transact(ops: readonly WriteOp[]): Promise<TxVerdict[] | undefined> {
    this.transactions.push([...ops]);
    return this.inner.transact(ops);
  }
}

/** A table that runs `hook` once, just after its first read of `key` and before handing the answer back: a race made exact. */
class AfterGet extends PassThroughTable {
  private armed = true;
  constructor(
    inner: Table,
    private readonly key: Key,
    private readonly hook: () => Promise<unknown>,
  ) {
    super(inner);
  }
  override async get(key: Key): Promise<Item | undefined> {
    const answer = await this.inner.get(key);
    if (this.armed && key.PK === this.key.PK && key.SK === this.key.SK) {
      this.armed = false;
      await this.hook();
    }
    return answer;
  }
}
