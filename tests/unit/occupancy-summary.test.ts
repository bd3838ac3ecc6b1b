import { describe, expect, it } from 'vitest';
import { buildContainer } from '../../shared/adapters/composition.ts';
import { keys } from '../../shared/adapters/dynamodb/keys.ts';
import { leaseToItem } from '../../shared/adapters/dynamodb/codec.ts';
import { TableOccupancyStore } from '../../shared/adapters/dynamodb/occupancy-store.ts';
import { MemoryTable } from '../../shared/adapters/memory/memory-table.ts';
import { loadConfig } from '../../shared/config.ts';
import { formatAddress, IpFamily } from '../../shared/core/ip/address.ts';
import { LeaseItemPresence, type LeaseChange } from '../../shared/core/base/lease-change.ts';
import { chunkIndexOf, CHUNK_SIZE } from '../../shared/core/occupancy/chunk.ts';
import { readSummary } from '../../shared/core/occupancy/reader.ts';
import { SummaryMirror } from '../../shared/core/occupancy/summary-mirror.ts';
import { createClaim } from '../../shared/core/use-cases/claims.ts';
import { createPool, getPool } from '../../shared/core/use-cases/pools.ts';
import { createRange } from '../../shared/core/use-cases/ranges.ts';
import { RangeFullError } from '../../shared/core/errors.ts';
import { reconcile } from '../../shared/core/reconciler/reconcile.ts';
import { ManualClock, owner } from '../support/fakes.ts';
import { SeededRandom } from './fakes.ts';

const config = loadConfig({ TABLE_NAME: 'memory', LOCAL_STACK: 'true', LEASE_INDEX_SHARDS: '4' });
const clock = new ManualClock();

/** Writes or deletes a lease item straight into the table (what a claim commit or release does to it). */
async function setLease(table: MemoryTable, address: string, held: boolean, ttl = false): Promise<void> {
  if (!held) {
    await table.write({ kind: 'delete', key: keys.lease('p', address) });
    return;
  }
  const lease = {
    pool: 'p',
    address,
    family: IpFamily.IPv4,
    range: 'r',
    claim: `c-${address}`,
    claimUid: `u-${address}`,
    owner: owner('x'),
    createdAt: '',
    ...(ttl ? { expiresAt: clock.nowMs() + 60_000 } : {}),
  };
  await table.write({ kind: 'put', item: leaseToItem(lease, 4) });
}

/** The summary's set bits over 10.0.0.0/16, as addresses. */
async function summaryOf(table: MemoryTable): Promise<string[]> {
  const summary = await readSummary(new TableOccupancyStore(table), 'p', IpFamily.IPv4, [[0x0a000000n, 0x0a00ffffn]]);
  const out: string[] = [];
  for (const chunk of summary.chunks)
    chunk.bits.forEachSet((bit) =>
      out.push(formatAddress({ family: IpFamily.IPv4, value: chunk.index * CHUNK_SIZE + BigInt(bit) })),
    );
  return out.sort();
}

/** Makes pool p a pool from before the summary: its item without summarySince. */
async function forgetSummary(table: MemoryTable): Promise<void> {
  const { summarySince: _dropped, ...item } = (await table.get(keys.pool('p')))!;
  await table.write({ kind: 'put', item });
}

async function leasesOf(table: MemoryTable): Promise<string[]> {
  return table
    .items()
    .filter((i) => i.entity === 'lease')
    .map((i) => i.address as string)
    .sort();
}

/**
 * `store` with each call of `method` counted by `count` first. Object.create keeps the store's other methods (they live
 * on its prototype, which a spread drops).
 */
function counted<S extends object>(store: S, method: keyof S, count: () => void): S {
  const call = store[method] as (...args: unknown[]) => unknown;
  return Object.assign(Object.create(store) as S, {
    [method]: (...args: unknown[]) => (count(), call.apply(store, args)),
  });
}

