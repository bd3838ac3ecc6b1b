/**
 * The designs side by side on the simulated DynamoDB at AWS's limits (quotas.ts: 3,000 read and 1,000 write units a
 * second per partition with 1 s of burst, split for heat, the table-level quota of 40,000 units per table and per
 * index, warmed to it; write units priced by item size and doubled in transactions, capacity.ts), each through the
 * code the bench runs on DynamoDB Local:
 *
 *   lease, lease-blind, bitmap-cas, block-lease   the core (createClaim / deleteClaim on buildContainer), as the
 *                                                 bench's strategies run it; bitmap-cas in legacy mode
 *   global-lock, parent-document                  bench/strategies/designs.ts on the Table port
 *
 * One cell: a pool filled to `fullPercent` (written straight into the table, the occupancy summary with it), then
 * `containers` closed loops of "claim, release", each container one request at a time; a busy answer (throttled,
 * contended) waits 10-50 ms and asks again. Measured over a window after a warm-up: claims/s, the p99 of a claim,
 * and what a claim-and-release cycle costs (requests, read and write units of table and indexes, the release's
 * included). Virtual time: the same cell gives the same row.
 */
import { buildContainer } from '../shared/adapters/composition.ts';
import type { Table } from '../shared/adapters/dynamodb/table.ts';
import { loadConfig } from '../shared/config.ts';
import { PickStrategy } from '../shared/core/allocator/lease-allocator.ts';
import { BitmapAllocator } from '../shared/core/allocator/bitmap-allocator.ts';
import { Bitmap } from '../shared/core/bitmap/bitmap.ts';
import { NotReadyError, RangeFullError } from '../shared/core/errors.ts';
import { capacity, parseCidr, slotted } from '../shared/core/ip/cidr.ts';
import { createClaim, deleteClaim } from '../shared/core/use-cases/claims.ts';
import type { Deps } from '../shared/core/use-cases/deps.ts';
import { createPool } from '../shared/core/use-cases/pools.ts';
import { createRange } from '../shared/core/use-cases/ranges.ts';
import {
  blocksOf,
  globalLockCaller,
  mapItem,
  parentDocumentCaller,
  parentItem,
  type DesignPorts,
} from '../scripts/lib/designs.ts';
import { prefillRange } from './prefill.ts';
import { usdPerMillionCycles } from './prices.ts';
import { Prng } from './prng.ts';
import { AWS_DEFAULTS, warmed, type Quotas } from './quotas.ts';
import { Scheduler } from './scheduler.ts';
import { emptySpend, SimEngine, type Caller, type Spend } from './sim-table.ts';

export const DESIGNS = {
  lease: 'address',
  'lease-blind': 'address',
  'bitmap-cas': 'address',
  'global-lock': 'address',
  'block-lease': 'block',
  'parent-document': 'block',
} as const;
export type Design = keyof typeof DESIGNS;

/** Where a cell claims: an address pool's range, or a block pool's parent in blocks of `blockPrefix`. */
export interface Geometry {
  readonly addresses: string;
  readonly parent: string;
  readonly blockPrefix: number;
}

/**
 * The comparison's pools: a /16 of addresses (65,534) and a /12 in /26 blocks (16,384, Calico's block size), so at
 * 90 % full 1,000 containers holding one each still leave free positions (6,554 addresses, 1,638 blocks). A /12 is
 * near the largest parent whose go-ipam document fits one DynamoDB item (400 KB): its every child listed is ~390 KB.
 */
export const GEOMETRY: Geometry = { addresses: '10.0.0.0/16', parent: '10.0.0.0/12', blockPrefix: 26 };

/** AWS's defaults for a table warmed to its table-level quota (40,000 read and write units, 40 partitions). */
export const COMPARE_QUOTAS: Quotas = warmed(AWS_DEFAULTS, 40_000, 40_000);

