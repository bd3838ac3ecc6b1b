// Over 300 lines: the one pass that walks the reconciler's case table (docs/reconciler.md), phase by phase, in the order a run takes them.
/**
 * The reconciler: one bounded, resumable pass that keeps the store honest (Kubernetes' repairip.go, the ServiceCIDR
 * and DRA claim controllers, whereabouts' ip-reconciler).
 *
 * Every inconsistency it handles is a row of the table in docs/reconciler.md, "What it repairs" (the one table): how
 * it is found, the conditional write that repairs it, the event it writes. The code cites its rows by number ("row 9");
 * tests/unit/reconciler-table.test.ts checks that every row cited exists there and every event it writes is listed.
 *
 * Cost follows the work: row 2 reads one tombstone query per pool, and one owner index query per owner reported gone
 * in the last 10 minutes; rows 1 and 3-5 read only expired index entries (hour buckets from a persisted checkpoint,
 * sort key at or before the cutoff); rows 3-7 and 13 are also covered by a sweep that reads a fixed number of items per
 * run from a persisted cursor; rows 11-12 read the pools' ranges (a handful of items). Utilization counts leases within
 * a fixed budget per run, a big range's count continuing over runs (usage.ts); rows 8-10 touch only legacy ranges, and
 * scan a bitmap's window (within the same kind of budget, resumably) only when it can have drifted (drift.ts). So a
 * run's reads follow its repairs plus fixed budgets, not the size of the table (docs/reconciler.md).
 *
 * Bounded and resumable: the run checks its deadline before every unit of work, stops there, and the checkpoints
 * (expiry hour, sweep cursor, count passes, drift scan offsets) let the next run continue.
 */
import { NotFoundError } from '../errors.ts';
import {
  holdOf,
  leaseOfClaim,
  reuseDelayMs,
  type Claim,
  type Lease,
  type Pool,
  type PoolView,
  type Range,
} from '../model.ts';
import { subtractIntervals } from '../base/intervals.ts';
import { hostInterval, hostIntervals, rangeCidr, rangesOf, type ParsedRange } from '../base/pool-geometry.ts';
import {
  expiryHours,
  isReleasable,
  judgeClaim,
  judgeLease,
  judgeLeaseRange,
  nextExpiryCheckpoint,
  outsideEveryRange,
  terminationGraceOver,
} from './plan.ts';
import { events } from '../events.ts';
import type { ExpiredRef, PoolViewList } from '../use-cases/reconcile-ports.ts';
import type { EventReason } from '../events.ts';
import { repairBitmaps } from './drift.ts';
import { releaseDeletedPoolClaims } from './deleted-pools.ts';
import { recheckGoneOwners } from './owners.ts';
import { checkHistory, type HistoryCheck } from './history.ts';
import {
  EXPIRY_CHECKPOINT,
  Phase,
  RETRIES,
  Run,
  SWEEP_CHECKPOINT,
  type RangeUsage,
  type ReconcileDeps,
  type SweepCheckpoint,
} from './run.ts';
import { measureUsage } from './usage.ts';
import { buildMissingSummaries } from './summary.ts';
import { releaseGrownSource } from '../use-cases/grown-blocks.ts';
import { releaseLeftGrownBlocks } from './grown-blocks.ts';
import { repairDns, type DnsPoolRepair } from './dns.ts';

export {
  EXPIRY_CHECKPOINT,
  Phase,
  SWEEP_CHECKPOINT,
  type RangeUsage,
  type ReconcileDeps,
  type SweepCheckpoint,
} from './run.ts';

export interface ReconcileOptions {
  /** Clock time (epoch ms) at which the run stops starting new work. */
  readonly deadlineMs: number;
}

