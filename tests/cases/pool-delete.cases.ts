import { afterEach, describe, expect, it } from 'vitest';
import { testApi, type TestApi } from '../support/api.ts';
import { allItems } from '../support/items.ts';
import { mirrorOf } from '../support/legacy.ts';
import { ManualClock } from '../support/fakes.ts';
import type { LeaseStream, StreamEngine } from '../support/lease-stream.ts';
import { reconcile } from '../../shared/core/reconciler/reconcile.ts';
import { testSettings } from '../support/reconciler.ts';
import { rangeToItem } from '../../shared/adapters/dynamodb/codec.ts';
import { RangeState, type Range } from '../../shared/core/model.ts';
import type { Table, WriteOp } from '../../shared/adapters/dynamodb/table.ts';

// Issue 33, items 3 and 5: what a deleted pool leaves must never reach a pool created again under its name, and a
// deletion that fails part-way is finished later, never half done.

const ACCOUNT = '123456789012';
const alice = { 'x-ipam-principal': `arn:aws:iam::${ACCOUNT}:role/alice` };
const mallory = { 'x-ipam-principal': `arn:aws:iam::${ACCOUNT}:role/mallory` };
const owner = (name: string) => ({ kind: 'Pod', name, uid: `uid-${name}` });

/** Whether a write removes one of pool p's range items (in a transaction or alone). */
const removesRangeOfP = (op: WriteOp): boolean =>
  op.kind === 'delete' && op.key.PK === 'POOL#p' && op.key.SK.startsWith('RANGE#');

/**
 * `inner` with one planned interruption, on any engine: the `nth` call (write or transaction) that removes a range of
 * pool p first runs `meanwhile` (what another process does between two parts of a deletion), then either goes ahead or
 * throws (`kill`: the Lambda was stopped there). Reads pass through.
 */
function interruptedTable(inner: Table, plan: { nth: number; meanwhile?: () => Promise<void>; kill: boolean }): Table {
  let seen = 0;
  const interrupt = async (ops: readonly WriteOp[]): Promise<void> => {
    if (!ops.some(removesRangeOfP) || (seen += 1) !== plan.nth) return;
    await plan.meanwhile?.();
    if (plan.kill) throw new Error('the Lambda was stopped here (test)');
  };
  return {
    name: inner.name,
    get: (key) => inner.get(key),
    batchGet: (keys, attributes) => inner.batchGet(keys, attributes),
    query: (query) => inner.query(query),
    describe: () => inner.describe(),
    write: async (op) => (await interrupt([op]), inner.write(op)),
    transact: async (ops) => (await interrupt(ops), inner.transact(ops)),
  };
}