describe('Class: SummaryMirror', () => {
  it('converges to the lease items whatever the batches: redelivered, duplicated and reordered, over 30 seeds', async () => {
    for (let seed = 1; seed <= 30; seed += 1) {
      // Prepare: random lease writes over three chunks, each recorded as its stream record
      const random = new SeededRandom(seed);
      const table = new MemoryTable();
      const records: LeaseChange[] = [];
      for (let i = 0; i < 60; i += 1) {
        const address = formatAddress({
          family: IpFamily.IPv4,
          value: 0x0a000000n + random.below(3n * CHUNK_SIZE) / 97n,
        });
        const held = random.unit() < 0.6;
        await setLease(table, address, held, random.unit() < 0.3);
        records.push({
          id: String(i),
          pool: 'p',
          address,
          state: held ? LeaseItemPresence.Held : LeaseItemPresence.Gone,
        });
      }
      const mirror = new SummaryMirror({ store: new TableOccupancyStore(table), clock });
      // Act: batches cut at random, some delivered twice, some older ones again after newer ones, shuffled inside
      const batches: LeaseChange[][] = [];
      for (let i = 0; i < records.length; ) {
        const size = 1 + Number(random.below(10n));
        batches.push(records.slice(i, i + size));
        i += size;
      }
      const deliveries: LeaseChange[][] = [];
      for (const batch of batches) {
        deliveries.push([...batch].sort(() => random.unit() - 0.5));
        if (random.unit() < 0.3) deliveries.push([...batch, ...batch]);
        if (random.unit() < 0.3) deliveries.push(batches[Number(random.below(BigInt(batches.length)))]!);
      }
      for (const delivery of deliveries) expect((await mirror.apply(delivery)).failed).toEqual([]);
      // Assess
      expect(await summaryOf(table), `seed ${seed}`).toEqual(await leasesOf(table));
    }
  });

  it('marks leases with a TTL as expiring, and clears the mark with the lease', async () => {
    // Prepare
    const table = new MemoryTable();
    const mirror = new SummaryMirror({ store: new TableOccupancyStore(table), clock });
    await setLease(table, '10.0.0.5', true, true);
    await setLease(table, '10.0.0.6', true, false);
    // Act
    await mirror.apply([
      { id: '1', pool: 'p', address: '10.0.0.5', state: LeaseItemPresence.Held },
      { id: '2', pool: 'p', address: '10.0.0.6', state: LeaseItemPresence.Held },
    ]);
    const before = await readSummary(new TableOccupancyStore(table), 'p', IpFamily.IPv4, [[0x0a000000n, 0x0a0000ffn]]);
    await setLease(table, '10.0.0.5', false);
    await mirror.apply([{ id: '3', pool: 'p', address: '10.0.0.5', state: LeaseItemPresence.Gone }]);
    const after = await readSummary(new TableOccupancyStore(table), 'p', IpFamily.IPv4, [[0x0a000000n, 0x0a0000ffn]]);
    // Assess
    expect([before.used, before.expiring]).toEqual([2n, true]);
    expect([after.used, after.expiring]).toEqual([1n, false]);
  });

  it('writes one chunk per batch however many of its addresses change, and reports a chunk that keeps changing as failed', async () => {
    // Prepare
    const table = new MemoryTable();
    for (let i = 1; i <= 50; i += 1) await setLease(table, `10.0.0.${i}`, true);
    const mirror = new SummaryMirror({ store: new TableOccupancyStore(table), clock });
    const changes = Array.from({ length: 50 }, (_, i) => ({
      id: String(i),
      pool: 'p',
      address: `10.0.0.${i + 1}`,
      state: LeaseItemPresence.Held,
    }));
    // Act
    const before = table.calls().write;
    const result = await mirror.apply(changes);
    const writes = table.calls().write - before;
    const always = new SummaryMirror({
      store: {
        ...new TableOccupancyStore(table),
        getChunk: async () => undefined,
        leaseStates: async () => new Map([['10.0.0.1', { expiring: false }]]),
        putChunk: async () => 'changed' as const,
      },
      clock,
      maxAttempts: 3,
    });
    const lost = await always.apply([{ id: 'x', pool: 'p', address: '10.0.0.1', state: LeaseItemPresence.Held }]);
    // Assess
    expect(result.chunks).toEqual([
      expect.objectContaining({ outcome: 'written', changes: 50, index: chunkIndexOf(0x0a000001n) }),
    ]);
    expect(writes).toBe(1);
    expect(lost.failed).toEqual(['x']);
  });
});

