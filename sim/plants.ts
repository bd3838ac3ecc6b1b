/**
 * Planted bugs: `npm run sim -- --plant NAME [--quick]` runs a scenario with one known bug injected from the
 * simulator's side, through the ports (the table's writes and verdicts, a container's dependencies, the stream's
 * delivery), without changing production code. Each must stop the run on the invariant named here; the unplanted run
 * of the same scenario holds (tests/unit/sim-plants.test.ts pins both). They keep the checker honest: a check that
 * cannot see a bug it was written for shows up here, not in production.
 */
import type { Table, TxVerdict, WriteOp } from '../shared/adapters/dynamodb/table.ts';
import type { PoolViewCache } from '../shared/core/pool-view-cache.ts';
import { isBlockPool, type PoolView } from '../shared/core/model.ts';
import { familyBits, formatAddress } from '../shared/core/ip/address.ts';
import { parseCidr } from '../shared/core/ip/cidr.ts';
import type { ReconcileStore } from '../shared/core/use-cases/reconcile-ports.ts';
import type { Deps } from '../shared/core/use-cases/deps.ts';
import { RangeFullError } from '../shared/core/errors.ts';
import { Invariant } from './invariants.ts';
import type { Prng } from './prng.ts';
import { NAMED_ONLY, SCENARIOS } from './scenarios.ts';
import type { Caller } from './sim-table.ts';
import { NO_FAULTS, type Scenario } from './world.ts';

/** What a plant changes; each hook is optional. */
export interface PlantHooks {
  /** Rewrites a caller's write operations before the table sees them. */
  readonly mutate?: (ops: readonly WriteOp[], caller: Caller) => WriteOp[];
  /** What a caller is told of a transaction's outcome (undefined: committed; verdicts: cancelled). */
  readonly misreport?: (verdicts: TxVerdict[] | undefined, caller: Caller) => TxVerdict[] | undefined;
  /** The dependencies a container's code gets, by the container's role. */
  readonly deps?: (deps: Deps, role: string) => Deps;
  /** Whether the stream's delivery loses this record. */
  readonly loses?: (rng: Prng) => boolean;
}

export interface Plant {
  readonly name: string;
  readonly bug: string;
  /** The scenario it runs in: one where the bug has something to act on within a quick run. */
  readonly scenario: Scenario;
  /** The invariant that catches it. */
  readonly caughtBy: Invariant;
  /** The quick seed whose run shows it (1 unless said): the one tests/unit/sim-plants.test.ts runs. */
  readonly seed?: number;
  readonly hooks: PlantHooks;
}

const isClaimKey = (op: WriteOp): boolean => op.kind !== 'put' && op.key.PK.startsWith('CLAIM#');
const isLeaseKey = (op: WriteOp): boolean =>
  op.kind === 'put' ? op.item.entity === 'lease' : op.key.PK.startsWith('LEASE#');
const EARLY_MS = 25_000;

/** A claim or lease write with its expiry moved 25 s earlier. */
function early(op: WriteOp): WriteOp {
  if (
    op.kind === 'put' &&
    (op.item.entity === 'claim' || op.item.entity === 'lease') &&
    typeof op.item.expiresAt === 'number'
  ) {
    return { ...op, item: { ...op.item, expiresAt: op.item.expiresAt - EARLY_MS } };
  }
  const set = op.kind === 'update' ? op.update.set : undefined;
  if (op.kind === 'update' && set && typeof set.expiresAt === 'number')
    return { ...op, update: { ...op.update, set: { ...set, expiresAt: set.expiresAt - EARLY_MS } } };
  return op;
}

/** The view cache with createClaim's post-commit generation read skipped: every view is taken as current. */
function skippingCheck(views: PoolViewCache): PoolViewCache {
  const planted = Object.create(views) as PoolViewCache;
  planted.read = (pool, nowMs, fresh) => views.read(pool, nowMs, fresh);
  planted.confirm = (pool, view, nowMs) => {
    views.remember(pool, view, nowMs);
    return Promise.resolve(true);
  };
  return planted;
}

/** The view cache answering every growing pool with a bound 3 blocks higher. */
function raisingBound(views: PoolViewCache): PoolViewCache {
  const planted = Object.create(views) as PoolViewCache;
  const raised = (view: PoolView): PoolView =>
    view.pool.grow
      ? { ...view, pool: { ...view.pool, grow: { ...view.pool.grow, maxBlocks: view.pool.grow.maxBlocks + 3 } } }
      : view;
  planted.get = async (pool, nowMs, fresh) => raised(await views.get(pool, nowMs, fresh));
  planted.read = async (pool, nowMs, fresh) => {
    const read = await views.read(pool, nowMs, fresh);
    return { ...read, view: raised(read.view) };
  };
  return planted;
}

/** A put of a range made from a claim (`source`) with its CIDR moved one block of its size up. */
function nextBlock(op: WriteOp): WriteOp {
  if (op.kind !== 'put' || op.item.entity !== 'range' || op.item.source === undefined) return op;
  const cidr = parseCidr(op.item.cidr as string);
  const size = 1n << BigInt(familyBits(cidr.family) - cidr.prefix);
  const moved = `${formatAddress({ family: cidr.family, value: cidr.base + size })}/${cidr.prefix}`;
  return { ...op, item: { ...op.item, cidr: moved } };
}