/** What one run did. */
export interface ReconcileReport {
  /** False when the run stopped at its deadline; the next run continues from the checkpoints. */
  readonly complete: boolean;
  /** The phase the deadline stopped, if any. */
  readonly stoppedIn?: Phase;
  /** Repairs by kind (reported duplicates included), each backed by exactly one event. */
  readonly repairs: Readonly<Record<EventReason, number>>;
  /** Every range of every pool with a complete count, idle ones included (empty when the deadline came first). */
  readonly utilization: readonly RangeUsage[];
  /** The expiry buckets read and where the checkpoint stands now (absent when it could not be read). */
  readonly expiry: { readonly hoursRead: number; readonly checkpointHour?: number };
  /** Items the sweep checked in this run, and whether it finished a whole cycle. */
  readonly sweep: { readonly checked: number; readonly cycleCompleted: boolean };
  /** Legacy ranges whose bitmap window was scanned (in part or whole) or rebuilt in this run (drift check). */
  readonly bitmapsChecked: number;
  /** The address history's lag per pool, and the release events its gap check read (history.ts). */
  readonly history: HistoryCheck;
  /** Rows 22-24: each pool's DNS zones compared and repaired this run (pools with `dns` only). */
  readonly dns: readonly DnsPoolRepair[];
  /** Pools whose occupancy summary was built (row 14), and summary bits corrected (row 15). */
  readonly summary: { readonly built: number; readonly repaired: number };
  /**
   * Units of work that failed (the store refused or threw), and reads that ended a phase or skipped an item; a
   * transient failure only after its retries within this run (Run.retrying); later runs try them again.
   */
  readonly errors: readonly string[];
  /**
   * Work that waits for something expected and is left to later runs, not an error (a deleted pool whose claim is the
   * source of another pool's range, row 20): one line per item and run, naming what it waits for.
   */
  readonly waiting: readonly string[];
}

/** Index entries read per expiry query page. */
const EXPIRY_PAGE = 100;
/** Hours of expiry buckets queried at once (times the shards per hour). */
const HOURS_AT_ONCE = 4;
/** Items per sweep page. */
const SWEEP_PAGE = 100;

/**
 * One reconciler pass: expired claims and leases, owners reported gone lately, Terminating ranges, utilization counts,
 * bitmap drift, then the slow sweep with whatever time is left. Never throws (see `errors`): a unit of work that
 * fails is recorded and the run goes on; a read a phase needs (a checkpoint, the pool listing, a page) is retried
 * within the run (Run.read, RETRIES.read) and, when it still fails, ends that phase only (or skips its item): the
 * later phases still run. Without the pool listing, the phases that walk pools (owners' recheck, ranges, summaries,
 * utilization, drift, the sweep's row 13) do nothing this run; expiry, deleted pools and the sweep's rows still run.
 */
export async function reconcile(deps: ReconcileDeps, options: ReconcileOptions): Promise<ReconcileReport> {
  const run = new Run(deps, options.deadlineMs);
  const expiry = await run.phase(Phase.Expiry, () => releaseExpired(run), { hoursRead: 0 });
  const listed = run.out(Phase.Owners) ? undefined : await run.read('list pools', () => deps.reconcile.listPoolViews());
  const views = listed?.ok ? listed.value : [];
  if (!run.out(Phase.Owners)) await run.phase(Phase.Owners, () => recheckGoneOwners(run, views), undefined);
  if (!run.out(Phase.Owners)) await run.phase(Phase.Owners, () => releaseDeletedPoolClaims(run), undefined);
  if (!run.out(Phase.Ranges)) await run.phase(Phase.Ranges, () => finalizeRanges(run, views), undefined);
  if (!run.out(Phase.Summary))
    run.summary.built += await run.phase(Phase.Summary, () => buildMissingSummaries(run, views), 0);
  const noUsage = { usage: [], records: new Map() };
  const measured = run.out(Phase.Utilization)
    ? noUsage
    : await run.phase(Phase.Utilization, () => measureUsage(run, views), noUsage);
  const bitmapsChecked = run.out(Phase.Drift)
    ? 0
    : await run.phase(Phase.Drift, () => repairBitmaps(run, views, measured.records), 0);
  const utilization = measured.usage;
  const noHistory = { lagMs: {}, eventsChecked: 0 };
  const history = run.out(Phase.History)
    ? noHistory
    : await run.phase(Phase.History, () => checkHistory(run, views), noHistory);
  const dns = run.out(Phase.Dns) ? [] : await run.phase(Phase.Dns, () => repairDns(run, views), []);
  const noSweep = { checked: 0, cycleCompleted: false };
  // Row 13 needs the pools' ranges: without the listing, the sweep leaves held leases alone this run.
  const sweep = run.out(Phase.Sweep)
    ? noSweep
    : await run.phase(Phase.Sweep, () => sweepSlice(run, listed?.ok ? views : undefined), noSweep);
  return {
    complete: run.stoppedIn === undefined,
    ...(run.stoppedIn !== undefined ? { stoppedIn: run.stoppedIn } : {}),
    repairs: run.repairs,
    utilization,
    expiry,
    sweep,
    bitmapsChecked,
    dns,
    summary: run.summary,
    history,
    errors: run.errors,
    waiting: run.waiting,
  };
}