describe('Allocation with the summary', () => {
  /** A container on a table whose stream function never runs: the summary stays empty whatever is leased. */
  async function unfollowed(cidr: string, summarized: boolean) {
    const table = new MemoryTable();
    const container = buildContainer(config, { table, clock, random: new SeededRandom(7) });
    const pool = await createPool(container.deps, { name: 'p' });
    if (!summarized) {
      await forgetSummary(table);
      container.deps.views.forget('p');
    }
    await createRange(container.deps, { pool: 'p', cidr });
    return { table, container, pool };
  }

  it('never trusts a summary that lags: every address once, then RangeFull, with no stream function at all', async () => {
    // Prepare: a /28 (14 hosts); the summary of this pool is complete but never updated
    const { container } = await unfollowed('10.9.0.0/28', true);
    const siblings = [
      container,
      buildContainer(config, { table: container.table, clock, random: new SeededRandom(8) }),
      buildContainer(config, { table: container.table, clock, random: new SeededRandom(9) }),
    ];
    // Act
    const got: string[] = [];
    for (let i = 0; i < 14; i += 1)
      got.push(
        (await createClaim(siblings[i % 3]!.deps, { pool: 'p', name: `c${i}`, owner: owner(`u${i}`) })).claim
          .addresses[0]!.address,
      );
    const full = await createClaim(siblings[1]!.deps, { pool: 'p', name: 'c14', owner: owner('u14') }).catch(
      (e: unknown) => e,
    );
    // Assess
    expect(new Set(got).size).toBe(14);
    expect(full).toBeInstanceOf(RangeFullError);
  });

  it('reads the listing for a pool without a summary, and counts its utilization from the leases', async () => {
    // Prepare
    const { table, container } = await unfollowed('10.9.0.0/28', false);
    const reads: string[] = [];
    const metered = buildContainer(config, {
      table,
      clock,
      random: new SeededRandom(3),
      wrapStores: (s) => ({
        ...s,
        occupancy: counted(s.occupancy, 'readChunks', () => reads.push('chunks')),
        leases: counted(s.leases, 'takenAddresses', () => reads.push('listing')),
      }),
    });
    // Act
    await createClaim(metered.deps, { pool: 'p', name: 'a', owner: owner('a') });
    const details = await getPool(container.deps, 'p');
    // Assess
    expect(reads).toEqual(['listing']);
    expect(details.utilization.IPv4?.used).toBe(1n);
  });
});