export interface CompareCell {
  readonly design: Design;
  readonly fullPercent: number;
  readonly containers: number;
  readonly warmupMs: number;
  readonly windowMs: number;
  readonly seed: number;
  readonly geometry?: Geometry;
  /** No capacity limit: the model check's count-only run. */
  readonly unlimited?: boolean;
}

export interface CompareRow {
  readonly design: Design;
  readonly unit: 'address' | 'block';
  readonly fullPercent: number;
  readonly containers: number;
  readonly perSecond: number;
  readonly p99Ms: number;
  readonly requestsPerClaim: number;
  readonly writeUnitsPerClaim: number;
  readonly readUnitsPerClaim: number;
  readonly usdPerMillionClaims: number;
  readonly firstLimit: string;
  /** The claim alone, its release left out: what the bench's model check compares. */
  readonly claimOnly: { readonly requests: number; readonly readUnits: number; readonly writeUnits: number };
  readonly claims: number;
  readonly busy: number;
  readonly full: number;
  readonly throttled: number;
}

const EPOCH_MS = Date.UTC(2026, 0, 1);
const POOL = 'cmp';
const OWNER = { kind: 'Pod', name: 'compare', uid: 'compare' };
/** LEASE_INDEX_SHARDS as docs/deploy.md sizes it for this rate (the default 8 caps lease near 4,000 cycles/s). */
export const SHARDS = 64;

/** `count` distinct offsets below `size`, at random. */
function spread(rng: Prng, size: number, count: number): number[] {
  const all = Array.from({ length: size }, (_, i) => i);
  for (let i = 0; i < count; i += 1) {
    const j = rng.int(i, all.length - 1);
    [all[i], all[j]] = [all[j]!, all[i]!];
  }
  return all.slice(0, count);
}

/** One container of a design: claim once, release what it claimed. */
interface Loop {
  claim(name: string): Promise<'ok' | 'full' | 'busy'>;
  release(name: string): Promise<void>;
}

interface World {
  readonly cell: CompareCell;
  readonly geometry: Geometry;
  readonly scheduler: Scheduler;
  readonly engine: SimEngine;
  readonly rng: Prng;
  readonly clock: { nowMs: () => number };
  stopAt: number;
}

function configFor(design: Design) {
  return loadConfig({
    TABLE_NAME: 'sim',
    LOCAL_STACK: 'true',
    LEASE_INDEX_SHARDS: String(SHARDS),
    FEATURE_GATES: design === 'bitmap-cas' ? 'MultiCIDRServiceAllocator=false' : '',
  });
}

function coreDeps(w: World, id: string, table: Table): Deps {
  const random = w.rng.fork(id);
  const design = w.cell.design;
  const container = buildContainer(configFor(design), {
    table,
    clock: w.clock,
    random,
    ...(design === 'lease-blind' ? { strategy: PickStrategy.Blind } : {}),
  });
  if (design !== 'bitmap-cas') return container.deps;
  const { claims, leases, pools, bitmaps } = container.stores;
  const pause = (lost: number) =>
    w.scheduler.sleep(Number(random.below(BigInt(Math.max(1, Math.ceil(Math.min(2 ** lost, 64)))))));
  return {
    ...container.deps,
    allocator: new BitmapAllocator({ claims, leases, pools, bitmaps, clock: w.clock, random, pause }),
  };
}

/** The pool and its range through the use cases, then the pre-fill straight into the table. */
async function setUp(w: World): Promise<void> {
  const { design } = w.cell;
  const g = w.geometry;
  if (design === 'global-lock' || design === 'parent-document') return prefillDesign(w);
  const deps = coreDeps(w, 'setup', w.engine.tableFor({ id: 'setup', role: 'setup', alive: true }));
  const block = design === 'block-lease';
  let rangeName = '';
  const ready = (async () => {
    await createPool(deps, { name: POOL, ...(block ? { blockPrefixLength: { IPv4: g.blockPrefix } } : {}) });
    const cidr = block ? g.parent : g.addresses;
    rangeName = (await createRange(deps, { pool: POOL, cidr, legacy: design === 'bitmap-cas' })).range.name;
  })();
  await w.scheduler.runUntil(w.scheduler.now + 10_000);
  await ready;
  await prefillLeases(w, rangeName);
}