// ---- rows 1, 3-5: the expiry index ----

async function releaseExpired(run: Run): Promise<{ hoursRead: number; checkpointHour?: number }> {
  const { reconcile: store, settings } = run.deps;
  const cutoff = run.now() - settings.expiredClaimGraceMs;
  const read = await run.read('read expiry checkpoint', () => store.getCheckpoint<{ hour: number }>(EXPIRY_CHECKPOINT));
  // Without it the phase cannot tell which buckets are open (the sweep is the backstop); the next run reads it again.
  if (!read.ok) return { hoursRead: 0 };
  const checkpoint = read.value;
  const hours = expiryHours(checkpoint?.value.hour, cutoff);
  const undrained = new Set<number>();
  let hoursRead = 0;
  // Most buckets are empty: their queries go out together, a few hours at a time.
  for (let i = 0; i < hours.length; i += HOURS_AT_ONCE) {
    const chunk = hours.slice(i, i + HOURS_AT_ONCE);
    if (run.out(Phase.Expiry)) {
      chunk.forEach((h) => undrained.add(h));
      continue;
    }
    hoursRead += chunk.length;
    const buckets = chunk.flatMap((hour) =>
      Array.from({ length: store.expiryShards }, (_, shard) => ({ hour, shard })),
    );
    await Promise.all(
      buckets.map(async ({ hour, shard }) => {
        let after: string | undefined;
        do {
          if (run.out(Phase.Expiry)) {
            undrained.add(hour);
            return;
          }
          let next: string | undefined;
          const drained = await run.attempt(`expiry bucket ${hour}/${shard}`, async () => {
            const page = await run.retrying(
              () => store.expiredRefs({ hour, shard }, { cutoffMs: cutoff, limit: EXPIRY_PAGE, after }),
              RETRIES.read,
            );
            next = page.next;
            return handleExpired(run, page.refs, cutoff);
          });
          if (!drained) undrained.add(hour);
          // A page that failed to read (after its retries) or to handle leaves the bucket to the next run (its hour stays open).
          after = next;
        } while (after !== undefined);
      }),
    );
  }
  const next = nextExpiryCheckpoint(undrained.size ? Math.min(...undrained) : undefined, cutoff);
  const current = checkpoint?.value.hour;
  // Two runs may both try; the one that loses the version check leaves the other's (equal or later) hour alone.
  if (current === undefined || next > current)
    await run.repair(
      'save expiry checkpoint',
      async () => (await store.saveCheckpoint(EXPIRY_CHECKPOINT, { hour: next }, checkpoint?.version), true),
    );
  return { hoursRead, checkpointHour: Math.max(next, current ?? next) };
}

/** Handles one page of expired index entries; true when nothing is left to do for them. */
async function handleExpired(run: Run, refs: readonly ExpiredRef[], cutoff: number): Promise<boolean> {
  const { reconcile: store } = run.deps;
  const claimRefs = refs.filter((r): r is Extract<ExpiredRef, { kind: 'claim' }> => r.kind === 'claim');
  const leaseRefs = refs.filter((r): r is Extract<ExpiredRef, { kind: 'lease' }> => r.kind === 'lease');
  // Claims first: releasing a claim takes its leases with it, so they need no separate look.
  const claims = claimRefs.length ? await run.retrying(() => store.getClaims(claimRefs), RETRIES.read) : [];
  const pools = await poolsOf(
    run,
    claims.map((c) => c.pool),
  );
  const claimsDone = await run.each(Phase.Expiry, claims, (claim) =>
    releaseIfExpired(run, claim, cutoff, pools.get(claim.pool)),
  );
  const leases = leaseRefs.length ? await run.retrying(() => store.getLeases(leaseRefs), RETRIES.read) : [];
  const leasesDone = await checkLeases(run, Phase.Expiry, leases);
  return claimsDone && leasesDone;
}