describe('Reconciler: the summary (rows 14-15)', () => {
  const settings = {
    expiredClaimGraceMs: 30_000,
    orphanLeaseGraceMs: 60_000,
    terminatingRangeGraceMs: 10_000,
    leakStrikes: 3,
    sweepItems: 0,
    countItems: 20_000,
  } as const;

  async function leasedBehindTheStream(summarized: boolean) {
    const table = new MemoryTable();
    const container = buildContainer(config, { table, clock, random: new SeededRandom(11) });
    await createPool(container.deps, { name: 'p' });
    if (!summarized) await forgetSummary(table);
    await createRange(container.deps, { pool: 'p', cidr: '10.0.0.0/16' });
    // Leases the stream never delivered: 3 in one chunk, 1 in another.
    for (const address of ['10.0.0.1', '10.0.0.2', '10.0.3.3', '10.0.200.9']) await setLease(table, address, true);
    container.deps.views.forget('p');
    return { table, container };
  }

  it('builds the summary of a pool made before it, then marks the pool summarized (row 14)', async () => {
    // Prepare
    const { table, container } = await leasedBehindTheStream(false);
    const generation = await container.stores.pools.rangeGeneration('p');
    // Act
    const report = await reconcile({ ...container.deps, settings }, { deadlineMs: clock.nowMs() + 60_000 });
    // Assess
    expect(report.summary.built).toBe(1);
    expect(await summaryOf(table)).toEqual(await leasesOf(table));
    expect(table.items().find((i) => i.entity === 'pool')?.summarySince).toBe(new Date(clock.nowMs()).toISOString());
    // The pool's view changed, so its generation did: containers that keep a confirmed view read the new one.
    expect(await container.stores.pools.rangeGeneration('p')).not.toBe(generation);
  });

  it('stamps a fresh generation each time summarySince is set, so two runs in the same millisecond never repeat one around a range change', async () => {
    // Prepare
    const table = new MemoryTable();
    const container = buildContainer(config, { table, clock, random: new SeededRandom(12) });
    await createPool(container.deps, { name: 'p' });
    const since = new Date(clock.nowMs()).toISOString();
    await container.stores.occupancy.markSummarized('p', since);
    const first = await container.stores.pools.rangeGeneration('p');
    // Act: a range change, then the same mark again (an overlapping run, same millisecond)
    await createRange(container.deps, { pool: 'p', cidr: '10.0.0.0/24' });
    await container.stores.occupancy.markSummarized('p', since);
    // Assess: a view read with the first generation must not pass for current
    expect(await container.stores.pools.rangeGeneration('p')).not.toBe(first);
  });

  it('corrects a summary that differs from its leases, and reports utilization from the summary (row 15)', async () => {
    // Prepare: a summarized pool whose summary missed four leases and holds one that is gone
    const { table, container } = await leasedBehindTheStream(true);
    await setLease(table, '10.0.9.9', true);
    await new SummaryMirror({ store: new TableOccupancyStore(table), clock }).apply([
      { id: '1', pool: 'p', address: '10.0.9.9', state: LeaseItemPresence.Held },
    ]);
    await setLease(table, '10.0.9.9', false);
    // Act
    const first = await reconcile({ ...container.deps, settings }, { deadlineMs: clock.nowMs() + 60_000 });
    const second = await reconcile({ ...container.deps, settings }, { deadlineMs: clock.nowMs() + 60_000 });
    // Assess
    expect(first.summary.repaired).toBe(5);
    expect(await summaryOf(table)).toEqual(await leasesOf(table));
    expect(second.utilization.map((u) => u.used)).toEqual([4n]);
  });
});

describe('Allocation against a summary shown wrong', () => {
  it('reads a sample of candidates after a collision instead of a failed transaction per stale address', async () => {
    // Prepare: a /24 whose summary is empty (no stream) while 200 of its 254 addresses are leased
    const table = new MemoryTable();
    const setup = buildContainer(config, { table, clock, random: new SeededRandom(21) });
    await createPool(setup.deps, { name: 'p' });
    await createRange(setup.deps, { pool: 'p', cidr: '10.0.0.0/24' });
    for (let i = 1; i <= 200; i += 1) await setLease(table, `10.0.0.${i}`, true);
    let commits = 0;
    const caller = buildContainer(config, {
      table,
      clock,
      random: new SeededRandom(22),
      wrapStores: (s) => ({ ...s, claims: counted(s.claims, 'commitClaim', () => (commits += 1)) }),
    });
    // Act: ten claims from one container
    const got: string[] = [];
    for (let i = 0; i < 10; i += 1)
      got.push(
        (await createClaim(caller.deps, { pool: 'p', name: `c${i}`, owner: owner(`u${i}`) })).claim.addresses[0]!
          .address,
      );
    // Assess: every address a free one; about two transactions a claim (blind commits would take about 4.7)
    expect(got.every((a) => Number(a.split('.')[3]) > 200)).toBe(true);
    expect(new Set(got).size).toBe(10);
    expect(commits).toBeLessThanOrEqual(25);
  });
});