/** Claims, leases and summary chunks for the pre-filled positions, as the API and the stream function write them. */
async function prefillLeases(w: World, rangeName: string): Promise<void> {
  const block = w.cell.design === 'block-lease';
  const cidr = block ? slotted(parseCidr(w.geometry.parent), w.geometry.blockPrefix) : parseCidr(w.geometry.addresses);
  const size = Number(capacity(cidr));
  await prefillRange({
    memory: w.engine.memory,
    pool: POOL,
    cidr,
    rangeName,
    offsets: spread(w.rng.fork('prefill'), size, Math.floor((w.cell.fullPercent / 100) * size)),
    owner: OWNER,
    nowIso: new Date(w.clock.nowMs()).toISOString(),
    shards: SHARDS,
    ...(block ? { prefixLength: w.geometry.blockPrefix } : {}),
    ...(w.cell.design === 'bitmap-cas' ? { bitmapRange: w.geometry.addresses } : {}),
  });
}

/** The global lock's map, or the parent document, as that design would hold it at this fill. */
async function prefillDesign(w: World): Promise<void> {
  const g = w.geometry;
  const rng = w.rng.fork('prefill');
  if (w.cell.design === 'global-lock') {
    const size = Number(capacity(parseCidr(g.addresses)));
    const bits = Bitmap.empty(size);
    for (const o of spread(rng, size, Math.floor((w.cell.fullPercent / 100) * size))) bits.set(o);
    await w.engine.memory.write({ kind: 'put', item: mapItem(POOL, bits, 0) });
    return;
  }
  const blocks = blocksOf(g.parent, g.blockPrefix);
  const taken = spread(rng, blocks.length, Math.floor((w.cell.fullPercent / 100) * blocks.length));
  const children = new Map(taken.map((i) => [blocks[i]!, false]));
  await w.engine.memory.write({
    kind: 'put',
    item: parentItem({ pool: POOL, parent: g.parent, blockPrefix: g.blockPrefix, children, version: 1 }),
  });
}

function loopFor(w: World, i: number, caller: Caller): Loop {
  const table = w.engine.tableFor(caller);
  const { design } = w.cell;
  const random = w.rng.fork(`design/${i}`);
  const ports: DesignPorts = {
    nowMs: w.clock.nowMs,
    unit: () => random.unit(),
    sleep: (ms) => w.scheduler.sleep(ms),
  };
  if (design === 'global-lock') {
    const size = Number(capacity(parseCidr(w.geometry.addresses)));
    const lock = globalLockCaller({
      table,
      pool: POOL,
      size,
      me: `c${i}`,
      retryPeriodMs: 10,
      ports,
      stopped: () => w.scheduler.now >= w.stopAt,
    });
    const held = new Map<string, number>();
    return {
      async claim(name) {
        const out = await lock.allocate();
        if (out.kind === 'ok') held.set(name, out.value);
        return out.kind;
      },
      async release(name) {
        const bit = held.get(name)!;
        held.delete(name);
        while ((await lock.release(bit)).kind !== 'ok' && w.scheduler.now < w.stopAt) await w.scheduler.sleep(10);
      },
    };
  }
  if (design === 'parent-document') {
    const doc = parentDocumentCaller({
      table,
      pool: POOL,
      parent: w.geometry.parent,
      blockPrefix: w.geometry.blockPrefix,
      ports,
    });
    const held = new Map<string, string>();
    return {
      async claim(name) {
        const out = await doc.claim();
        if (out.kind === 'ok') held.set(name, out.value);
        return out.kind;
      },
      async release(name) {
        const block = held.get(name)!;
        held.delete(name);
        while ((await doc.release(block)).kind !== 'ok' && w.scheduler.now < w.stopAt) await w.scheduler.sleep(10);
      },
    };
  }
  const deps = coreDeps(w, `c${i}`, table);
  return {
    async claim(name) {
      try {
        // Each container's claims have their own owner (a pod each), as in a fleet.
        await createClaim(deps, { pool: POOL, name, owner: { kind: 'Pod', name: `pod-${i}`, uid: `pod-${i}` } });
        return 'ok';
      } catch (error) {
        if (error instanceof RangeFullError) return 'full';
        if (error instanceof NotReadyError) return 'busy';
        throw error;
      }
    },
    async release(name) {
      for (let attempt = 0; attempt < 20; attempt += 1) {
        try {
          await deleteClaim(deps, POOL, name);
          return;
        } catch (error) {
          if (!(error instanceof NotReadyError)) throw error;
          await w.scheduler.sleep(10 + 40 * random.unit());
        }
      }
    },
  };
}