/** Row 1. A claim that is no longer expired (renewed meanwhile) or already gone needs nothing. */
async function releaseIfExpired(run: Run, claim: Claim, cutoff: number, pool: Pool | undefined): Promise<boolean> {
  if (!isReleasable(claim, cutoff)) return true;
  return run.repair(`release expired claim ${claim.pool}/${claim.name}`, async () => {
    const hold = pool && holdOf(pool, claim, run.now());
    const event = events.claimExpired(claim, run.iso(), hold);
    run.done(event, (await run.deps.reconcile.releaseExpiredClaim(claim, cutoff, event, hold)) === 'released');
    // 'changed': renewed, released or replaced meanwhile; nothing is left for this entry either way.
    forgetHints(run, claim.pool, claim.addresses);
    return true;
  });
}

/**
 * Rows 3-5 for leases read from the expiry index or the sweep, and row 13 for held leases when the run's pool views
 * are given (the sweep); true when none is left waiting.
 */
async function checkLeases(
  run: Run,
  phase: Phase,
  leases: readonly Lease[],
  views?: ReadonlyMap<string, PoolView>,
): Promise<boolean> {
  if (leases.length === 0) return true;
  const refs = uniqueBy(
    leases.map((l) => ({ pool: l.pool, name: l.claim })),
    (r) => `${r.pool}/${r.name}`,
  );
  const claims = await run.retrying(() => run.deps.reconcile.getClaims(refs), RETRIES.read);
  const byName = new Map(claims.map((c) => [`${c.pool}/${c.name}`, c]));
  const pools = await poolsOf(
    run,
    leases.map((l) => l.pool),
  );
  return run.each(phase, leases, async (lease) => {
    const nowMs = run.now();
    const verdict = judgeLease(
      lease,
      byName.get(`${lease.pool}/${lease.claim}`),
      nowMs,
      run.deps.settings.orphanLeaseGraceMs,
    );
    if (verdict.kind === 'held') return views ? reportIfOutside(run, lease, views.get(lease.pool), nowMs) : true;
    if (verdict.kind === 'tooYoung') return false;
    if (verdict.kind === 'releasing') return true;
    if (verdict.kind === 'reusable') {
      // Row 16: clean-up only; the address has been free since the delay ended, whether or not this runs.
      return run.repair(
        `drop released lease ${lease.pool}/${lease.address}`,
        async () => (await run.deps.reconcile.dropReleased(lease, nowMs), true),
      );
    }
    return run.repair(`release orphaned lease ${lease.pool}/${lease.address}`, async () => {
      const pool = pools.get(lease.pool);
      // An orphan is released like its claim would have been: held for its owner when the pool has a reuse delay.
      const hold = pool && holdOf(pool, {}, nowMs);
      const event = events.leaseOrphaned(lease, verdict.why, run.iso(nowMs), hold);
      const createdBefore = run.iso(nowMs - run.deps.settings.orphanLeaseGraceMs);
      run.done(event, (await run.deps.reconcile.releaseLease(lease, createdBefore, event, hold)) === 'released');
      return true;
    });
  });
}

/**
 * Row 13: a held lease outside every range of its pool is reported, never released: its claim still holds the address
 * and its owner may be using it. (A lease whose claim is gone is row 3's, released as orphaned wherever it lies.)
 */
