/**
 * The performance projection: lease, bitmap-cas and global-lock on the simulated DynamoDB (sim-table.ts: latency,
 * per-partition capacity, transaction conflicts, index lag), at many container counts, occupancies and range sizes.
 *
 * One case: a pool with one range, `occupancy` of it taken up front (written straight into the table), then N
 * containers, each a closed loop of "allocate one address, release it" (so the occupancy stays put), for a warm-up
 * and a measured window of virtual time. Only the allocations are measured: their rate, their latency (request in,
 * answer out, at the container), and the requests, capacity units and throttles they cost (the releases are counted
 * apart). A container answered busy (NotReady: throttled, or a lost race past the allocator's retries) waits
 * 10-50 ms and tries again, as a client with backoff would.
 *
 *   lease        the core as shipped: createClaim / deleteClaim on buildContainer's lease allocator
 *   bitmap-cas   the core as shipped in legacy mode (MultiCIDRServiceAllocator=false): one bitmap item per range
 *   global-lock  the bench's whereabouts design (bench/strategies/global-lock.ts) on the Table port: lock item,
 *                read-modify-write of one allocation map, unlock; a refused lock polls again after 10 ms x [1, 2.2]
 */
import { buildContainer } from '../shared/adapters/composition.ts';
import { attributeIs, either, hasExpired, itemIsAbsent, versionIs } from '../shared/adapters/dynamodb/conditions.ts';
import type { Table, WriteOp } from '../shared/adapters/dynamodb/table.ts';
import { loadConfig } from '../shared/config.ts';
import { BitmapAllocator } from '../shared/core/allocator/bitmap-allocator.ts';
import { Bitmap } from '../shared/core/bitmap/bitmap.ts';
import { NotReadyError, RangeFullError } from '../shared/core/errors.ts';
import { capacity, parseCidr } from '../shared/core/ip/cidr.ts';
import { createClaim, deleteClaim } from '../shared/core/use-cases/claims.ts';
import type { Deps } from '../shared/core/use-cases/deps.ts';
import { createPool } from '../shared/core/use-cases/pools.ts';
import { createRange } from '../shared/core/use-cases/ranges.ts';
import { prefillRange } from './prefill.ts';
import { Prng } from './prng.ts';
import { Scheduler } from './scheduler.ts';
import { emptySpend, SimEngine, type Caller, type Spend } from './sim-table.ts';

export const Strategies = ['lease', 'bitmap-cas', 'global-lock'] as const;
export type StrategyName = (typeof Strategies)[number];

export interface ProjectionCase {
  readonly strategy: StrategyName;
  readonly containers: number;
  readonly cidr: string;
  readonly occupancy: number;
  readonly warmupMs: number;
  readonly windowMs: number;
  readonly seed: number;
  /** LEASE_INDEX_SHARDS (default 8). */
  readonly shards?: number;
}

export interface ProjectionRow extends ProjectionCase {
  readonly allocations: number;
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly requestsPerAllocation: number;
  readonly readUnitsPerAllocation: number;
  /** Table and index write units. */
  readonly writeUnitsPerAllocation: number;
  readonly throttled: number;
  readonly busyAnswers: number;
  readonly fullAnswers: number;
  readonly wallMs: number;
  /** The partitions that refused most (`kind|table or index|key`), with their refusals. */
  readonly hottest?: readonly (readonly [string, number])[];
}

const EPOCH_MS = Date.UTC(2026, 0, 1);
const POOL = 'proj';
const OWNER = { kind: 'Pod', name: 'projection', uid: 'projection' };
const SHARDS = 8;

/** Offsets of `count` distinct host addresses of `size`, spread at random. */
function spread(rng: Prng, size: bigint, count: number): bigint[] {
  const taken = new Set<bigint>();
  if (BigInt(count) * 2n > size) {
    // Dense: a random subset by a partial shuffle of all offsets.
    const all = Array.from({ length: Number(size) }, (_, i) => BigInt(i));
    for (let i = 0; i < count; i += 1) {
      const j = rng.int(i, all.length - 1);
      [all[i], all[j]] = [all[j]!, all[i]!];
    }
    return all.slice(0, count);
  }
  while (taken.size < count) taken.add(rng.below(size));
  return [...taken];
}

interface Measure {
  allocations: number;
  latencies: number[];
  busy: number;
  full: number;
}

function inWindow(c: ProjectionCase, scheduler: Scheduler, started: number): boolean {
  return started >= c.warmupMs && scheduler.now <= c.warmupMs + c.windowMs;
}

