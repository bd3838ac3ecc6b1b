import { capacity } from '../ip/cidr.ts';
import type { Pool, Range } from '../model.ts';
import type { Interval } from '../base/intervals.ts';
import { hostInterval, rangeCidr } from '../base/pool-geometry.ts';
import { windowInterval } from '../bitmap/legacy.ts';
import type { Checkpoint, PoolViewList, UsageRecord } from '../use-cases/reconcile-ports.ts';
import { Phase, RETRIES, type RangeUsage, type Run } from './run.ts';
import { readSummary } from '../occupancy/reader.ts';
import { checkRangeSummary, SUMMARY_CHECK_EVERY_MS } from './summary.ts';

/**
 * Utilization, at a bounded cost per run. Counting a range's leases reads every lease index item of the range, so a
 * run counts at most `settings.countItems` of them: small ranges are counted whole every run, and a big range's count
 * (a "pass") continues over as many runs as it needs from a cursor kept in its usage record. Every run publishes the
 * last complete count of every range, with the time it was completed.
 *
 *   run 1: [range a ✓][range b ✓][range c ....        budget spent
 *   run 2:                       ....c continues ✓][a ✓][b ✓]     (stalest first)
 *
 * Legacy ranges are counted in two parts, their bitmap window first, so the pass also yields the number of lease
 * items (expired ones included) the bitmap should hold: the drift check compares it with the bitmap's set bits.
 *
 * A range of a pool with an occupancy summary takes its utilization from the summary every run (reads follow its
 * chunks, not its leases) unless some lease there has a TTL; its count only checks the summary (row 15), so it runs
 * at most every SUMMARY_CHECK_EVERY_MS (legacy ranges keep counting every run: the drift check needs it).
 */

/** The intervals a range's pass counts: the legacy window first (when it is not the whole range), then the rest. */
export function usageIntervals(range: Range): { intervals: Interval[]; window?: number } {
  const cidr = rangeCidr(range);
  const host = hostInterval(cidr);
  if (!host) return { intervals: [] };
  const window = range.legacy ? windowInterval(cidr) : undefined;
  if (!window) return { intervals: [host] };
  return window[1] < host[1]
    ? { intervals: [window, [window[1] + 1n, host[1]]], window: 0 }
    : { intervals: [host], window: 0 };
}

/** Which range to count first: passes in progress, then ranges never counted, then the stalest count. */
export function countOrder(a: UsageRecord | undefined, b: UsageRecord | undefined): number {
  const rank = (r: UsageRecord | undefined) => (r?.pass ? 0 : r?.countedAt === undefined ? 1 : 2);
  const key = (r: UsageRecord | undefined) => r?.pass?.startedAt ?? r?.countedAt ?? 0;
  return rank(a) - rank(b) || key(a) - key(b);
}

/** Usage records of every range counted or looked at in this run, by `pool/range`. */
export type UsageByRange = ReadonlyMap<string, UsageRecord>;

/** Usage records as read this run, by `pool/range`; undefined: the range has no record yet. */
type StoredUsage = Map<string, Checkpoint<UsageRecord> | undefined>;

/** Counts what the budget allows and returns every range's last complete count. */
export async function measureUsage(
  run: Run,
  views: PoolViewList,
): Promise<{ usage: RangeUsage[]; records: UsageByRange }> {
  const records = await readUsageRecords(run, views);
  const poolOf = new Map(views.map((v) => [v.pool.name, v.pool]));
  const checkedLately = (r: Range) => {
    const counted = records.get(`${r.pool}/${r.name}`)?.value;
    return (
      poolOf.get(r.pool)?.summarySince !== undefined &&
      !r.legacy &&
      counted?.pass === undefined &&
      counted?.countedAt !== undefined &&
      run.now() - counted.countedAt < SUMMARY_CHECK_EVERY_MS
    );
  };
  const ranges = views.flatMap((v) => v.ranges).filter((r) => records.has(`${r.pool}/${r.name}`) && !checkedLately(r));
  ranges.sort((a, b) =>
    countOrder(records.get(`${a.pool}/${a.name}`)?.value, records.get(`${b.pool}/${b.name}`)?.value),
  );
  const budget = { left: run.deps.settings.countItems };
  for (const range of ranges) {
    if (budget.left <= 0 || run.out(Phase.Utilization)) break;
    const key = `${range.pool}/${range.name}`;
    await run.attempt(`count range ${key}`, () =>
      countRange(run, { range, pool: poolOf.get(range.pool), records, budget }),
    );
  }
  return reportUsage(run, views, records);
}