describe('Allocation near full from an old summary copy', () => {
  /** A /24 with `mirrored` addresses leased and in the summary, and a container whose copy of the summary shows them. */
  async function nearFull(mirrored: number, seed = 32) {
    const table = new MemoryTable();
    const setup = buildContainer(config, { table, clock, random: new SeededRandom(31) });
    await createPool(setup.deps, { name: 'p' });
    await createRange(setup.deps, { pool: 'p', cidr: '10.0.0.0/24' });
    const mirror = new SummaryMirror({ store: new TableOccupancyStore(table), clock });
    const lease = async (from: number, to: number) => {
      const records: LeaseChange[] = [];
      for (let i = from; i <= to; i += 1) {
        await setLease(table, `10.0.0.${i}`, true);
        records.push({ id: String(i), pool: 'p', address: `10.0.0.${i}`, state: LeaseItemPresence.Held });
      }
      await mirror.apply(records);
    };
    await lease(1, mirrored);
    const counts = { commits: 0, summaryReads: 0, leaseReads: 0 };
    const caller = buildContainer(config, {
      table,
      clock,
      random: new SeededRandom(seed),
      wrapStores: (s) => ({
        ...s,
        occupancy: counted(
          counted(s.occupancy, 'readChunks', () => (counts.summaryReads += 1)),
          'leaseStates',
          () => (counts.leaseReads += 1),
        ),
        claims: counted(s.claims, 'commitClaim', () => (counts.commits += 1)),
      }),
    });
    // The caller's first claim reads the summary: its copy.
    await createClaim(caller.deps, { pool: 'p', name: 'first', owner: owner('first') });
    /** What the calls made after it cost: commits, summary reads and lease reads counted from now. */
    const counting = () => {
      const at = { ...counts };
      return () => ({
        commits: counts.commits - at.commits,
        summaryReads: counts.summaryReads - at.summaryReads,
        leaseReads: counts.leaseReads - at.leaseReads,
      });
    };
    return { caller, lease, counting };
  }

  it('reads a copy a second old that shows few free addresses again before picking: no transaction on an address taken since', async () => {
    // Prepare: the copy shows about 100 free; then all but 2 of them are leased and mirrored
    const { caller, lease, counting } = await nearFull(153);
    await lease(154, 252);
    clock.advance(1_100);
    const spent = counting();
    // Act
    const claim = await createClaim(caller.deps, { pool: 'p', name: 'last', owner: owner('last') });
    // Assess: one more summary read, then one commit on a free address (253 or 254, whichever `first` did not take)
    expect(['10.0.0.253', '10.0.0.254']).toContain(claim.claim.addresses[0]!.address);
    expect(spent()).toMatchObject({ summaryReads: 1, commits: 1 });
  });

  it('keeps a copy a second old that shows many free addresses: no read before the commit', async () => {
    // Prepare: the copy shows about 200 free (more than NEAR_FULL_LIMIT)
    const { caller, counting } = await nearFull(50);
    clock.advance(1_100);
    const spent = counting();
    // Act
    await createClaim(caller.deps, { pool: 'p', name: 'next', owner: owner('next') });
    // Assess
    expect(spent()).toMatchObject({ summaryReads: 0, commits: 1 });
  });

  it('reads a young copy again after its first collision near full, instead of reading a sample of what it shows free', async () => {
    // Prepare: as above, but the copy is half a second old (within the full trust); the seed's first pick among the
    // 100 the copy shows free is one of the 98 taken since (a pick is drawn uniformly among them: SPREAD_LIMIT)
    const { caller, lease, counting } = await nearFull(153, 33);
    await lease(154, 252);
    clock.advance(500);
    const spent = counting();
    // Act
    const claim = await createClaim(caller.deps, { pool: 'p', name: 'last', owner: owner('last') });
    // Assess: a commit that collides, the summary again, one batch read of the few it shows, a commit
    expect(['10.0.0.253', '10.0.0.254']).toContain(claim.claim.addresses[0]!.address);
    expect(spent()).toMatchObject({ commits: 2, summaryReads: 1, leaseReads: 1 });
  });

  it('answers RangeFull from an old copy that shows a few dozen free once the summary read again shows none: no transaction', async () => {
    // Prepare: the copy shows about 100 free; then every address is leased and mirrored
    const { caller, lease, counting } = await nearFull(153);
    await lease(154, 254);
    clock.advance(1_100);
    const spent = counting();
    // Act
    const refused = await createClaim(caller.deps, { pool: 'p', name: 'none', owner: owner('none') }).catch(
      (e: unknown) => e,
    );
    // Assess
    expect(refused).toBeInstanceOf(RangeFullError);
    expect(spent()).toMatchObject({ commits: 0, summaryReads: 1 });
  });
});