export function poolDeleteCases(streams: StreamEngine): void {
  const opened: LeaseStream[] = [];
  afterEach(() => {
    for (const s of opened.splice(0)) s.close();
  });

  async function stack(clock: ManualClock): Promise<{ api: TestApi; drain: () => Promise<void> }> {
    const api = await testApi({ clock, viewMaxAgeMs: 0 }, {}, undefined, streams.engine);
    const stream = streams.stream();
    opened.push(stream);
    const drain = async () => {
      const { failed } = await stream.drain(mirrorOf(api.container));
      expect(failed).toEqual([]);
    };
    return { api, drain };
  }

  /**
   * Pool p with `ranges` /30s (10.20.<i>.0/30, named r<i>): the first through the API, the others written as its
   * items are (one put each, not a transaction each: the suite's time), with a range change's new generation last.
   */
  async function poolWithRanges(api: TestApi, clock: ManualClock, ranges: number): Promise<void> {
    expect((await api.call('POST', '/v1/pools', { name: 'p' })).status).toBe(201);
    const range = (i: number): Range => ({
      pool: 'p',
      name: `r${i}`,
      cidr: `10.20.${i}.0/30`,
      family: 'IPv4',
      state: RangeState.Ready,
      legacy: false,
      createdAt: new Date(clock.nowMs()).toISOString(),
    });
    await Promise.all(
      Array.from({ length: ranges - 1 }, (_, i) =>
        api.container.table.write({ kind: 'put', item: rangeToItem(range(i + 1)) }),
      ),
    );
    expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: range(0).cidr, name: 'r0' })).status).toBe(201);
    expect((await api.call('GET', '/v1/pools/p/ranges')).body.items).toHaveLength(ranges);
  }

  const runReconciler = (api: TestApi, clock: ManualClock) =>
    reconcile({ ...api.container.deps, settings: testSettings }, { deadlineMs: clock.nowMs() + 60_000 });

  describe(`Pool deletion and a pool created again under its name (${streams.engine.name})`, () => {
    it('shows the new pool nothing of the old one: no holdings, owners, events, and no old lease holds an address', async () => {
      // Prepare: alice's pool, with a reuse delay, history and access; a labelled claim released into a hold.
      const clock = new ManualClock(Date.now());
      const { api, drain } = await stack(clock);
      const spec = { name: 'p', reuseDelaySeconds: 3600, access: { administrators: [alice['x-ipam-principal']] } };
      expect((await api.call('POST', '/v1/pools', spec, alice)).status).toBe(201);
      expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.7.0.0/29' }, alice)).status).toBe(201);
      const made = await api.call(
        'POST',
        '/v1/pools/p/claims',
        { name: 'db', owner: owner('db'), labels: { team: 'payments' } },
        alice,
      );
      expect(made.status).toBe(201);
      const address = (made.body.addresses as { address: string }[])[0]!.address;
      expect((await api.call('DELETE', '/v1/pools/p/claims/db', undefined, alice)).status).toBe(204);
      clock.advance(1000);
      await drain();
      expect(
        ((await api.call('GET', `/v1/pools/p/addresses/${address}/history`, undefined, alice)).body.items ?? []).length,
      ).toBeGreaterThan(0);

      // Act: the pool goes (no claim is left: the hold is a Released lease), and mallory makes the name again.
      clock.advance(1000);
      expect((await api.call('DELETE', '/v1/pools/p', undefined, alice)).status).toBe(204);
      clock.advance(1000);
      await drain();
      const again = { name: 'p', access: { administrators: [mallory['x-ipam-principal']] } };
      expect((await api.call('POST', '/v1/pools', again, mallory)).status).toBe(201);
      expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.7.0.0/29' }, mallory)).status).toBe(201);
      await drain();

      // Assess: nothing of the old pool is read, and the old hold does not keep the address.
      const history = await api.call('GET', `/v1/pools/p/addresses/${address}/history`, undefined, mallory);
      expect(history.status).toBe(200);
      expect(history.body.items).toEqual([]);
      const ownerHistory = await api.call('GET', '/v1/pools/p/owners/uid-db/history', undefined, mallory);
      expect(ownerHistory.body.items).toEqual([]);
      const block = await api.call('GET', '/v1/pools/p/history?cidr=10.7.0.0/29', undefined, mallory);
      expect(block.body.items).toEqual([]);
      // Asked about an instant, or a window, before the new pool existed: nobody, not an error
      const before = new Date(clock.nowMs() - 60_000).toISOString();
      const atBefore = await api.call(
        'GET',
        `/v1/pools/p/addresses/${address}/history?at=${before}`,
        undefined,
        mallory,
      );
      expect(atBefore.status, JSON.stringify(atBefore.body)).toBe(200);
      expect(atBefore.body.holding).toBeNull();
      const windowBefore = await api.call(
        'GET',
        `/v1/pools/p/addresses/${address}/history?to=${before}`,
        undefined,
        mallory,
      );
      expect(windowBefore.status, JSON.stringify(windowBefore.body)).toBe(200);
      expect(windowBefore.body.items).toEqual([]);
      const events = await api.call('GET', '/v1/pools/p/events', undefined, mallory);
      expect(events.body.items).toEqual([]);
      const pool = await api.call('GET', '/v1/pools/p', undefined, mallory);
      expect(pool.body.utilization).toEqual({ IPv4: { size: 6, used: 0, releasing: 0, free: 6 } });
      const taken = await api.call(
        'POST',
        '/v1/pools/p/claims',
        { name: 'web', owner: owner('web'), addresses: [address] },
        mallory,
      );
      expect(taken.status, JSON.stringify(taken.body)).toBe(201);
    });

    it('finishes a deletion of 45 ranges whose removal met a range removed meanwhile, never answering 404 for the pool', async () => {
      // Prepare: 45 ranges; while the deletion runs, another process (the reconciler's finalize of a Terminating
      // range) removes one of the ranges not yet removed.
      const clock = new ManualClock(Date.now());
      const { api } = await stack(clock);
      await poolWithRanges(api, clock, 45);
      const table = interruptedTable(api.container.table, {
        nth: 2,
        kill: false,
        meanwhile: async () =>
          void (await api.container.table.write({ kind: 'delete', key: { PK: 'POOL#p', SK: 'RANGE#r9' } })),
      });
      const deleting = api.sibling({ clock, viewMaxAgeMs: 0, table });
      // Act
      const deleted = await deleting.call('DELETE', '/v1/pools/p');
      // Assess: done, and the name comes back empty
      expect(deleted.status).toBe(204);
      expect((await api.call('GET', '/v1/pools/p')).status).toBe(404);
      expect((await api.call('POST', '/v1/pools', { name: 'p' })).status).toBe(201);
      expect((await api.call('GET', '/v1/pools/p/ranges')).body.items).toEqual([]);
    });

    it('finishes a deletion of 45 ranges stopped part-way (a killed Lambda) later; meanwhile the name is refused with 409 PoolTerminating', async () => {
      // Prepare
      const clock = new ManualClock(Date.now());
      const { api } = await stack(clock);
      await poolWithRanges(api, clock, 45);
      const killed = api.sibling({
        clock,
        viewMaxAgeMs: 0,
        table: interruptedTable(api.container.table, { nth: 2, kill: true }),
      });
      // Act 1: the deletion stops after its first part
      const deleted = await killed.call('DELETE', '/v1/pools/p');
      // Assess 1: accepted, not found nor failed; the pool is gone for reads, and its name is not free yet
      expect(deleted.status, JSON.stringify(deleted.body)).toBe(202);
      expect(deleted.body).toEqual({ name: 'p', state: 'Terminating' });
      expect((await api.call('GET', '/v1/pools/p')).status).toBe(404);
      expect((await api.call('GET', '/v1/pools/p/ranges')).status).toBe(404);
      expect((await api.call('POST', '/v1/pools/p/claims', { name: 'c', owner: owner('c') })).status).toBe(404);
      expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.30.0.0/24' })).status).toBe(404);
      expect(((await api.call('GET', '/v1/pools')).body.items ?? []).map((p) => p.name)).toEqual([]);
      const refused = await api.call('POST', '/v1/pools', { name: 'p' });
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({ code: 'PoolTerminating', detail: expect.stringContaining('being deleted') });
      // Act 2: the reconciler's run finishes it
      clock.advance(60_000);
      const report = await runReconciler(api, clock);
      // Assess 2: nothing of the pool is left; the name comes back with none of the old ranges
      expect(report.errors).toEqual([]);
      expect((await api.call('DELETE', '/v1/pools/p')).status).toBe(404);
      expect((await api.call('POST', '/v1/pools', { name: 'p' })).status).toBe(201);
      expect((await api.call('GET', '/v1/pools/p/ranges')).body.items).toEqual([]);
      expect(
        (await api.container.table.query({ partition: 'POOL#p', consistent: true })).items.map((i) => i.SK),
      ).toEqual(['#POOL']);
    });

    it('gives back a claim a warm container commits from a view read before the mark: 404, and nothing of it is left', async () => {
      // Prepare: a container that read the pool (a view kept a minute); the deletion stops after its mark
      const clock = new ManualClock(Date.now());
      const { api } = await stack(clock);
      await poolWithRanges(api, clock, 2);
      const warm = api.sibling({ clock, viewMaxAgeMs: 60_000 });
      expect((await warm.call('GET', '/v1/pools/p/claims')).status).toBe(200);
      const killed = api.sibling({
        clock,
        viewMaxAgeMs: 0,
        table: interruptedTable(api.container.table, { nth: 1, kill: true }),
      });
      expect((await killed.call('DELETE', '/v1/pools/p')).status).toBe(202);
      // Act
      const late = await warm.call('POST', '/v1/pools/p/claims', { name: 'late', owner: owner('late') });
      // Assess: refused after its commit (the generation changed, no pool), its leases given back
      expect(late.status, JSON.stringify(late.body)).toBe(404);
      expect(await api.container.table.get({ PK: 'CLAIM#p#late', SK: 'CLAIM' })).toBeUndefined();
      const leases = await Promise.all(
        ['IPv4'].flatMap((family) =>
          [0, 1, 2, 3].map((shard) =>
            api.container.table.query({ index: 'GSI1', partition: `ADDR#p#${family}#${shard}` }),
          ),
        ),
      );
      expect(leases.flatMap((page) => page.items)).toEqual([]);
    });

    it('resumes a deletion stopped at any one of its writes: a repeated DELETE and the finalizer leave nothing of the pool', async () => {
      // Prepare: per stop position n, pool q<n> with a range and a reuse delay, a claim released into a hold (a
      // Released lease, a freed counter, a summary chunk), on one table
      const clock = new ManualClock(Date.now());
      const { api } = await stack(clock);
      const ofPool = (pool: string) => new RegExp(`(^|#)${pool}(#|$)`);
      /** What is left of `pool`, but its tombstone and what stays until its TTL by design (holdings, events). */
      const left = async (pool: string) =>
        (await allItems(api.container.table)).filter(
          (i) =>
            (ofPool(pool).test(i.PK as string) || ofPool(pool).test(i.SK as string)) &&
            !['poolGone', 'holding', 'event'].includes(i.entity as string),
        );
      const answers: number[] = [];
      // Every position in memory; a sample of them on DynamoDB Local (the same code over the reference engine: the suite's time).
      const positions = streams.engine.name === 'memory' ? Array.from({ length: 30 }, (_, i) => i + 1) : [1, 4, 12, 30];
      for (const n of positions) {
        const pool = `q${n}`;
        expect((await api.call('POST', '/v1/pools', { name: pool, reuseDelaySeconds: 600 })).status).toBe(201);
        expect((await api.call('POST', `/v1/pools/${pool}/ranges`, { cidr: '10.50.0.0/29' })).status).toBe(201);
        expect((await api.call('POST', `/v1/pools/${pool}/claims`, { name: 'c', owner: owner('c') })).status).toBe(201);
        expect((await api.call('DELETE', `/v1/pools/${pool}/claims/c`)).status).toBe(204);
        let writes = 0;
        const stopAt = async () => {
          if ((writes += 1) === n) throw new Error('the Lambda was stopped here (test)');
        };
        const inner = api.container.table;
        const stopping: Table = {
          ...inner,
          name: inner.name,
          get: (k) => inner.get(k),
          batchGet: (k, a) => inner.batchGet(k, a),
          query: (q) => inner.query(q),
          describe: () => inner.describe(),
          write: async (op) => (await stopAt(), inner.write(op)),
          transact: async (ops) => (await stopAt(), inner.transact(ops)),
        };
        // Act: the deletion stops at its n-th write; then a DELETE again, and the reconciler's step for the pool
        // (finalizePool: a stop after the pool item went leaves only the pending entry, which a DELETE cannot reach)
        const first = await api
          .sibling({ clock, viewMaxAgeMs: 0, table: stopping })
          .call('DELETE', `/v1/pools/${pool}`);
        answers.push(first.status);
        const again = await api.call('DELETE', `/v1/pools/${pool}`);
        await api.container.deps.pools.finalizePool(pool);
        // Assess: whatever the stop, the deletion finishes and the name is free
        expect([204, 404], `stop at write ${n}: ${first.status} then ${again.status}`).toContain(again.status);
        expect(await left(pool), `stop at write ${n}`).toEqual([]);
        expect((await api.call('POST', '/v1/pools', { name: pool })).status).toBe(201);
      }
      // The positions cover the whole deletion: the mark's stop is an error with nothing written, the last ones none
      expect(answers[0]).toBe(500);
      expect(answers.slice(1).every((status) => status === 202 || status === 204)).toBe(true);
      expect(answers.at(-1)).toBe(204);
    }, 180_000);

    it('answers a DELETE repeated while the pool is Terminating with 202 or 204, and finishes it', async () => {
      // Prepare: a deletion stopped part-way
      const clock = new ManualClock(Date.now());
      const { api } = await stack(clock);
      await poolWithRanges(api, clock, 3);
      const killed = api.sibling({
        clock,
        viewMaxAgeMs: 0,
        table: interruptedTable(api.container.table, { nth: 1, kill: true }),
      });
      expect((await killed.call('DELETE', '/v1/pools/p')).status).toBe(202);
      // Act
      const again = await api.call('DELETE', '/v1/pools/p');
      // Assess
      expect(again.status).toBe(204);
      expect((await api.call('DELETE', '/v1/pools/p')).status).toBe(404);
      expect((await api.container.table.query({ partition: 'POOL#p', consistent: true })).items).toEqual([]);
    });
  });
}
