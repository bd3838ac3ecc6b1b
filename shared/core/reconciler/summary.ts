import { IpFamily, formatAddress } from '../ip/address.ts';
import type { Interval } from '../base/intervals.ts';
import { hostInterval, hostIntervals, rangeCidr, rangesOf } from '../base/pool-geometry.ts';
import { chunkBase, chunkIndexOf } from '../occupancy/chunk.ts';
import { readSummary } from '../occupancy/reader.ts';
import { SummaryMirror } from '../occupancy/summary-mirror.ts';
import type { Pool, PoolView, Range } from '../model.ts';
import { Phase, RETRIES, type Run } from './run.ts';

/**
 * The occupancy summary's repair (rows 14-15 of reconcile.ts). The stream function keeps the summary, but a batch
 * that keeps failing goes to the failure destination, and pools made before the summary existed have none: both are
 * mended here with the same read-settle-write round the stream function uses (SummaryMirror.settleChunk), for the
 * addresses where the chunk and the lease listing disagree.
 *
 *   listing (lease items, expired ones included)  vs  chunk bits   ->  settle the symmetric difference
 */

/** How often a summarized range's summary is checked against its leases (each check reads its leases). */
export const SUMMARY_CHECK_EVERY_MS = 15 * 60_000;

/**
 * Settles every chunk of a pool family within `intervals` against the listing; returns the addresses it changed.
 * Reads the listing whole: its cost is the leases of the intervals, which is why checks are spaced out.
 */
export async function repairSummary(
  run: Run,
  pool: string,
  family: IpFamily,
  intervals: readonly Interval[],
): Promise<number> {
  const { leases, occupancy, clock } = run.deps;
  if (intervals.length === 0) return 0;
  // Reads, retried within the run when they fail transiently (RETRIES.read): a failed read would cost the item a run.
  const listed = new Set(await run.retrying(() => leases.takenAddresses(pool, family, intervals, 0), RETRIES.read));
  const summary = await run.retrying(() => readSummary(occupancy, pool, family, intervals), RETRIES.read);
  const differ = new Map<bigint, string[]>();
  const add = (value: bigint) => {
    const index = chunkIndexOf(value);
    differ.set(index, [...(differ.get(index) ?? []), formatAddress({ family, value })]);
  };
  for (const value of listed) if (!summary.has(value)) add(value);
  for (const chunk of summary.chunks) {
    const base = chunkBase(chunk.index);
    chunk.bits.forEachSet((bit) => {
      const value = base + BigInt(bit);
      if (!listed.has(value) && intervals.some(([a, b]) => value >= a && value <= b)) add(value);
    });
  }
  const mirror = new SummaryMirror({ store: occupancy, clock });
  let changed = 0;
  for (const [index, addresses] of differ) {
    // settleChunk reads each address's lease item itself: a listing behind the table changes nothing wrongly.
    // Its reads and its conditional put are safe to repeat: retried within the run when they fail transiently.
    if ((await run.retrying(() => mirror.settleChunk({ pool, family, index }, addresses), RETRIES.read)) === 'written')
      changed += addresses.length;
  }
  return changed;
}

/** Builds the summary of pools made before it existed, then marks them summarized (row 14). */
export async function buildMissingSummaries(run: Run, views: readonly PoolView[]): Promise<number> {
  let built = 0;
  for (const view of views) {
    if (view.pool.summarySince !== undefined || run.out(Phase.Summary)) continue;
    const since = run.iso();
    const ok = await run.attempt(`build summary of pool ${view.pool.name}`, async () => {
      for (const family of [IpFamily.IPv4, IpFamily.IPv6])
        await repairSummary(run, view.pool.name, family, hostIntervals(rangesOf(view, family)));
      // Leases written during the build have stream records of their own, which the stream function applies.
      await run.deps.occupancy.markSummarized(view.pool.name, since);
      return true;
    });
    if (ok) built += 1;
  }
  return built;
}

/** Row 15: a summarized range whose counted leases differ from its summary; the count is the usage pass's. */
export async function checkRangeSummary(run: Run, pool: Pool, range: Range, counted: number): Promise<number> {
  if (pool.summarySince === undefined) return 0;
  const host = hostInterval(rangeCidr(range));
  if (!host) return 0;
  const summary = await run.retrying(
    () => readSummary(run.deps.occupancy, pool.name, range.family, [host]),
    RETRIES.read,
  );
  // The count leaves expired leases out; the summary keeps them until they are deleted: only comparable without TTLs.
  if (summary.expiring || summary.used === BigInt(counted)) return 0;
  return repairSummary(run, pool.name, range.family, [host]);
}