/** The reconciler's store releasing an expired claim on its uid alone: a renewal since the read no longer saves it. */
function releasingRenewed(store: ReconcileStore): ReconcileStore {
  const planted = Object.create(store) as ReconcileStore;
  planted.releaseExpiredClaim = (claim, _cutoffMs, event, hold) => store.releaseClaim(claim, event, hold);
  return planted;
}

/**
 * The pool store with its deletion's second phase trusting the claims listing: the leases it re-reads name no claim,
 * so a claim the lagging listing misses is never read for its child ranges, and its leases go while it stays.
 */
function trustingClaimsListing(pools: Deps['pools']): Deps['pools'] {
  const store = pools as unknown as { table: Table; finalizePool: Deps['pools']['finalizePool'] };
  const table = Object.create(store.table) as Table;
  table.batchGet = async (keys, attributes) =>
    (await store.table.batchGet(keys, attributes)).map((item) => {
      if (item.entity !== undefined || !attributes?.includes('claim')) return item;
      const { claim: _claim, ...rest } = item;
      return rest;
    });
  const finalizing = Object.create(store, { table: { value: table } }) as typeof store;
  const planted = Object.create(pools) as Deps['pools'];
  planted.finalizePool = (pool, options) => store.finalizePool.call(finalizing, pool, options);
  return planted;
}

const calm = SCENARIOS.calm!;

export const PLANTS: Readonly<Record<string, Plant>> = {
  'leak-lease': {
    name: 'leak-lease',
    bug: 'a release deletes the claim and leaves its lease items',
    scenario: { ...calm, name: 'calm' },
    caughtBy: Invariant.ReleasedAddressFree,
    hooks: {
      mutate: (ops, caller) =>
        caller.role === 'api' && ops.some(isClaimKey)
          ? ops.filter((op) => !(op.kind === 'delete' && isLeaseKey(op)))
          : [...ops],
    },
  },
  'early-expiry': {
    name: 'early-expiry',
    bug: 'claims and leases are written with an expiry 25 s earlier than the one answered',
    scenario: { ...calm, name: 'calm' },
    caughtBy: Invariant.HeldClaimStaysHeld,
    hooks: { mutate: (ops, caller) => (caller.role === 'api' ? ops.map(early) : [...ops]) },
  },
  'conflict-as-success': {
    name: 'conflict-as-success',
    bug: 'a cancelled transaction (a condition failed or a conflict) is reported to the API as committed',
    scenario: SCENARIOS.crowded!,
    caughtBy: Invariant.RetrySameAddresses,
    hooks: { misreport: (verdicts, caller) => (caller.role === 'api' ? undefined : verdicts) },
  },
  'skip-generation-check': {
    name: 'skip-generation-check',
    bug: "createClaim's post-commit range-generation read is skipped (every view taken as current)",
    // Ranges added and deleted every 2 s on average beside one small range, so claims land in the deleted ones.
    scenario: {
      ...calm,
      name: 'churn',
      cidrs: ['10.0.0.0/26'],
      ipv6: undefined,
      legacy: false,
      faults: { ...NO_FAULTS, rangeChurnPerMinute: 30 },
    },
    caughtBy: Invariant.NoClaimInDeletedRange,
    hooks: { deps: (deps, role) => (role === 'api' ? { ...deps, views: skippingCheck(deps.views) } : deps) },
  },
  'drop-stream-record': {
    name: 'drop-stream-record',
    bug: 'the stream delivery loses one lease record in fifty',
    scenario: { ...calm, name: 'calm' },
    caughtBy: Invariant.ProjectionLagBounded,
    hooks: { loses: (rng) => rng.chance(0.02) },
  },
  'release-renewed': {
    name: 'release-renewed',
    bug: 'the reconciler releases an expired claim on its uid alone, even when it was renewed since it was read',
    // Clients that renew just after their claims expired, and a reconciler that releases at once, every second.
    scenario: {
      ...calm,
      name: 'late-renewals',
      ttlShare: 1,
      ttlSeconds: 4,
      renewAfter: 1.05,
      reconcilePeriodMs: 1000,
      reconcilerGraceSeconds: 0,
    },
    caughtBy: Invariant.HeldClaimStaysHeld,
    hooks: {
      deps: (deps, role) => (role === 'reconciler' ? { ...deps, reconcile: releasingRenewed(deps.reconcile) } : deps),
    },
  },
  'release-consumed': {
    name: 'release-consumed',
    bug: "removing one of a claim's consumers releases the claim although others still consume it",
    scenario: { ...calm, name: 'calm' },
    caughtBy: Invariant.ConsumedClaimHeld,
    hooks: { deps: (deps, role) => (role === 'api' ? { ...deps, claims: releasingOnRemoval(deps) } : deps) },
  },
  'full-without-reading': {
    name: 'full-without-reading',
    bug: 'every fourth claim is answered RangeFull without reading the leases (the "used up" decision skipped)',
    scenario: { ...SCENARIOS.crowded!, name: 'crowded' },
    caughtBy: Invariant.RangeFullExact,
    hooks: {
      deps: (deps, role) =>
        role === 'api' ? { ...deps, allocator: fullEveryFourth(deps.allocator, 'address') } : deps,
    },
  },
  'block-full-without-reading': {
    name: 'block-full-without-reading',
    bug: 'every fourth claim of a block pool is answered RangeFull without reading the block leases',
    scenario: { ...NAMED_ONLY.blocks!, name: 'blocks' },
    caughtBy: Invariant.RangeFullExact,
    hooks: {
      deps: (deps, role) => (role === 'api' ? { ...deps, allocator: fullEveryFourth(deps.allocator, 'block') } : deps),
    },
  },
  'grow-past-bound': {
    name: 'grow-past-bound',
    bug: "a growing pool's bound read 3 blocks higher than the pool's (the API containers' view cache)",
    scenario: { ...NAMED_ONLY.blocks!, name: 'blocks' },
    caughtBy: Invariant.GrowthBounded,
    hooks: { deps: (deps, role) => (role === 'api' ? { ...deps, views: raisingBound(deps.views) } : deps) },
  },
  'child-off-source': {
    name: 'child-off-source',
    bug: "a range made from a block claim is written one block past the claim's (the setup's range writes rewritten)",
    scenario: { ...NAMED_ONLY.blocks!, name: 'blocks' },
    caughtBy: Invariant.PoolTree,
    hooks: {
      mutate: (ops, caller) => (caller.role === 'setup' ? ops.map(nextBlock) : [...ops]),
    },
  },
  'delete-parent-on-listing': {
    name: 'delete-parent-on-listing',
    bug: "a pool's deletion trusts its claims listing: a lease's claim is not read, so a claim the listing misses keeps its child range while its lease is deleted",
    scenario: { ...NAMED_ONLY.blocks!, name: 'blocks' },
    // The deleted lease shows first as a live claim without it, or, once the parent is made again and its one block
    // claimed, as a block held twice; which one, and whether a lagging listing lets the DELETE through at all in a
    // quick run, depends on the seed (quick seeds 1-18 on this tree: 2, 4, 5, 9, 14 and 17 break with a block held
    // twice, 18 with the live claim without its lease, the others hold).
    caughtBy: Invariant.ClaimLeases,
    seed: 18,
    hooks: { deps: (deps) => ({ ...deps, pools: trustingClaimsListing(deps.pools) }) },
  },
  'keep-last-consumer': {
    name: 'keep-last-consumer',
    bug: "the last consumer's leaving is answered as a release but the claim is kept",
    scenario: { ...calm, name: 'calm' },
    caughtBy: Invariant.ConsumersLeftReleased,
    hooks: { deps: (deps, role) => (role === 'api' ? { ...deps, allocator: keepingConsumed(deps.allocator) } : deps) },
  },
};