/** Each pool's usage records; a pool whose records cannot be read (after the retries) has none this run. */
async function readUsageRecords(run: Run, views: PoolViewList): Promise<StoredUsage> {
  const records: StoredUsage = new Map();
  for (const view of views) {
    if (run.out(Phase.Utilization)) break;
    const stored = await run.read(`read usage of pool ${view.pool.name}`, () =>
      run.deps.reconcile.getUsage(view.pool.name),
    );
    if (!stored.ok) continue;
    for (const range of view.ranges) {
      const record = stored.value.get(range.name);
      // A record of an earlier range of that name counts for nothing.
      records.set(
        `${range.pool}/${range.name}`,
        record && record.value.cidr === range.cidr
          ? record
          : record
            ? { value: { cidr: range.cidr }, version: record.version }
            : undefined,
      );
    }
  }
  return records;
}

/** Counts one slice of a range's leases within the budget, saves the pass or the count, and checks its summary. */
async function countRange(
  run: Run,
  args: {
    readonly range: Range;
    readonly pool: Pool | undefined;
    readonly records: StoredUsage;
    readonly budget: { left: number };
  },
): Promise<boolean> {
  const { range, pool, records, budget } = args;
  const store = run.deps.reconcile;
  const key = `${range.pool}/${range.name}`;
  const stored = records.get(key);
  const record: UsageRecord = stored?.value ?? { cidr: range.cidr };
  const { intervals, window } = usageIntervals(range);
  const pass = record.pass ?? { cursor: undefined, used: 0, scanned: intervals.map(() => 0), startedAt: run.now() };
  // A read: retried within the run when it fails transiently, as a phase's reads are (an item's failure costs a run).
  const slice = await run.retrying(
    () =>
      store.countSlice(
        { pool: range.pool, family: range.family, intervals },
        { nowMs: run.now(), limit: budget.left, cursor: pass.cursor },
      ),
    RETRIES.read,
  );
  budget.left -= slice.cost;
  const used = pass.used + slice.unexpired;
  const scanned = pass.scanned.map((n, i) => n + (slice.scanned[i] ?? 0));
  const next: UsageRecord =
    slice.cursor === undefined
      ? {
          cidr: range.cidr,
          used,
          ...(window !== undefined ? { windowItems: scanned[window] ?? 0 } : {}),
          countedAt: run.now(),
        }
      : { ...record, pass: { cursor: slice.cursor, used, scanned, startedAt: pass.startedAt } };
  // Another run counting the same range at the same time: one of the two saves, the other's slice is dropped.
  if (await store.saveUsage(range.pool, range.name, next, stored?.version))
    records.set(key, { value: next, version: (stored?.version ?? 0) + 1 });
  if (next.used !== undefined && next.countedAt !== undefined && pool)
    run.summary.repaired += await checkRangeSummary(run, pool, range, next.used);
  return true;
}

/** Every range's last complete count (the summary's where the pool keeps one), and the records read or written. */
async function reportUsage(
  run: Run,
  views: PoolViewList,
  records: StoredUsage,
): Promise<{ usage: RangeUsage[]; records: UsageByRange }> {
  const usage: RangeUsage[] = [];
  const out = new Map<string, UsageRecord>();
  for (const view of views) {
    for (const range of view.ranges) {
      const record = records.get(`${range.pool}/${range.name}`)?.value;
      if (record) out.set(`${range.pool}/${range.name}`, record);
      const size = capacity(rangeCidr(range));
      const fromSummary =
        view.pool.summarySince !== undefined && !run.out(Phase.Utilization) ? await summaryUsed(run, range) : undefined;
      const usageAt = (used: bigint, countedAt: number): RangeUsage => ({
        pool: range.pool,
        range: range.name,
        cidr: range.cidr,
        family: range.family,
        state: range.state,
        legacy: range.legacy,
        size,
        used,
        free: size - used,
        countedAt,
      });
      if (fromSummary !== undefined) {
        usage.push(usageAt(fromSummary, run.now()));
        continue;
      }
      if (record?.used === undefined || record.countedAt === undefined) continue;
      usage.push(usageAt(BigInt(record.used), record.countedAt));
    }
  }
  usage.sort((a, b) => (a.pool === b.pool ? (a.range < b.range ? -1 : 1) : a.pool < b.pool ? -1 : 1));
  return { usage, records: out };
}

/**
 * A range's held addresses by its pool's summary; undefined where some lease there has a TTL (the count says), or
 * where the summary cannot be read (after the retries: the last count is reported instead).
 */
async function summaryUsed(run: Run, range: Range): Promise<bigint | undefined> {
  const host = hostInterval(rangeCidr(range));
  if (!host) return 0n;
  const summary = await run.read(`read summary of range ${range.pool}/${range.name}`, () =>
    readSummary(run.deps.occupancy, range.pool, range.family, [host]),
  );
  return !summary.ok || summary.value.expiring ? undefined : summary.value.used;
}
