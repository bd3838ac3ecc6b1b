import { describe, expect, it } from 'vitest';
import { keys, type Key } from '../../shared/adapters/dynamodb/keys.ts';
import type { TxVerdict, WriteOp } from '../../shared/adapters/dynamodb/table.ts';
import type { ReconcileStore } from '../../shared/core/use-cases/reconcile-ports.ts';
import type { TestEngine } from '../support/engines.ts';
import { allItems } from '../support/items.ts';
import { PassThroughTable } from '../support/pass-through-table.ts';
import { owner, reconcilerHarness, type ReconcilerHarness } from '../support/reconciler.ts';

const MIN = 60_000;

/** The reconciler and the ranges of a pool (rows 11, 13 and 21), on one table engine. */
export function reconcilerRangesCases(engine: TestEngine): void {
  const harness = (): Promise<ReconcilerHarness> => reconcilerHarness({ engine });

  describe(`Reconciler: row 13, leases outside every range (${engine.name}; issue 15, defect 5)`, () => {
    /** Pool 'p' with ranges 'gone' (10.0.0.0/24) and 'kept' (10.1.0.0/24); claim 'web' holds 10.0.0.7 of 'gone'. */
    async function leaseInGoneRange(h: ReconcilerHarness): Promise<{ uid: string }> {
      await h.pool('p', [
        { cidr: '10.0.0.0/24', name: 'gone' },
        { cidr: '10.1.0.0/24', name: 'kept' },
      ]);
      const web = await h.claim('p', { name: 'web', owner: owner('a'), addresses: ['10.0.0.7'] });
      // The range item is removed under the claim, as the code before the post-commit check could do.
      await h.remove(keys.range('p', 'gone'));
      return web;
    }

    it('reports a held lease in no range once (LeaseOutsideRange) and leaves the lease and its claim alone', async () => {
      // Prepare
      const h = await harness();
      const web = await leaseInGoneRange(h);
      h.clock.advance(MIN + 1_000);
      // Act: two runs
      const first = await h.run();
      const second = await h.run();
      // Assess
      expect(first.repairs.LeaseOutsideRange).toBe(1);
      expect(second.repairs.LeaseOutsideRange).toBe(0);
      expect(await h.get(keys.lease('p', '10.0.0.7'))).toMatchObject({
        claim: 'web',
        claimUid: web.uid,
        range: 'gone',
      });
      expect((await h.api.call('GET', '/v1/pools/p/claims/web')).status).toBe(200);
      const events = await h.events('p');
      expect(events).toEqual([expect.objectContaining({ reason: 'LeaseOutsideRange', object: 'lease/10.0.0.7' })]);
      expect(events[0]!.message).toContain('claim web');
    });

    it('waits the orphan grace before reporting (a claim in flight releases its own lease)', async () => {
      const h = await harness();
      await leaseInGoneRange(h);
      h.clock.advance(MIN - 1_000);
      expect((await h.run()).repairs.LeaseOutsideRange).toBe(0);
      h.clock.advance(2_000);
      expect((await h.run()).repairs.LeaseOutsideRange).toBe(1);
    });

    it('releases an orphaned lease in no range as LeaseOrphaned (row 3), and does not report it', async () => {
      // Prepare: the claim goes too (its item only, as a partial write would leave it)
      const h = await harness();
      await leaseInGoneRange(h);
      await h.remove(keys.claim('p', 'web'));
      h.clock.advance(MIN + 1_000);
      // Act
      const report = await h.run();
      // Assess
      expect(report.repairs).toMatchObject({ LeaseOrphaned: 1, LeaseOutsideRange: 0 });
      expect(await h.get(keys.lease('p', '10.0.0.7'))).toBeUndefined();
    });

    it('releases an orphaned block lease (its claim item gone) as LeaseOrphaned, and the block is handed out again (issue 35)', async () => {
      // Prepare: a block pool of 4 /26 blocks, all claimed; claim b2's item vanishes (a partial write), its lease stays
      const h = await harness();
      expect((await h.api.call('POST', '/v1/pools', { name: 'b', blockPrefixLength: { IPv4: 26 } })).status).toBe(201);
      expect((await h.api.call('POST', '/v1/pools/b/ranges', { cidr: '10.9.0.0/24' })).status).toBe(201);
      const held = [];
      for (let i = 0; i < 4; i += 1) held.push(await h.claim('b', { name: `b${i}`, owner: owner(`b${i}`) }));
      const orphan = held[2]!.addresses[0]!.address;
      await h.remove(keys.claim('b', 'b2'));
      expect((await h.api.call('POST', '/v1/pools/b/claims', { name: 'x', owner: owner('x') })).body.code).toBe(
        'RangeFull',
      );
      h.clock.advance(MIN + 1_000);
      // Act
      const report = await h.run();
      const left = await h.get(keys.lease('b', orphan));
      const again = await h.api.call('POST', '/v1/pools/b/claims', { name: 'x', owner: owner('x') });
      // Assess: the block's lease is gone, and the next claim gets that block
      expect(report.repairs).toMatchObject({ LeaseOrphaned: 1 });
      expect(left).toBeUndefined();
      expect(again.status, JSON.stringify(again.body)).toBe(201);
      expect((again.body.addresses as { prefix: string }[])[0]!.prefix).toBe(`${orphan}/26`);
    });

    it('does not report leases of a Terminating range, nor a lease whose range is gone but that another range covers', async () => {
      // Prepare: 'lonely' is Terminating with its lease; 'narrow' is removed, but 'wide' (Ready) covers its lease
      const h = await harness();
      await h.pool('p', [
        { cidr: '10.0.0.0/25', name: 'narrow' },
        { cidr: '10.1.0.0/24', name: 'lonely' },
      ]);
      await h.claim('p', { name: 'in-narrow', owner: owner('a'), addresses: ['10.0.0.5'] });
      await h.claim('p', { name: 'in-lonely', owner: owner('b'), addresses: ['10.1.0.5'] });
      expect((await h.api.call('POST', '/v1/pools/p/ranges', { cidr: '10.0.0.0/24', name: 'wide' })).status).toBe(201);
      expect((await h.api.call('DELETE', '/v1/pools/p/ranges/lonely')).status).toBe(202);
      await h.remove(keys.range('p', 'narrow'));
      h.clock.advance(MIN + 1_000);
      // Act
      const report = await h.run();
      // Assess
      expect(report.repairs.LeaseOutsideRange).toBe(0);
      expect(await h.events('p')).toEqual([]);
    });

    it("confirms with a consistent read of the pool: a range the run's views missed prevents the report", async () => {
      // Prepare: the run's list of pool views lacks 'gone' (as if read before it was created)
      const h = await harness();
      await h.pool('p', [{ cidr: '10.0.0.0/24', name: 'gone' }]);
      await h.claim('p', { name: 'web', owner: owner('a'), addresses: ['10.0.0.7'] });
      h.clock.advance(MIN + 1_000);
      const withoutRanges = (store: ReconcileStore): ReconcileStore =>
        Object.assign(Object.create(store) as ReconcileStore, {
          listPoolViews: async () => (await store.listPoolViews()).map((v) => ({ ...v, ranges: [] })),
        });
      // Act
      const report = await h.run({ wrap: withoutRanges });
      // Assess
      expect(report.repairs.LeaseOutsideRange).toBe(0);
      expect(await h.events('p')).toEqual([]);
    });
  });

  describe(`Reconciler: row 11, finalizing a legacy range and its lock (${engine.name})`, () => {
    const locks = async (h: ReconcilerHarness) =>
      (await allItems(h.table))
        .filter((i) => i.entity === 'legacySlot')
        .map((i) => `${i.SK as string}=${i.range as string}`)
        .sort();

    /** A pool 'p' whose legacy IPv4 range 'leg' held claim 'c' when its deletion was asked for (202), then lost it. */
    async function terminatingLegacy(h: ReconcilerHarness): Promise<void> {
      await h.pool('p', [{ cidr: '10.5.0.0/24', name: 'leg', legacy: true }]);
      await h.claim('p', { name: 'c', owner: owner('a'), addresses: ['10.5.0.9'] });
      expect((await h.api.call('DELETE', '/v1/pools/p/ranges/leg')).status).toBe(202);
      expect((await h.api.call('DELETE', '/v1/pools/p/claims/c')).status).toBe(204);
      h.clock.advance(11_000);
    }

    it('removes the legacy lock with the range, so a new legacy range of the family can be created', async () => {
      // Prepare
      const h = await harness();
      await terminatingLegacy(h);
      expect(await locks(h)).toEqual(['LEGACY#IPv4=leg']);
      // The release of c bumped one shard of the range's freed counter (writes/freed.ts).
      const counters = async () =>
        (await allItems(h.table)).filter((i) => i.entity === 'freed' || i.entity === 'seals').map((i) => i.n);
      expect(await counters()).toEqual([1]);
      // Act
      const report = await h.run();
      // Assess: the range goes with its lock, and after it its counter (dropFreed)
      expect(report.repairs.RangeFinalized).toBe(1);
      expect(await h.get(keys.range('p', 'leg'))).toBeUndefined();
      expect(await locks(h)).toEqual([]);
      expect(await counters()).toEqual([]);
      expect(
        (await h.api.call('POST', '/v1/pools/p/ranges', { cidr: '10.6.0.0/24', name: 'leg2', legacy: true })).status,
      ).toBe(201);
      expect(await locks(h)).toEqual(['LEGACY#IPv4=leg2']);
    });

    it('removes a legacy range of a table written before locks existed (no lock item)', async () => {
      // Prepare: the lock item is missing, as on an old table
      const h = await harness();
      await terminatingLegacy(h);
      await h.remove(keys.legacyLock('p', 'IPv4'));
      // Act
      const report = await h.run();
      // Assess
      expect(report.repairs.RangeFinalized).toBe(1);
      expect(report.errors).toEqual([]);
      expect(await h.get(keys.range('p', 'leg'))).toBeUndefined();
      expect(await locks(h)).toEqual([]);
    });

    it("leaves a lock that names another legacy range alone when removing an old table's second legacy range", async () => {
      // Prepare: an old table let two legacy IPv4 ranges in; the lock names the other one, 'keep'
      const h = await harness();
      await terminatingLegacy(h);
      const { deletionRequestedAt: _, ...leg } = (await h.get(keys.range('p', 'leg')))!;
      await h.put({ ...leg, ...keys.range('p', 'keep'), name: 'keep', cidr: '10.7.0.0/24', state: 'Ready' });
      await h.put({ ...(await h.get(keys.legacyLock('p', 'IPv4')))!, range: 'keep' });
      // Act
      const report = await h.run();
      // Assess
      expect(report.repairs.RangeFinalized).toBe(1);
      expect(await h.get(keys.range('p', 'leg'))).toBeUndefined();
      expect(await h.get(keys.range('p', 'keep'))).toBeDefined();
      expect(await locks(h)).toEqual(['LEGACY#IPv4=keep']);
    });
  });

  describe(`Reconciler: row 21, grown blocks no range is made from (${engine.name}; issue 35)`, () => {
    const topClaims = async (h: ReconcilerHarness) =>
      ((await h.api.call('GET', '/v1/pools/top/claims')).body.items as { name: string }[]).map((c) => c.name).sort();

    it("releases a grown block whose range went without giving it back, once past the orphan grace, and keeps the young, the used and others'", async () => {
      // Prepare: top hands out /29 blocks (6 addresses); pods grows from it below 6 free, so claim 'a' takes block 1
      // (pods-g4-1, range g4-1) and claim 'b''s crossing block 2. Both go, then g4-1 is removed while the release of its
      // block times out (releaseGrownSource is best effort): the block is left held by Pool/pods.
      const h = await harness();
      expect(
        (
          await h.api.call('POST', '/v1/pools', {
            name: 'top',
            openToChildPools: true,
            blockPrefixLength: { IPv4: 29 },
          })
        ).status,
      ).toBe(201);
      expect((await h.api.call('POST', '/v1/pools/top/ranges', { cidr: '10.9.0.0/26' })).status).toBe(201);
      const pods = { name: 'pods', grow: { pool: 'top', belowFree: 6, maxBlocks: 4 } };
      expect((await h.api.call('POST', '/v1/pools', pods)).status).toBe(201);
      for (const name of ['a', 'b']) await h.claim('pods', { name, owner: owner(name) });
      // A block of a pool that is gone, and a claim of a Pool owner that no growth names so.
      await h.claim('top', { name: 'gone-g4-1', owner: { kind: 'Pool', name: 'gone', uid: 'pool-gone' } });
      await h.claim('top', { name: 'web', owner: { kind: 'Pool', name: 'x', uid: 'pool-x' } });
      for (const name of ['a', 'b'])
        expect((await h.api.call('DELETE', `/v1/pools/pods/claims/${name}`)).status).toBe(204);
      const block = (await h.api.call('GET', '/v1/pools/pods/ranges/g4-1')).body.cidr as string;
      const timingOut = h.api.sibling({
        clock: h.clock,
        table: new FailingWrites(h.table, keys.claim('top', 'pods-g4-1')),
      });
      expect((await timingOut.call('DELETE', '/v1/pools/pods/ranges/g4-1')).status).toBe(202);
      h.clock.advance(5_000);
      expect((await timingOut.call('DELETE', '/v1/pools/pods/ranges/g4-1')).status).toBe(204);
      expect(await topClaims(h)).toEqual(['gone-g4-1', 'pods-g4-1', 'pods-g4-2', 'web']);
      // Act: a run within the grace; a growth's claim made (its range not yet); a run past the grace
      h.clock.advance(25_000);
      const young = await h.run();
      h.clock.advance(10_000);
      await h.claim('top', { name: 'pods-g4-3', owner: { kind: 'Pool', name: 'pods', uid: 'pool-pods' } });
      h.clock.advance(MIN - 10_000);
      const old = await h.run();
      // Assess: only the two blocks no range is made from, once past the grace, each with its event
      expect(young.repairs.GrownBlockReleased ?? 0).toBe(0);
      expect(old.errors).toEqual([]);
      expect(old.repairs.GrownBlockReleased).toBe(2);
      expect(await topClaims(h)).toEqual(['pods-g4-2', 'pods-g4-3', 'web']);
      const events = await h.events('top');
      expect(events.map((e) => `${e.reason} ${e.object}`).sort()).toEqual([
        'GrownBlockReleased claim/gone-g4-1',
        'GrownBlockReleased claim/pods-g4-1',
      ]);
      expect(events.find((e) => e.object === 'claim/pods-g4-1')!.message).toContain(block);
      expect((await allItems(h.table)).filter((i) => i.entity === 'lease' && i.pool === 'top')).toHaveLength(3);
    });
  });
}

/** A table whose transactions that delete `key` time out (nothing written): a best-effort release that failed. */
class FailingWrites extends PassThroughTable {
  constructor(
    inner: ConstructorParameters<typeof PassThroughTable>[0],
    private readonly key: Key,
  ) {
    super(inner);
  }
  override transact(ops: readonly WriteOp[]): Promise<TxVerdict[] | undefined> {
    const deletesKey = ops.some((op) => op.kind === 'delete' && op.key.PK === this.key.PK && op.key.SK === this.key.SK);
    if (deletesKey) return Promise.reject(new Error('the request timed out (test)'));
    return this.inner.transact(ops);
  }
}