async function reportIfOutside(run: Run, lease: Lease, view: PoolView | undefined, nowMs: number): Promise<boolean> {
  if (judgeLeaseRange(lease, view, nowMs, run.deps.settings.orphanLeaseGraceMs) !== 'outside') return true;
  return run.repair(`report lease outside ranges ${lease.pool}/${lease.address}`, async () => {
    // The run's views and the sweep's copy of the lease may be stale (a range added, the lease released since):
    // report only what consistent reads still show.
    const [current] = await run.deps.reconcile.getLeases([{ pool: lease.pool, address: lease.address }]);
    if (!current || current.claimUid !== lease.claimUid) return true;
    if (!outsideEveryRange(await run.deps.pools.getPoolView(lease.pool), current)) return true;
    const event = events.leaseOutsideRange(current, run.iso(nowMs));
    run.done(
      event,
      await run.deps.reconcile.reportOnce(event, `outside/${current.address}/${current.claimUid}`, nowMs),
    );
    return true;
  });
}

// ---- rows 11-12: Terminating ranges ----

async function finalizeRanges(run: Run, views: PoolViewList): Promise<void> {
  const { settings } = run.deps;
  for (const view of views) {
    for (const range of view.ranges) {
      if (run.out(Phase.Ranges)) return;
      if (!terminationGraceOver(range, run.now(), settings.terminatingRangeGraceMs)) continue;
      await run.repair(`finalize range ${range.pool}/${range.name}`, async () => {
        if (
          await hasDependentLease(
            run,
            range,
            rangesOf(view, range.family).filter((r) => r.range.name !== range.name),
          )
        )
          return true;
        const event = events.rangeFinalized(range, run.iso());
        const finalized = (await run.deps.reconcile.finalizeRange(range, event)) === 'finalized';
        run.done(event, finalized);
        if (finalized) await releaseGrownSource(run.deps, range);
        run.deps.views.forget(range.pool);
        run.deps.hints.forget(range.pool);
        return true;
      });
    }
  }
}

/**
 * Rows 11-12: whether a lease depends on this range alone, as `dependentLeases` (use-cases/ranges.ts) decides it: a
 * lease among its host addresses that no other Ready range holds as a host address; expired leases count too (their
 * claims may renew). Only "any" matters here, so it probes with one item per shard instead of counting.
 */
async function hasDependentLease(run: Run, range: Range, otherReady: readonly ParsedRange[]): Promise<boolean> {
  const own = hostInterval(rangeCidr(range));
  if (!own) return false;
  const alone = subtractIntervals([own], hostIntervals(otherReady));
  return alone.length > 0 && run.deps.reconcile.leaseExists(range.pool, range.family, alone);
}

// ---- rows 1, 3-7, 13, 21: the slow sweep ----

async function sweepSlice(
  run: Run,
  views: PoolViewList | undefined,
): Promise<{ checked: number; cycleCompleted: boolean }> {
  const { reconcile: store, settings } = run.deps;
  const byPool = views && new Map(views.map((v) => [v.pool.name, v]));
  const read = await run.read('read sweep checkpoint', () => store.getCheckpoint<SweepCheckpoint>(SWEEP_CHECKPOINT));
  if (!read.ok) return { checked: 0, cycleCompleted: false };
  const checkpoint = read.value;
  let cursor = checkpoint?.value.cursor;
  let cycles = checkpoint?.value.cycles ?? 0;
  let checked = 0;
  let cycleCompleted = false;
  while (checked < settings.sweepItems && !run.out(Phase.Sweep)) {
    const from = cursor;
    const got = await run.read('read sweep page', () =>
      store.sweep(from, Math.min(SWEEP_PAGE, settings.sweepItems - checked)),
    );
    if (!got.ok) break; // The next run reads it again from the cursor saved below.
    const page = got.value;
    checked += page.claims.length + page.leases.length;
    // A page is done even when some of its items wait (rows 5, 12): the next cycle sees them again.
    const handled = await run.attempt('check sweep page', async () => {
      await checkClaims(run, page.claims);
      await checkLeases(run, Phase.Sweep, page.leases, byPool);
      // Row 21 needs the pools' ranges, as row 13 does.
      if (byPool) await releaseLeftGrownBlocks(run, page.claims, byPool);
      return true;
    });
    // The page was not finished (the deadline, or a read of its items failed): keep the cursor where it was.
    if (!handled || run.stoppedIn !== undefined) break;
    cursor = page.next;
    if (cursor === undefined) {
      cycles += 1;
      cycleCompleted = true;
      break;
    }
  }
  await run.repair(
    'save sweep checkpoint',
    async () => (
      await store.saveCheckpoint<SweepCheckpoint>(
        SWEEP_CHECKPOINT,
        { ...(cursor !== undefined ? { cursor } : {}), cycles },
        checkpoint?.version,
      ),
      true
    ),
  );
  return { checked, cycleCompleted };
}