/** Runs one case and measures it. */
export async function projectCase(c: ProjectionCase): Promise<ProjectionRow> {
  const wallStart = performance.now();
  const scheduler = new Scheduler();
  const rng = new Prng(
    c.seed,
    `${c.strategy}/${c.containers}/${c.cidr}/${c.occupancy}${c.shards ? `/${c.shards}` : ''}`,
  );
  const engine = new SimEngine({ scheduler, rng: rng.fork('storage'), requestTimeoutMs: 3000 });
  const clock = { nowMs: () => EPOCH_MS + scheduler.now };
  const shards = c.shards ?? SHARDS;
  const config = loadConfig({
    TABLE_NAME: 'sim',
    LOCAL_STACK: 'true',
    LEASE_INDEX_SHARDS: String(shards),
    FEATURE_GATES: c.strategy === 'bitmap-cas' ? 'MultiCIDRServiceAllocator=false' : '',
  });
  const cidr = parseCidr(c.cidr);
  const size = capacity(cidr);
  const prefill = Math.floor(c.occupancy * Number(size));
  const offsets = spread(rng.fork('prefill'), size, prefill);

  const containerFor = (id: string): { caller: Caller; deps: Deps; table: Table } => {
    const caller: Caller = { id, role: 'setup', alive: true };
    const table = engine.tableFor(caller);
    const random = rng.fork(id);
    const container = buildContainer(config, { table, clock, random });
    let deps = container.deps;
    if (c.strategy === 'bitmap-cas') {
      const { claims, leases, pools, bitmaps } = container.stores;
      const pause = (lost: number) =>
        scheduler.sleep(Number(random.below(BigInt(Math.max(1, Math.ceil(Math.min(2 ** lost, 64)))))));
      deps = { ...deps, allocator: new BitmapAllocator({ claims, leases, pools, bitmaps, clock, random, pause }) };
    }
    return { caller, deps, table };
  };

  // Set-up: the pool and its range through the use cases, the pre-fill straight into the table.
  const setup = containerFor('setup');
  let rangeName = '';
  const ready = (async () => {
    await createPool(setup.deps, { name: POOL });
    rangeName = (await createRange(setup.deps, { pool: POOL, cidr: c.cidr, legacy: c.strategy === 'bitmap-cas' })).range
      .name;
  })();
  await scheduler.runUntil(10_000);
  await ready;
  const nowIso = new Date(clock.nowMs()).toISOString();
  if (c.strategy === 'global-lock') {
    const bits = Bitmap.empty(size);
    for (const o of offsets) bits.set(Number(o));
    await engine.memory.write({
      kind: 'put',
      item: { PK: `SIMMAP#${POOL}`, SK: 'MAP', entity: 'sim-map', version: 0, data: bits.encode() },
    });
  } else {
    await prefillRange({
      memory: engine.memory,
      pool: POOL,
      cidr,
      rangeName,
      offsets,
      owner: OWNER,
      nowIso,
      shards,
      ...(c.strategy === 'bitmap-cas' ? { bitmapRange: c.cidr } : {}),
    });
  }

  const base = scheduler.now;
  const measure: Measure = { allocations: 0, latencies: [], busy: 0, full: 0 };
  const local: ProjectionCase = { ...c, warmupMs: base + c.warmupMs };
  let at: { alloc: Spend; release: Spend } | undefined;
  const end = base + c.warmupMs + c.windowMs;
  const loops = Array.from({ length: c.containers }, (_, i) =>
    c.strategy === 'global-lock' ? lockLoop(i) : coreLoop(i),
  );

  async function coreLoop(i: number): Promise<void> {
    const { caller, deps } = containerFor(`c${i}`);
    const wait = rng.fork(`wait/${i}`);
    // A cold start before the first request.
    await scheduler.sleep(wait.lognormal(325, 600));
    let n = 0;
    while (scheduler.now < end) {
      n += 1;
      const name = `c${i}-${n}`;
      const started = scheduler.now;
      caller.role = 'alloc';
      try {
        // Each container's claims have their own owner (a pod each), as in a real fleet: one owner for all would make
        // its owner-index partition the hot key.
        await createClaim(deps, { pool: POOL, name, owner: { kind: 'Pod', name: `pod-${i}`, uid: `pod-${i}` } });
        if (inWindow(local, scheduler, started)) {
          measure.allocations += 1;
          measure.latencies.push(scheduler.now - started);
        }
        caller.role = 'release';
        for (let attempt = 0; attempt < 20; attempt += 1) {
          try {
            await deleteClaim(deps, POOL, name);
            break;
          } catch (error) {
            if (!(error instanceof NotReadyError)) throw error;
            await scheduler.sleep(wait.int(10, 50));
          }
        }
      } catch (error) {
        if (error instanceof RangeFullError) {
          if (inWindow(local, scheduler, started)) measure.full += 1;
          await scheduler.sleep(100);
        } else if (error instanceof NotReadyError) {
          if (inWindow(local, scheduler, started)) measure.busy += 1;
          await scheduler.sleep(wait.int(10, 50));
        } else throw error;
      }
    }
  }

  async function lockLoop(i: number): Promise<void> {
    const { caller, table } = containerFor(`c${i}`);
    const wait = rng.fork(`wait/${i}`);
    const me = `c${i}`;
    await scheduler.sleep(wait.lognormal(325, 600));
    const lockKey = { PK: `SIMLOCK#${POOL}`, SK: 'LOCK' };
    const mapKey = { PK: `SIMMAP#${POOL}`, SK: 'MAP' };
    /** Runs `change` on the map under the lock; undefined when it was refused (throttled, lock lost). */
    const underLock = async (change: (bits: Bitmap) => number | undefined): Promise<number | undefined> => {
      for (;;) {
        if (scheduler.now >= end) return undefined;
        const now = clock.nowMs();
        const lockOp: WriteOp = {
          kind: 'put',
          item: { ...lockKey, owner: me, expiresAt: now + 1500 },
          condition: either(itemIsAbsent(), hasExpired(now)),
        };
        let taken = false;
        try {
          taken = (await table.write(lockOp)).ok;
        } catch (error) {
          if (!(error instanceof NotReadyError)) throw error;
        }
        if (taken) break;
        await scheduler.sleep(10 * (1 + 1.2 * wait.unit()));
      }
      try {
        const item = await table.get(mapKey);
        const version = (item?.version as number | undefined) ?? 0;
        const bits = Bitmap.decode((item?.data as Uint8Array | undefined) ?? new Uint8Array(), size);
        const bit = change(bits);
        if (bit === undefined) return undefined;
        const written = await table.write({
          kind: 'put',
          item: { ...mapKey, entity: 'sim-map', version: version + 1, data: bits.encode() },
          condition: versionIs(version),
        });
        return written.ok ? bit : undefined;
      } catch (error) {
        if (error instanceof NotReadyError) return undefined;
        throw error;
      } finally {
        try {
          await table.write({ kind: 'delete', key: lockKey, condition: attributeIs('owner', me) });
        } catch (error) {
          if (!(error instanceof NotReadyError)) throw error;
        }
      }
    };
    while (scheduler.now < end) {
      const started = scheduler.now;
      caller.role = 'alloc';
      let full = false;
      const bit = await underLock((bits) => {
        const free = bits.firstClear(0);
        if (free === undefined) full = true;
        else bits.set(free);
        return free;
      });
      if (bit === undefined) {
        if (inWindow(local, scheduler, started)) measure[full ? 'full' : 'busy'] += 1;
        await scheduler.sleep(full ? 100 : wait.int(10, 50));
        continue;
      }
      if (inWindow(local, scheduler, started)) {
        measure.allocations += 1;
        measure.latencies.push(scheduler.now - started);
      }
      caller.role = 'release';
      await underLock((bits) => (bits.clear(bit) ? bit : bit));
    }
  }

  const spendCopy = (s: Spend | undefined): Spend => (s ? { ...s, byMethod: { ...s.byMethod } } : emptySpend());
  const snapshot = (async () => {
    await scheduler.sleep(c.warmupMs);
    at = { alloc: spendCopy(engine.spend.get('alloc')), release: spendCopy(engine.spend.get('release')) };
  })();
  await scheduler.runUntil(end);
  await snapshot;
  const after = spendCopy(engine.spend.get('alloc'));
  const before = at!.alloc;
  // Let the loops run out (their last calls finish after the window; nothing of it is measured).
  await scheduler.runUntil(end + 10_000);
  void loops;
  const n = Math.max(1, measure.allocations);
  const sorted = [...measure.latencies].sort((a, b) => a - b);
  const pct = (p: number) =>
    sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : 0;
  return {
    ...c,
    allocations: measure.allocations,
    perSecond: measure.allocations / (c.windowMs / 1000),
    p50Ms: pct(50),
    p99Ms: pct(99),
    requestsPerAllocation: (after.requests - before.requests) / n,
    readUnitsPerAllocation: (after.readUnits - before.readUnits) / n,
    writeUnitsPerAllocation:
      (after.writeUnits - before.writeUnits + after.indexWriteUnits - before.indexWriteUnits) / n,
    throttled: after.throttled - before.throttled,
    busyAnswers: measure.busy,
    fullAnswers: measure.full,
    wallMs: performance.now() - wallStart,
    hottest: [...engine.throttledBy.entries()].sort((a, b) => b[1] - a[1]).slice(0, 3),
  };
}
