import { afterEach, describe, expect, it } from 'vitest';
import type { DynamoDBRecord } from 'aws-lambda';
import { testApi, type TestApi } from '../support/api.ts';
import { mirrorOf } from '../support/legacy.ts';
import { reconcilerHarness } from '../support/reconciler.ts';
import type { LeaseStream, StreamEngine } from '../support/lease-stream.ts';
import type { Item } from '../../shared/adapters/dynamodb/codec.ts';
import type { Table, WriteOp, WriteResult } from '../../shared/adapters/dynamodb/table.ts';
import { MARK_ITEM_SLACK_MS } from '../../shared/core/mirror/projections.ts';

/**
 * Issue 22's address history through the real HTTP handler and the real stream function, fed the table's own
 * stream records (DynamoDB Local's stream, or the memory engine's): holdings with their boundaries, `at`, and the
 * stream's at-least-once delivery (redelivered and half-failed batches).
 */
export function historyCases(streams: StreamEngine): void {
  const owner = (name: string) => ({ kind: 'Pod', name, uid: `uid-${name}` });
  const opened: LeaseStream[] = [];
  afterEach(() => {
    for (const s of opened.splice(0)) s.close();
  });

  async function stack(
    poolBody: Record<string, unknown> = {},
    admin: Record<string, string> = {},
    engine = streams.engine,
  ): Promise<{ api: TestApi; stream: LeaseStream; drain: () => Promise<DynamoDBRecord[]> }> {
    const api = await testApi({}, {}, undefined, engine);
    const stream = streams.stream();
    opened.push(stream);
    expect((await api.call('POST', '/v1/pools', { name: 'p', ...poolBody }, admin)).status).toBe(201);
    expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.7.0.0/28' }, admin)).status).toBe(201);
    const drain = async () => {
      const { records, failed } = await stream.drain(mirrorOf(api.container));
      expect(failed).toEqual([]);
      return records;
    };
    return { api, stream, drain };
  }

  async function claim(
    api: TestApi,
    name: string,
    body: Record<string, unknown> = {},
  ): Promise<{ address: string; createdAt: string; uid: string }> {
    const res = await api.call('POST', '/v1/pools/p/claims', { name, owner: owner(name), ...body });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return {
      address: (res.body.addresses as { address: string }[])[0]!.address,
      createdAt: res.body.createdAt as string,
      uid: res.body.uid as string,
    };
  }

  const history = async (api: TestApi, address: string, query = '', headers: Record<string, string> = {}) => {
    const res = await api.call('GET', `/v1/pools/p/addresses/${address}/history${query}`, undefined, headers);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  };
  const at = async (api: TestApi, address: string, ms: number) =>
    (await history(api, address, `?at=${new Date(ms).toISOString()}`)).holding as Record<string, unknown> | null;
  const holdingItems = async (api: TestApi, address: string) =>
    (await api.container.table.query({ partition: `HIST#p#${address}`, consistent: true })).items;

  describe(`Address history (${streams.engine.name})`, () => {
    it('a claim, a release and a re-claim by someone else make two holdings with exact boundaries; at answers inside, between and outside them', async () => {
      // Prepare
      const { api, drain } = await stack();
      const a = await claim(api, 'a');
      const releaseStarted = Date.now();
      expect((await api.call('DELETE', '/v1/pools/p/claims/a')).status).toBe(204);
      await drain();
      const drained = Date.now();
      const [ended] = (await history(api, a.address)).items as Record<string, unknown>[];
      const endMs = Date.parse(ended!.to as string);
      // The next holding must start after this one ended; on a fast engine the claim could land in the same millisecond.
      await expect.poll(() => Date.now()).toBeGreaterThan(drained);
      // Act
      const b = await claim(api, 'b', { addresses: [a.address] });
      await drain();
      const body = await history(api, a.address);
      // Assess: newest first, the open one with no end
      expect(body.items).toEqual([
        {
          address: a.address,
          family: 'IPv4',
          range: expect.any(String),
          kind: 'claim',
          claim: 'b',
          claimUid: b.uid,
          owner: owner('b'),
          from: b.createdAt,
        },
        {
          address: a.address,
          family: 'IPv4',
          range: expect.any(String),
          kind: 'claim',
          claim: 'a',
          claimUid: a.uid,
          owner: owner('a'),
          from: a.createdAt,
          to: ended!.to,
          toExact: false,
          endReason: 'released',
        },
      ]);
      // A client's release is a deletion, which carries no time: its end is the bound the stream function saw
      expect(endMs).toBeGreaterThanOrEqual(releaseStarted);
      expect(endMs).toBeLessThanOrEqual(drained);
      expect(endMs).toBeLessThan(Date.parse(b.createdAt));
      expect(body.completeUntil).toEqual(expect.any(String));
      // at: before, at the start, inside, at the end (exclusive: nobody between), at and after the next start
      const from = Date.parse(a.createdAt);
      expect(await at(api, a.address, from - 1)).toBeNull();
      expect((await at(api, a.address, from))?.claim).toBe('a');
      expect((await at(api, a.address, endMs - 1))?.claim).toBe('a');
      expect(await at(api, a.address, endMs)).toBeNull();
      expect(await at(api, a.address, Date.parse(b.createdAt) - 1)).toBeNull();
      expect((await at(api, a.address, Date.parse(b.createdAt)))?.claim).toBe('b');
      expect((await at(api, a.address, Date.now() + 60_000))?.claim).toBe('b');
      // the window and paging
      expect((await history(api, a.address, `?to=${a.createdAt}`)).items).toEqual([]);
      const first = await history(api, a.address, '?limit=1');
      expect((first.items as Record<string, unknown>[]).map((h) => h.claim)).toEqual(['b']);
      const second = await history(api, a.address, `?limit=1&cursor=${encodeURIComponent(first.nextCursor as string)}`);
      expect((second.items as Record<string, unknown>[]).map((h) => h.claim)).toEqual(['a']);
      expect(second.nextCursor).toBeUndefined();
      // the owner's history and the block's
      const byOwner = await api.call('GET', '/v1/pools/p/owners/uid-a/history');
      expect((byOwner.body.items as Record<string, unknown>[]).map((h) => [h.claim, h.endReason])).toEqual([
        ['a', 'released'],
      ]);
      const block = await api.call('GET', '/v1/pools/p/history?cidr=10.7.0.0/28');
      expect((block.body.items as Record<string, unknown>[]).map((h) => h.claim)).toEqual(['b', 'a']);
    });

    it('a redelivered stream batch changes nothing', async () => {
      // Prepare
      const { api, drain } = await stack();
      const a = await claim(api, 'a');
      expect((await api.call('DELETE', '/v1/pools/p/claims/a')).status).toBe(204);
      const records = await drain();
      const before = await holdingItems(api, a.address);
      // Act: the same records again, whole and one by one
      expect((await mirrorOf(api.container)({ Records: records })).batchItemFailures).toEqual([]);
      for (const r of records) await mirrorOf(api.container)({ Records: [r] });
      // Assess
      expect(before).toHaveLength(1);
      expect(await holdingItems(api, a.address)).toEqual(before);
      expect(((await history(api, a.address)).items as unknown[]).length).toBe(1);
    });

    it('a batch that fails half way and is retried leaves no duplicate', async () => {
      // Prepare: three holdings end in one batch; the first holding write of the batch fails once
      const { api, stream } = await stack();
      const made = [await claim(api, 'a'), await claim(api, 'b'), await claim(api, 'c')];
      for (const name of ['a', 'b', 'c'])
        expect((await api.call('DELETE', `/v1/pools/p/claims/${name}`)).status).toBe(204);
      let failures = 1;
      const faulty = failingHoldingWrites(api.container.table, () => failures-- > 0);
      const streamApi = api.sibling({ table: faulty });
      // Act
      const { failed } = await stream.drain(mirrorOf(streamApi.container));
      // Assess
      expect(failed).toEqual([]);
      for (const m of made) {
        const items = await holdingItems(api, m.address);
        expect(items.map((i) => i.claim)).toEqual([items[0]!.claim]);
        expect(((await history(api, m.address)).items as unknown[]).length).toBe(1);
      }
    });

    it('completeUntil is the newest record time of the last batch, also for an idle pool, and costs no write of its own', async () => {
      // Prepare: the stream function alone keeps the summary; each batch's records stamped by hand (DynamoDB stamps to
      // the second) so the batches are seconds apart
      const { api, stream } = await stack({}, {}, streams.unfollowed);
      const handler = mirrorOf(api.container);
      const deliver = async (seconds: number) =>
        expect((await handler({ Records: stamped(await stream.read(), seconds) })).batchItemFailures).toEqual([]);
      const t = Math.floor(Date.now() / 1000) - 60;
      const a = await claim(api, 'a');
      await deliver(t);
      expect((await history(api, a.address)).completeUntil).toBe(new Date(t * 1000).toISOString());
      // Act: a's release, 5 s later, in the last batch the pool sees (then it is idle)
      expect((await api.call('DELETE', '/v1/pools/p/claims/a')).status).toBe(204);
      await deliver(t + 5);
      // Assess: the mark covers the last change, read off the summary chunk the batch wrote anyway
      expect((await history(api, a.address)).completeUntil).toBe(new Date((t + 5) * 1000).toISOString());
      expect((await api.call('GET', '/v1/pools/p/owners/uid-a/history')).body.completeUntil).toBe(
        new Date((t + 5) * 1000).toISOString(),
      );
      expect((await api.call('GET', '/v1/pools/p/history?cidr=10.7.0.0/28')).body.completeUntil).toBe(
        new Date((t + 5) * 1000).toISOString(),
      );
      expect(await markItem(api)).toBeUndefined();
      // Act: a claim and its release in one batch change no summary bit: the mark goes to the pool's mark item, as the
      // last mark put is more than MARK_ITEM_SLACK_MS older
      const b = await claim(api, 'b');
      expect((await api.call('DELETE', '/v1/pools/p/claims/b')).status).toBe(204);
      await deliver(t + 20);
      // Assess
      expect((await history(api, b.address)).completeUntil).toBe(new Date((t + 20) * 1000).toISOString());
      expect(await markItem(api)).toMatchObject({ through: (t + 20) * 1000 });
      expect(((await history(api, b.address)).items as Record<string, unknown>[]).map((h) => h.claim)).toContain('b');
      // Act: another such batch 5 s later is left to the next chunk write: completeUntil trails it by less than the slack
      const c = await claim(api, 'c');
      expect((await api.call('DELETE', '/v1/pools/p/claims/c')).status).toBe(204);
      await deliver(t + 25);
      // Assess: still true (it says less than it could), never ahead of what is recorded
      expect((await history(api, c.address)).completeUntil).toBe(new Date((t + 20) * 1000).toISOString());
      expect((t + 25) * 1000 - (t + 20) * 1000).toBeLessThanOrEqual(MARK_ITEM_SLACK_MS);
    });

    it('completeUntil never covers a change whose holding write failed, and moves once the retried batch records it', async () => {
      // Prepare: a batch recorded at t; three holdings end in a batch at t + 15 whose first holding write fails once (its
      // chunk is written then, so the retry changes no summary bit and puts the mark on the mark item: t + 15 is past the
      // slack)
      const { api, stream } = await stack({}, {}, streams.unfollowed);
      const t = Math.floor(Date.now() / 1000) - 60;
      const made = [await claim(api, 'a'), await claim(api, 'b'), await claim(api, 'c')];
      expect((await mirrorOf(api.container)({ Records: stamped(await stream.read(), t) })).batchItemFailures).toEqual(
        [],
      );
      for (const name of ['a', 'b', 'c'])
        expect((await api.call('DELETE', `/v1/pools/p/claims/${name}`)).status).toBe(204);
      const records = stamped(await stream.read(), t + 15);
      let failures = 1;
      const faulty = api.sibling({ table: failingHoldingWrites(api.container.table, () => failures-- > 0) });
      // Act
      const failed = (await mirrorOf(faulty.container)({ Records: records })).batchItemFailures.map(
        (f) => f.itemIdentifier,
      );
      // Assess: the pool's changes of that batch are not all recorded, so its mark stays at t
      expect(failed.length).toBeGreaterThan(0);
      for (const m of made)
        expect((await history(api, m.address)).completeUntil).toBe(new Date(t * 1000).toISOString());
      // Act: the stream delivers again from the lowest failed record
      const first = records.findIndex((r) => failed.includes(r.dynamodb!.SequenceNumber!));
      expect((await mirrorOf(api.container)({ Records: records.slice(first) })).batchItemFailures).toEqual([]);
      // Assess
      for (const m of made) {
        const body = await history(api, m.address);
        expect(body.completeUntil).toBe(new Date((t + 15) * 1000).toISOString());
        expect((body.items as Record<string, unknown>[]).map((h) => h.claimUid)).toEqual([m.uid]);
      }
    });

    it('completeUntil stays before a change another shard failed to record, although this shard marked the pool past it', async () => {
      // Prepare: two releases of pool p whose records sit on different stream shards (delivered apart)
      const { api, stream } = await stack({}, {}, streams.unfollowed);
      const t = Math.floor(Date.now() / 1000) - 60;
      const [a, b] = [await claim(api, 'a'), await claim(api, 'b')];
      expect((await mirrorOf(api.container)({ Records: stamped(await stream.read(), t) })).batchItemFailures).toEqual(
        [],
      );
      expect((await api.call('DELETE', '/v1/pools/p/claims/a')).status).toBe(204);
      const shardA = stamped(await stream.read(), t + 5);
      expect((await api.call('DELETE', '/v1/pools/p/claims/b')).status).toBe(204);
      const shardB = stamped(await stream.read(), t + 20);
      // Act: shard A's batch fails on its holding write; shard B's, later in time, is recorded
      const faulty = api.sibling({ table: failingHoldingWrites(api.container.table, () => true) });
      expect((await mirrorOf(faulty.container)({ Records: shardA })).batchItemFailures.length).toBeGreaterThan(0);
      expect((await mirrorOf(api.container)({ Records: shardB })).batchItemFailures).toEqual([]);
      // Assess: the pool's mark went to t + 20, the answer stops at the noted change
      expect(((await history(api, b.address)).items as Record<string, unknown>[]).map((h) => h.claim)).toEqual(['b']);
      expect((await history(api, a.address)).completeUntil).toBe(new Date((t + 5) * 1000).toISOString());
      expect((await history(api, b.address)).completeUntil).toBe(new Date((t + 5) * 1000).toISOString());
    });

    it("a pool whose holdings of a batch were all recorded gets its mark although another pool's failed in the same batch", async () => {
      // Prepare: pools p and q, a claim and a release in each, one batch; q's holding writes fail
      const { api, stream } = await stack({}, {}, streams.unfollowed);
      expect((await api.call('POST', '/v1/pools', { name: 'q' })).status).toBe(201);
      expect((await api.call('POST', '/v1/pools/q/ranges', { cidr: '10.8.0.0/28' })).status).toBe(201);
      const a = await claim(api, 'a');
      expect((await api.call('POST', '/v1/pools/q/claims', { name: 'b', owner: owner('b') })).status).toBe(201);
      const t = Math.floor(Date.now() / 1000) - 60;
      expect((await mirrorOf(api.container)({ Records: stamped(await stream.read(), t) })).batchItemFailures).toEqual(
        [],
      );
      expect((await api.call('DELETE', '/v1/pools/q/claims/b')).status).toBe(204);
      expect((await api.call('DELETE', '/v1/pools/p/claims/a')).status).toBe(204);
      const faulty = api.sibling({ table: failingHoldingWrites(api.container.table, (item) => item.pool === 'q') });
      // Act
      const failed = (await mirrorOf(faulty.container)({ Records: stamped(await stream.read(), t + 15) }))
        .batchItemFailures;
      // Assess
      expect(failed).toHaveLength(1);
      expect((await history(api, a.address)).completeUntil).toBe(new Date((t + 15) * 1000).toISOString());
      const q = await api.call('GET', '/v1/pools/q/history?cidr=10.8.0.0/28');
      expect(q.body.completeUntil).toBe(new Date(t * 1000).toISOString());
    });

    it('records an expired address taken by another claim as ended at its expiry, exactly', async () => {
      // Prepare: a claim with a TTL; a container whose clock is an hour ahead takes the address once it expired
      const { api, drain } = await stack();
      const a = await claim(api, 'a', { ttlSeconds: 60 });
      const later = api.sibling({ clock: { nowMs: () => Date.now() + 3_600_000 } });
      // Act
      const b = await claim(later, 'b', { addresses: [a.address] });
      await drain();
      // Assess
      const body = await history(later, a.address);
      const [open, ended] = body.items as Record<string, unknown>[];
      expect(open).toMatchObject({ claim: 'b', from: b.createdAt });
      expect(ended).toMatchObject({
        claim: 'a',
        from: a.createdAt,
        to: new Date(Date.parse(a.createdAt) + 60_000).toISOString(),
        toExact: true,
        endReason: 'expired',
      });
      expect((await at(later, a.address, Date.parse(a.createdAt) + 59_999))?.claim).toBe('a');
      expect(await at(later, a.address, Date.parse(a.createdAt) + 60_000)).toBeNull();
    });

    it('says why a holding ended when the owner was reported gone, and keeps a hold of a reuse delay as its own holding', async () => {
      // Prepare
      const { api, drain } = await stack({ reuseDelaySeconds: 600 });
      const a = await claim(api, 'a');
      const c = await claim(api, 'c');
      // Act: a's owner is gone (released with a hold); c is released by its client (a hold too)
      expect((await api.call('DELETE', '/v1/pools/p/owners/uid-a')).status).toBe(200);
      expect((await api.call('DELETE', '/v1/pools/p/claims/c')).status).toBe(204);
      await drain();
      // Assess
      const [holdA, endedA] = (await history(api, a.address)).items as Record<string, unknown>[];
      expect(endedA).toMatchObject({ kind: 'claim', claim: 'a', endReason: 'ownerGone', toExact: true });
      expect(holdA).toMatchObject({ kind: 'hold', claim: 'a', owner: owner('a'), from: endedA!.to });
      expect(holdA!.to).toBeUndefined();
      const [, endedC] = (await history(api, c.address)).items as Record<string, unknown>[];
      expect(endedC).toMatchObject({ claim: 'c', endReason: 'released', toExact: true });
    });

    it("holdings carry the claim's labels and creator, and who released them where the change says so", async () => {
      // Prepare: claims made by one principal, released by others; a pool with a reuse delay and one without
      const alice = { 'x-ipam-principal': 'arn:aws:sts::123456789012:assumed-role/alice/laptop' };
      const bob = { 'x-ipam-principal': 'arn:aws:iam::123456789012:user/bob' };
      const delayed = await stack({ reuseDelaySeconds: 600 });
      const plain = await stack();
      const make = async (api: TestApi, name: string) => {
        const res = await api.call(
          'POST',
          '/v1/pools/p/claims',
          { name, owner: owner(name), labels: { team: 'blue', 'example.com/job': name } },
          alice,
        );
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        return (res.body.addresses as { address: string }[])[0]!.address;
      };
      const [held, gone, deleted] = [
        await make(delayed.api, 'a'),
        await make(plain.api, 'b'),
        await make(plain.api, 'c'),
      ];
      const created = { arn: 'arn:aws:iam::123456789012:role/alice', session: 'laptop' };
      const labels = (name: string) => ({ team: 'blue', 'example.com/job': name });
      // the open holding (the lease itself) already carries them
      expect((await history(plain.api, gone)).items).toEqual([
        expect.objectContaining({ claim: 'b', labels: labels('b'), createdBy: created }),
      ]);
      // Act: bob releases a (into a hold), reports b's owner gone, releases c (a deletion)
      expect((await delayed.api.call('DELETE', '/v1/pools/p/claims/a', undefined, bob)).status).toBe(204);
      expect((await plain.api.call('DELETE', '/v1/pools/p/owners/uid-b', undefined, bob)).status).toBe(200);
      expect((await plain.api.call('DELETE', '/v1/pools/p/claims/c', undefined, bob)).status).toBe(204);
      await delayed.drain();
      await plain.drain();
      // Assess
      const [hold, endedA] = (await history(delayed.api, held)).items as Record<string, unknown>[];
      expect(endedA).toMatchObject({
        claim: 'a',
        endReason: 'released',
        labels: labels('a'),
        createdBy: created,
        releasedBy: { arn: bob['x-ipam-principal'] },
      });
      expect(hold).toMatchObject({ kind: 'hold', labels: labels('a'), createdBy: created });
      expect(hold!.releasedBy).toBeUndefined();
      const [endedB] = (await history(plain.api, gone)).items as Record<string, unknown>[];
      expect(endedB).toMatchObject({
        claim: 'b',
        endReason: 'ownerGone',
        labels: labels('b'),
        createdBy: created,
        releasedBy: { arn: bob['x-ipam-principal'] },
      });
      // a client's release in a pool without a reuse delay deletes the lease: the deletion names no principal
      const [endedC] = (await history(plain.api, deleted)).items as Record<string, unknown>[];
      expect(endedC).toMatchObject({ claim: 'c', endReason: 'released', labels: labels('c'), createdBy: created });
      expect(endedC!.releasedBy).toBeUndefined();
      // the owner's listing and the `at` answer say the same
      expect((await plain.api.call('GET', '/v1/pools/p/owners/uid-b/history')).body.items).toEqual([
        expect.objectContaining({ createdBy: created, releasedBy: { arn: bob['x-ipam-principal'] } }),
      ]);
      expect(await at(delayed.api, held, Date.parse(endedA!.from as string))).toMatchObject({
        labels: labels('a'),
        createdBy: created,
        releasedBy: { arn: bob['x-ipam-principal'] },
      });
    });

    it("in a pool with access, a client's release (a deletion) names who released it, exactly, through its event", async () => {
      // Prepare: alice may allocate, bob administers; no reuse delay, so the release deletes the lease
      const alice = { 'x-ipam-principal': 'arn:aws:sts::123456789012:assumed-role/alice/laptop' };
      const bob = { 'x-ipam-principal': 'arn:aws:iam::123456789012:user/bob' };
      const { api, drain } = await stack(
        { access: { administrators: [bob['x-ipam-principal']], allocators: ['arn:aws:iam::123456789012:role/alice'] } },
        bob,
      );
      const res = await api.call('POST', '/v1/pools/p/claims', { name: 'a', owner: owner('a') }, alice);
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      const address = (res.body.addresses as { address: string }[])[0]!.address;
      // Act
      const started = Date.now();
      expect((await api.call('DELETE', '/v1/pools/p/claims/a', undefined, bob)).status).toBe(204);
      const answered = Date.now();
      await drain();
      // Assess: the end is the release's own time, not the bound the stream function saw
      const [ended] = (await history(api, address, '', bob)).items as Record<string, unknown>[];
      expect(ended).toMatchObject({
        claim: 'a',
        endReason: 'released',
        toExact: true,
        createdBy: { arn: 'arn:aws:iam::123456789012:role/alice', session: 'laptop' },
        releasedBy: { arn: bob['x-ipam-principal'] },
      });
      expect(Date.parse(ended!.to as string)).toBeGreaterThanOrEqual(started);
      expect(Date.parse(ended!.to as string)).toBeLessThanOrEqual(answered);
      const events = (await api.call('GET', '/v1/pools/p/events', undefined, bob)).body.items as Record<
        string,
        unknown
      >[];
      expect(events).toEqual([expect.objectContaining({ reason: 'ClaimReleased', object: 'claim/a' })]);
    });

    it('reads the reason for a release by the claim it ended, not by every event of the pool (issue 33, item 6)', async () => {
      // Prepare: a pool with access, where every client's release writes an event; 36 releases already recorded
      const bob = { 'x-ipam-principal': 'arn:aws:iam::123456789012:user/bob' };
      const { api, stream, drain } = await stack(
        { access: { administrators: [bob['x-ipam-principal']], allocators: [] } },
        bob,
      );
      for (let round = 0; round < 3; round += 1) {
        for (let i = 0; i < 12; i += 1)
          expect(
            (await api.call('POST', '/v1/pools/p/claims', { name: `c${i}`, owner: owner(`c${i}`) }, bob)).status,
          ).toBe(201);
        for (let i = 0; i < 12; i += 1)
          expect((await api.call('DELETE', `/v1/pools/p/claims/c${i}`, undefined, bob)).status).toBe(204);
      }
      await drain();
      const last = await api.call('POST', '/v1/pools/p/claims', { name: 'last', owner: owner('last') }, bob);
      expect(last.status).toBe(201);
      expect((await api.call('DELETE', '/v1/pools/p/claims/last', undefined, bob)).status).toBe(204);
      // The stream function's table, counting the event items its queries return
      const table = api.container.table;
      let eventItemsRead = 0;
      const counting = api.sibling({
        table: {
          ...table,
          name: table.name,
          get: (k) => table.get(k),
          batchGet: (k, a) => table.batchGet(k, a),
          write: (op) => table.write(op),
          transact: (ops) => table.transact(ops),
          describe: () => table.describe(),
          async query(query) {
            const out = await table.query(query);
            if (query.partition.startsWith('EVENT')) eventItemsRead += out.items.length;
            return out;
          },
        },
      });
      // Act
      const { failed } = await stream.drain(mirrorOf(counting.container));
      // Assess: the release's reason was found with one event read, whatever the pool wrote before
      expect(failed).toEqual([]);
      expect(eventItemsRead).toBe(1);
      const [ended] = (await history(api, (last.body.addresses as { address: string }[])[0]!.address, '', bob))
        .items as Record<string, unknown>[];
      expect(ended).toMatchObject({
        claim: 'last',
        endReason: 'released',
        releasedBy: { arn: bob['x-ipam-principal'] },
      });
    });

    it('says rangeTerminated for a claim released because its range was retired under the commit', async () => {
      // Prepare: a warm container that trusts its view for an hour (the first range only, Ready); a second range
      // added and the first marked Terminating by another container
      const { api, drain } = await stack();
      const warm = api.sibling({ viewMaxAgeMs: 3_600_000 });
      expect((await warm.call('POST', '/v1/pools/p/claims', { name: 'w', owner: owner('w') })).status).toBe(201);
      expect((await warm.call('DELETE', '/v1/pools/p/claims/w')).status).toBe(204);
      const going = ((await api.call('GET', '/v1/pools/p/ranges')).body.items as { name: string; cidr: string }[]).find(
        (r) => r.cidr === '10.7.0.0/28',
      )!.name;
      expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.8.0.0/28' })).status).toBe(201);
      expect((await api.call('DELETE', `/v1/pools/p/ranges/${going}`)).status).toBe(202);
      // Act: the warm container commits in the Terminating range, finds it retired, releases and allocates again
      const x = await claim(warm, 'x');
      await drain();
      // Assess
      expect(x.address.startsWith('10.8.0.')).toBe(true);
      const block = (await api.call('GET', '/v1/pools/p/history?cidr=10.7.0.0/28')).body.items as Record<
        string,
        unknown
      >[];
      const retired = block.filter((h) => h.claim === 'x');
      // (each round of the claim draws a new incarnation: the released one is not the one answered)
      expect(retired).toEqual([expect.objectContaining({ endReason: 'rangeTerminated', toExact: true })]);
      expect(retired[0]!.claimUid).not.toBe(x.uid);
      expect(Date.parse(retired[0]!.to as string)).toBeGreaterThanOrEqual(Date.parse(retired[0]!.from as string));
      expect(block.filter((h) => h.claim === 'w')).toEqual([expect.objectContaining({ endReason: 'released' })]);
      const events = (await api.call('GET', '/v1/pools/p/events')).body.items as Record<string, unknown>[];
      expect(events).toContainEqual(expect.objectContaining({ reason: 'RangeRetired', object: 'claim/x' }));
    });

    it('the reconciler reports the lag, and a holding the stream function skipped for good as a HistoryGap, once', async () => {
      // Prepare: two claims expire and the reconciler releases them (ClaimExpired events, with their addresses); the
      // stream function records both, then a's holding item is removed: what a change skipped past its retries leaves
      const h = await reconcilerHarness({ engine: streams.engine });
      const stream = streams.stream();
      opened.push(stream);
      await h.pool('p', ['10.9.0.0/29']);
      await h.claim('p', { name: 'a', owner: owner('a'), addresses: ['10.9.0.1'], ttlSeconds: 60 });
      await h.claim('p', { name: 'b', owner: owner('b'), addresses: ['10.9.0.2'], ttlSeconds: 60 });
      h.clock.advance(10 * 60_000);
      expect((await h.run()).repairs.ClaimExpired).toBe(2);
      expect((await stream.drain(mirrorOf(h.api.container))).failed).toEqual([]);
      const skipped = (await h.api.container.table.query({ partition: 'HIST#p#10.9.0.1', consistent: true })).items;
      expect(skipped).toHaveLength(1);
      await h.remove({ PK: skipped[0]!.PK as string, SK: skipped[0]!.SK as string });
      const gaps = async () => (await h.events('p')).filter((e) => e.reason === 'HistoryGap');
      // Act + Assess: within the stream's maximum record age the change may still come: nothing reported
      h.clock.advance(3_600_000);
      const young = await h.run();
      expect(young.history.lagMs.p).toEqual(expect.any(Number));
      expect(young.repairs.HistoryGap).toBe(0);
      expect(await gaps()).toEqual([]);
      // past it (6 h and 10 minutes after the release), the missing holding is a gap: reported once, for a only
      h.clock.advance(6 * 3_600_000);
      const old = await h.run();
      expect(old.repairs.HistoryGap).toBe(1);
      expect(old.history.eventsChecked).toBe(2);
      expect(await gaps()).toEqual([
        expect.objectContaining({ object: 'lease/10.9.0.1', message: expect.stringContaining('ClaimExpired') }),
      ]);
      h.clock.advance(15 * 60_000);
      expect((await h.run()).repairs.HistoryGap).toBe(0);
      expect(await gaps()).toHaveLength(1);
    });

    it('HistoryLag counts a change the stream function failed to record from its time until it is recorded; an idle pool reads 0', async () => {
      // Prepare: p's claim and release in one batch whose holding write fails; q is idle
      const h = await reconcilerHarness({ engine: streams.unfollowed });
      const stream = streams.stream();
      opened.push(stream);
      await h.pool('p', ['10.9.0.0/29']);
      await h.pool('q', ['10.9.1.0/29']);
      expect((await h.api.call('POST', '/v1/pools/p/claims', { name: 'a', owner: owner('a') })).status).toBe(201);
      expect((await h.api.call('DELETE', '/v1/pools/p/claims/a')).status).toBe(204);
      const t = Math.floor(h.clock.t / 1000) - 30;
      const records = stamped(await stream.read(), t);
      let failures = 1;
      const faulty = h.api.sibling({ table: failingHoldingWrites(h.api.container.table, () => failures-- > 0) });
      const failed = (await mirrorOf(faulty.container)({ Records: records })).batchItemFailures.map(
        (f) => f.itemIdentifier,
      );
      expect(failed.length).toBeGreaterThan(0);
      // Act + Assess: pending since t
      expect((await h.run()).history.lagMs).toEqual({ p: h.clock.t - t * 1000, q: 0 });
      h.clock.advance(60_000);
      expect((await h.run()).history.lagMs).toEqual({ p: h.clock.t - t * 1000, q: 0 });
      // the stream delivers again from the lowest failed record, in the same second: recorded, so 0, and the note goes
      const first = records.findIndex((r) => failed.includes(r.dynamodb!.SequenceNumber!));
      expect((await mirrorOf(h.api.container)({ Records: records.slice(first) })).batchItemFailures).toEqual([]);
      expect((await h.run()).history.lagMs).toEqual({ p: 0, q: 0 });
      expect((await h.get({ PK: 'HISTMARKS', SK: 'p' }))?.pendingSince).toBeUndefined();
    });

    it("a noted change still unrecorded past the stream's record age is reported as a HistoryGap once, and the lag goes back to 0", async () => {
      // Prepare: a client's release (no event) whose holding write fails, and the stream never delivers it again
      const h = await reconcilerHarness({ engine: streams.unfollowed });
      const stream = streams.stream();
      opened.push(stream);
      await h.pool('p', ['10.9.0.0/29']);
      expect(
        (await h.api.call('POST', '/v1/pools/p/claims', { name: 'a', owner: owner('a'), addresses: ['10.9.0.3'] }))
          .status,
      ).toBe(201);
      expect((await h.api.call('DELETE', '/v1/pools/p/claims/a')).status).toBe(204);
      const t = Math.floor(h.clock.t / 1000) - 30;
      const faulty = h.api.sibling({ table: failingHoldingWrites(h.api.container.table, () => true) });
      expect(
        (await mirrorOf(faulty.container)({ Records: stamped(await stream.read(), t) })).batchItemFailures.length,
      ).toBeGreaterThan(0);
      const gaps = async () => (await h.events('p')).filter((e) => e.reason === 'HistoryGap');
      // Act + Assess: within the record age it is lag, not a gap
      h.clock.advance(6 * 3_600_000);
      const young = await h.run();
      expect(young.history.lagMs.p).toBe(h.clock.t - t * 1000);
      expect(await gaps()).toEqual([]);
      // past it, a gap: reported once, the note cleared, the lag 0
      h.clock.advance(15 * 60_000);
      const old = await h.run();
      expect(old.repairs.HistoryGap).toBe(1);
      expect(old.history.lagMs.p).toBe(0);
      expect(await gaps()).toEqual([
        expect.objectContaining({ object: 'lease/10.9.0.3', message: expect.stringContaining('failed to record it') }),
      ]);
      h.clock.advance(15 * 60_000);
      expect((await h.run()).repairs.HistoryGap).toBe(0);
      expect(await gaps()).toHaveLength(1);
    });

    it('sets the retention on every holding item, and keeps none with historyDays 0', async () => {
      // Prepare
      const kept = await stack({ historyDays: 7 });
      const none = await stack({ historyDays: 0 });
      const addresses: string[] = [];
      for (const s of [kept, none]) {
        addresses.push((await claim(s.api, 'a')).address);
        expect((await s.api.call('DELETE', '/v1/pools/p/claims/a')).status).toBe(204);
        // Act
        await s.drain();
      }
      // Assess
      const [item] = await holdingItems(kept.api, addresses[0]!);
      expect(item!.ttl).toBe(Math.ceil((Date.parse(item!.to as string) + 7 * 86_400_000) / 1000));
      expect((await kept.api.call('GET', '/v1/pools/p')).body.historyDays).toBe(7);
      expect(await holdingItems(none.api, addresses[1]!)).toEqual([]);
    });

    it('refuses bad history queries with a 400 and a code', async () => {
      const { api } = await stack();
      for (const path of [
        '/v1/pools/p/addresses/10.7.0.1/history?at=yesterday',
        '/v1/pools/p/addresses/10.7.0.1/history?at=2026-11-25T14:02:00Z&from=2026-11-25T14:00:00Z',
        '/v1/pools/p/addresses/10.7.0.1/history?from=2026-11-25T14:02:00Z&to=2026-11-25T14:00:00Z',
        '/v1/pools/p/addresses/10.7.0.1/history?cursor=nope',
        '/v1/pools/p/history',
        '/v1/pools/p/history?cidr=10.0.0.0/16',
      ]) {
        const res = await api.call('GET', path);
        expect(res.status, path).toBe(400);
        expect(res.body.code, path).toBe('InvalidArgument');
      }
      expect((await api.call('GET', '/v1/pools/nope/addresses/10.7.0.1/history')).status).toBe(404);
    });
  });

  describe(`Address history of a block lease (${streams.engine.name}; issue 35)`, () => {
    /** A block pool `p` of IPv4 blocks of `block` bits over `cidr`, and a drain of its stream that must not fail. */
    async function blockStack(block: number, cidr: string): Promise<{ api: TestApi; drain: () => Promise<void> }> {
      const api = await testApi({}, {}, undefined, streams.engine);
      const stream = streams.stream();
      opened.push(stream);
      expect((await api.call('POST', '/v1/pools', { name: 'p', blockPrefixLength: { IPv4: block } })).status).toBe(201);
      expect((await api.call('POST', '/v1/pools/p/ranges', { cidr })).status).toBe(201);
      const drain = async () => expect((await stream.drain(mirrorOf(api.container))).failed).toEqual([]);
      return { api, drain };
    }

    it("records a block claim's holdings under the block's network address: a release, then another owner's claim of the block", async () => {
      // Prepare: a block pool of two /26 blocks
      const { api, drain } = await blockStack(26, '10.9.0.0/25');
      const a = await claim(api, 'a');
      expect((await api.call('DELETE', '/v1/pools/p/claims/a')).status).toBe(204);
      await drain();
      // Act: the same block claimed again by another owner
      const b = await claim(api, 'b', { prefixes: [`${a.address}/26`] });
      await drain();
      const body = await history(api, a.address);
      // Assess: two holdings of the block, newest first; `at` and the range's history answer them
      expect(b.address).toBe(a.address);
      expect((body.items as Record<string, unknown>[]).map((h) => [h.claim, h.endReason])).toEqual([
        ['b', undefined],
        ['a', 'released'],
      ]);
      expect(((await history(api, a.address, `?at=${b.createdAt}`)).holding as Record<string, unknown>).claim).toBe(
        'b',
      );
      const block = (await api.call('GET', '/v1/pools/p/history?cidr=10.9.0.0/25')).body.items as Record<
        string,
        unknown
      >[];
      expect(block.map((h) => h.claim)).toEqual(['b', 'a']);
    });

    it('reads the history of a large block by its CIDR (counted in blocks, up to 256) or by any address inside it', async () => {
      // Prepare: a block pool of two /16 blocks; 10.17.0.0/16 held by a, released, then held by b
      const { api, drain } = await blockStack(16, '10.16.0.0/15');
      await claim(api, 'a', { prefixes: ['10.17.0.0/16'] });
      expect((await api.call('DELETE', '/v1/pools/p/claims/a')).status).toBe(204);
      const b = await claim(api, 'b', { prefixes: ['10.17.0.0/16'] });
      await drain();
      // Act: the block, the range (two blocks), a CIDR inside the block, and 512 blocks
      const reads = await Promise.all(
        ['10.17.0.0/16', '10.16.0.0/15', '10.17.3.0/24', '10.0.0.0/7'].map((cidr) =>
          api.call('GET', `/v1/pools/p/history?cidr=${cidr}`),
        ),
      );
      // Assess: one block's holdings, newest first, whichever CIDR covers or lies in it
      for (const r of reads.slice(0, 3)) {
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        expect((r.body.items as Record<string, unknown>[]).map((h) => [h.address, h.claim, h.endReason])).toEqual([
          ['10.17.0.0', 'b', undefined],
          ['10.17.0.0', 'a', 'released'],
        ]);
      }
      expect(reads[3]!.status).toBe(400);
      expect(reads[3]!.body.code).toBe('InvalidArgument');
      expect(reads[3]!.body.detail).toMatch(/512 blocks/);
      // An address inside the block: the block's holdings, and who held it at an instant
      const inside = (await history(api, '10.17.3.4')).items as Record<string, unknown>[];
      expect(inside.map((h) => [h.address, h.claim])).toEqual([
        ['10.17.0.0', 'b'],
        ['10.17.0.0', 'a'],
      ]);
      expect((await at(api, '10.17.255.255', Date.parse(b.createdAt)))?.claim).toBe('b');
      expect((await history(api, '10.16.3.4')).items).toEqual([]);
    });
  });
}

/** Records as a batch stamped at one second (DynamoDB's ApproximateCreationDateTime). */
function stamped(records: readonly DynamoDBRecord[], seconds: number): DynamoDBRecord[] {
  return records.map((r) => ({ ...r, dynamodb: { ...r.dynamodb, ApproximateCreationDateTime: seconds } }));
}

/** The pool's history mark item, as stored (undefined while the marks ride on summary chunks only). */
async function markItem(api: TestApi): Promise<Item | undefined> {
  return api.container.table.get({ PK: 'HISTMARKS', SK: 'p' });
}

/** A table whose puts of holding items fail while `fail()` says so (the history write of a batch failing half way). */
function failingHoldingWrites(inner: Table, fail: (item: Item) => boolean): Table {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'write') {
        return async (op: WriteOp): Promise<WriteResult> => {
          if (op.kind === 'put' && (op.item as Item).entity === 'holding' && fail(op.item as Item))
            throw Object.assign(new Error('throttled'), { name: 'ProvisionedThroughputExceededException' });
          return target.write(op);
        };
      }
      const value = Reflect.get(target, prop, receiver) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}