interface Measure {
  claims: number;
  functionMs: number;
  latencies: number[];
  busy: number;
  full: number;
}

/** One container's closed loop: a cold start, then claim and release until the run stops. */
async function container(w: World, i: number, measure: Measure, from: number): Promise<void> {
  const caller: Caller = { id: `c${i}`, role: 'alloc', alive: true };
  const loop = loopFor(w, i, caller);
  const wait = w.rng.fork(`wait/${i}`);
  await w.scheduler.sleep(w.cell.unlimited ? 0 : wait.lognormal(325, 600));
  const counted = (started: number) => started >= from && w.scheduler.now <= w.stopAt;
  for (let n = 1; w.scheduler.now < w.stopAt; n += 1) {
    const name = `c${i}-${n}`;
    const started = w.scheduler.now;
    caller.role = 'alloc';
    const out = await loop.claim(name);
    if (out === 'ok') {
      const measured = counted(started);
      if (measured) {
        measure.claims += 1;
        measure.latencies.push(w.scheduler.now - started);
      }
      caller.role = started >= from ? 'release' : 'release-warmup';
      await loop.release(name);
      // The API function's time for the claim and its release (what Lambda bills).
      if (measured) measure.functionMs += w.scheduler.now - started;
      continue;
    }
    if (counted(started)) measure[out] += 1;
    await w.scheduler.sleep(out === 'full' ? 100 : wait.int(10, 50));
  }
}

const copy = (s: Spend | undefined): Spend => (s ? { ...s, byMethod: { ...s.byMethod } } : emptySpend());
const minus = (a: Spend, b: Spend) => ({
  requests: a.requests - b.requests,
  readUnits: a.readUnits - b.readUnits,
  writeUnits: a.writeUnits - b.writeUnits + a.indexWriteUnits - b.indexWriteUnits,
  throttled: a.throttled - b.throttled,
});