/** A claim store whose consumer removal releases the claim (through the allocator, leases and all) instead. */
function releasingOnRemoval(deps: Deps): Deps['claims'] {
  const planted = Object.create(deps.claims) as Deps['claims'];
  planted.changeConsumers = async (claim, change) =>
    'remove' in change
      ? (await deps.allocator.release(claim, claim.version)) === 'released'
        ? 'written'
        : 'claimChanged'
      : deps.claims.changeConsumers(claim, change);
  return planted;
}

/** An allocator that answers a release of a claim with consumers as done, and writes nothing. */
function keepingConsumed(allocator: Deps['allocator']): Deps['allocator'] {
  const planted = Object.create(allocator) as Deps['allocator'];
  planted.release = (claim, expectedVersion, hold, event) =>
    claim.consumers?.length ? Promise.resolve('released') : allocator.release(claim, expectedVersion, hold, event);
  return planted;
}

/**
 * An allocator that answers every fourth claim of a container in a pool handing out `unit`s (address or block pools)
 * RangeFull in its first family, reading nothing; claims in the other kind of pool are left alone and not counted.
 */
function fullEveryFourth(allocator: Deps['allocator'], unit: 'address' | 'block'): Deps['allocator'] {
  const planted = Object.create(allocator) as Deps['allocator'];
  let calls = 0;
  planted.allocate = (view, draft, requests, options) =>
    isBlockPool(view.pool) === (unit === 'block') && (calls += 1) % 4 === 0
      ? Promise.reject(new RangeFullError(view.pool.name, requests[0]?.family ?? 'IPv4', unit))
      : allocator.allocate(view, draft, requests, options);
  return planted;
}

export const PLANT_NAMES = Object.keys(PLANTS);

/** The plants' own scenarios by name (`--scenario churn` runs one without its plant). */
export const PLANT_SCENARIOS: Readonly<Record<string, Scenario>> = Object.fromEntries(
  Object.values(PLANTS).map((p) => [p.scenario.name, p.scenario]),
);