/**
 * The pools' settings (their reuse delay) from the view cache, read before a page's units of work start; undefined
 * for a pool that is gone. A throttled read is retried (RETRIES.read); any other failure, or the last, fails the page:
 * a release must not lose its hold.
 */
async function poolsOf(run: Run, names: readonly string[]): Promise<Map<string, Pool | undefined>> {
  const unique = [...new Set(names)];
  const pools = await Promise.all(
    unique.map(async (pool) => {
      try {
        return (await run.retrying(() => run.deps.views.get(pool, run.now()), RETRIES.read)).pool;
      } catch (error) {
        if (error instanceof NotFoundError) return undefined;
        throw error;
      }
    }),
  );
  return new Map(unique.map((name, i) => [name, pools[i]]));
}

/** Rows 1 (backstop), 6 and 7 for claims read by the sweep. */
async function checkClaims(run: Run, claims: readonly Claim[]): Promise<void> {
  if (claims.length === 0) return;
  const { reconcile: store, settings } = run.deps;
  const cutoff = run.now() - settings.expiredClaimGraceMs;
  const refs = uniqueBy(
    claims.flatMap((c) => c.addresses.map((a) => ({ pool: c.pool, address: a.address }))),
    (r) => `${r.pool}/${r.address}`,
  );
  const leases = await run.retrying(() => store.getLeases(refs), RETRIES.read);
  const byAddress = new Map(leases.map((l) => [`${l.pool}/${l.address}`, l]));
  const pools = await poolsOf(
    run,
    claims.map((c) => c.pool),
  );
  await run.each(Phase.Sweep, claims, async (claim) => {
    if (isReleasable(claim, cutoff)) return releaseIfExpired(run, claim, cutoff, pools.get(claim.pool));
    const mine = new Map(
      claim.addresses.flatMap((a) => {
        const lease = byAddress.get(`${claim.pool}/${a.address}`);
        return lease ? [[a.address, lease] as const] : [];
      }),
    );
    const nowMs = run.now();
    const verdict = judgeClaim(claim, mine, nowMs, settings.orphanLeaseGraceMs);
    if (verdict.kind !== 'checked') return true;
    for (const address of verdict.addresses) {
      if (address.kind === 'missing') {
        await run.repair(`restore lease ${claim.pool}/${address.address.address}`, async () => {
          const event = events.leaseNotAllocated(claim, address.address.address, run.iso(nowMs));
          // Row 6: the lease the claim should have, created now.
          const pool = pools.get(claim.pool);
          const lease = leaseOfClaim(claim, address.address, run.iso(nowMs), pool ? reuseDelayMs(pool) : 0);
          run.done(event, (await store.restoreLease(claim, lease, nowMs, event)) === 'restored');
          return true;
        });
      } else if (address.kind === 'duplicate') {
        await run.repair(`report duplicate ${claim.pool}/${address.address.address}`, async () => {
          // The sweep's copy of the claim may be stale: report only what a consistent read still shows.
          const [current] = await store.getClaims([{ pool: claim.pool, name: claim.name }]);
          if (!current || current.uid !== claim.uid) return true;
          const event = events.duplicateAllocation(claim, address.holder, run.iso(nowMs));
          // Reported once a day, however many runs (or parallel runs) see it.
          run.done(
            event,
            await store.reportOnce(
              event,
              `dup/${address.address.address}/${claim.uid}/${address.holder.claimUid}`,
              nowMs,
            ),
          );
          return true;
        });
      }
    }
    return true;
  });
}

function forgetHints(run: Run, pool: string, addresses: readonly { address: string }[]): void {
  if (addresses.length) run.deps.hints.forget(pool);
}

function uniqueBy<T>(items: readonly T[], key: (item: T) => string): T[] {
  const seen = new Map<string, T>();
  for (const item of items) if (!seen.has(key(item))) seen.set(key(item), item);
  return [...seen.values()];
}