/** Runs one cell and measures it. */
export async function compareCell(cell: CompareCell): Promise<CompareRow> {
  const scheduler = new Scheduler();
  const rng = new Prng(cell.seed, `compare/${cell.design}/${cell.fullPercent}/${cell.containers}`);
  const engine = new SimEngine({
    scheduler,
    rng: rng.fork('storage'),
    requestTimeoutMs: 3000,
    ...(cell.unlimited ? { unlimited: true } : { quotas: COMPARE_QUOTAS }),
  });
  const w: World = {
    cell,
    geometry: cell.geometry ?? GEOMETRY,
    scheduler,
    engine,
    rng,
    clock: { nowMs: () => EPOCH_MS + scheduler.now },
    stopAt: Infinity,
  };
  await setUp(w);
  const from = scheduler.now + cell.warmupMs;
  w.stopAt = from + cell.windowMs;
  const measure: Measure = { claims: 0, functionMs: 0, latencies: [], busy: 0, full: 0 };
  let running = cell.containers;
  for (let i = 0; i < cell.containers; i += 1) void container(w, i, measure, from).finally(() => (running -= 1));
  let at: { alloc: Spend; release: Spend } | undefined;
  const snapshot = (async () => {
    await scheduler.sleep(cell.warmupMs);
    at = { alloc: copy(engine.spend.get('alloc')), release: copy(engine.spend.get('release')) };
  })();
  const throttledBefore = new Map<string, number>();
  await scheduler.runUntil(from);
  for (const [k, v] of engine.throttledBy) throttledBefore.set(k, v);
  await scheduler.runUntil(w.stopAt);
  await snapshot;
  const alloc = minus(copy(engine.spend.get('alloc')), at!.alloc);
  // Releases of claims made in the window finish after it: the loops run out first.
  await scheduler.runUntil(w.stopAt + 10_000);
  if (running > 0) throw new Error(`${running} containers of ${cell.design} still running 10 s after the window`);
  const release = minus(copy(engine.spend.get('release')), at!.release);
  const n = Math.max(1, measure.claims);
  const sorted = [...measure.latencies].sort((a, b) => a - b);
  const pct = (p: number) =>
    sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : 0;
  const cycle = {
    requests: (alloc.requests + release.requests) / n,
    readUnits: (alloc.readUnits + release.readUnits) / n,
    writeUnits: (alloc.writeUnits + release.writeUnits) / n,
    functionMs: measure.functionMs / n,
    keepsSummary: cell.design === 'lease' || cell.design === 'lease-blind' || cell.design === 'block-lease',
  };
  return {
    design: cell.design,
    unit: DESIGNS[cell.design],
    fullPercent: cell.fullPercent,
    containers: cell.containers,
    perSecond: measure.claims / (cell.windowMs / 1000),
    p99Ms: pct(99),
    requestsPerClaim: cycle.requests,
    writeUnitsPerClaim: cycle.writeUnits,
    readUnitsPerClaim: cycle.readUnits,
    usdPerMillionClaims: usdPerMillionCycles(cycle),
    firstLimit: firstLimit(w, throttledBefore, measure),
    claimOnly: { requests: alloc.requests / n, readUnits: alloc.readUnits / n, writeUnits: alloc.writeUnits / n },
    claims: measure.claims,
    busy: measure.busy,
    full: measure.full,
    throttled: alloc.throttled + release.throttled,
  };
}

/**
 * What stopped the cell from going faster: the bucket that refused most calls in the window (a partition, named by
 * the item or index key it holds; the table-level quota), else the design's own serialization (lost races, a lock
 * held), else nothing but the callers' own round trips.
 */
function firstLimit(w: World, before: ReadonlyMap<string, number>, m: Measure): string {
  const refused = [...w.engine.throttledBy]
    .map(([k, v]) => [k, v - (before.get(k) ?? 0)] as const)
    .filter(([, v]) => v > 0)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  if (refused.length) {
    const [id, count] = refused[0]!;
    return `${w.engine.describeBucket(id)} (${count} refused)`;
  }
  if (m.full > 0) return `pool full (${m.full} RangeFull answers)`;
  const design = w.cell.design;
  if (design === 'global-lock' && w.cell.containers > 1) return 'the lock item: one caller at a time';
  const spend = w.engine.spend.get('alloc');
  const lost = (spend?.conflicts ?? 0) + (spend?.failedConditions ?? 0);
  if (m.busy + lost > 0.1 * Math.max(1, m.claims)) {
    const what =
      design === 'parent-document'
        ? 'lost races on the parent document (version condition)'
        : design === 'bitmap-cas'
          ? 'lost races on the bitmap item (transaction conflicts, version condition)'
          : 'collisions on picked positions';
    return `${what} (${m.busy} busy answers, ${lost} lost writes)`;
  }
  return 'none: each container waits on its own round trips';
}
