import type { IpFamily } from '../ip/address.ts';
import type { Interval } from '../base/intervals.ts';
import { TUNING } from './tuning.ts';
import type { SummarySnapshot } from '../occupancy/reader.ts';

/** Reads the addresses currently taken in some intervals of a pool's family (the store's takenAddresses). */
export type TakenReader = (
  pool: string,
  family: IpFamily,
  intervals: readonly Interval[],
  nowMs: number,
) => Promise<bigint[]>;

/** Reads the occupancy summary of a pool's family over some intervals. */
export type SummaryReader = (
  pool: string,
  family: IpFamily,
  intervals: readonly Interval[],
) => Promise<SummarySnapshot>;

/** Where a hint's view came from. */
export const HintSource = {
  /** The occupancy summary: cheap (chunks), behind the leases by the stream's lag, expired leases shown as taken. */
  Summary: 'summary',
  /** The lease listing: reads every taken lease of the intervals, exact up to the index's lag, expiry-aware. */
  Listing: 'listing',
} as const;
export type HintSource = (typeof HintSource)[keyof typeof HintSource];

/** A container's view of what is taken: the source it read, overlaid with what the container itself saw since. */
export interface Hint {
  readonly source: HintSource;
  readonly fetchedAt: number;
  /** The summary's own "some taken lease has a TTL" (false for a listing, which already leaves expired leases out). */
  readonly expiring: boolean;
  /** Taken by the source or by this container's own recent commits, collisions and consistent reads, and not freed by it since. */
  has(value: bigint): boolean;
  /** Taken by the source in [from, to] (weighs the choice between ranges). */
  count(from: bigint, to: bigint): bigint;
}

/** What a hint is asked for: a pool's family over some intervals, at a time. */
export interface HintRequest {
  readonly pool: string;
  readonly family: IpFamily;
  readonly intervals: readonly Interval[];
  readonly nowMs: number;
  /** Read again even when the cached view is young enough. */
  readonly force?: boolean;
  /** Where to read from (default the listing); a summary asked for where none is wired is a listing. */
  readonly source?: HintSource;
}

interface Entry {
  readonly source: HintSource;
  readonly fetchedAt: number;
  readonly intervalsKey: string;
  readonly expiring: boolean;
  readonly has: (value: bigint) => boolean;
  readonly count: (from: bigint, to: bigint) => bigint;
}

/**
 * A warm container's recent view of what is taken, per pool and family. It only steers the choice of candidates:
 * the conditional write stays the judge, so a stale hint costs a collision, never a duplicate.
 */
export class HintCache {
  private readonly entries = new Map<string, Entry>();
  /**
   * What this container saw itself, per pool and family: address -> taken?, with when it saw it. Kept in the order
   * seen (remember re-inserts), so forgetting what is older than TUNING.localMemoryMs stops at the first younger entry
   * instead of walking the whole map on every get (near full a container remembers thousands of addresses its bulk
   * reads found taken).
   */
  private readonly seen = new Map<string, Map<bigint, { taken: boolean; atMs: number }>>();
  /** Candidates this container is trying right now, so concurrent requests in one container do not pick the same. */
  private readonly pending = new Map<string, Set<bigint>>();

  constructor(
    private readonly read: TakenReader,
    private readonly maxAgeMs: number = TUNING.hintMaxAgeMs,
    private readonly summary?: { readonly read: SummaryReader; readonly maxAgeMs?: number },
  ) {}

  /** Whether summary reads are available at all (the composition root wires them). */
  get summaries(): boolean {
    return this.summary !== undefined;
  }

  /**
   * The hint for a pool's family over these intervals from `source`, read again when forced, older than that
   * source's max age, or covering other intervals. A summary asked for where none is wired is a listing.
   */
  async get(request: HintRequest): Promise<Hint> {
    const { intervals, nowMs, force = false, source = HintSource.Listing } = request;
    const key = keyOf(request.pool, request.family);
    const wanted = this.summary ? source : HintSource.Listing;
    const intervalsKey = intervals.map(([a, b]) => `${a}-${b}`).join(',');
    let entry = this.entries.get(key);
    const maxAge =
      entry?.source === HintSource.Summary ? (this.summary?.maxAgeMs ?? TUNING.summaryMaxAgeMs) : this.maxAgeMs;
    if (
      force ||
      !entry ||
      entry.source !== wanted ||
      entry.intervalsKey !== intervalsKey ||
      nowMs - entry.fetchedAt >= maxAge
    ) {
      entry =
        wanted === HintSource.Summary
          ? await this.readSummary(request, intervalsKey)
          : await this.readListing(request, intervalsKey);
      this.entries.set(key, entry);
    }
    return this.overlay(key, entry, nowMs);
  }

  /** Records a collision or a success so the next pick in this container avoids the address. */
  markTaken(pool: string, family: IpFamily, value: bigint, nowMs: number): void {
    this.remember(keyOf(pool, family), value, true, nowMs);
  }

  /** Records a release made by this container. */
  markFree(pool: string, family: IpFamily, value: bigint, nowMs: number): void {
    this.remember(keyOf(pool, family), value, false, nowMs);
  }

  /** The candidates in flight for a pool's family (a live set: callers must not keep it across awaits). */
  inFlight(pool: string, family: IpFamily): ReadonlySet<bigint> {
    return this.pending.get(keyOf(pool, family)) ?? new Set();
  }

  /** Marks a candidate as in flight until the function it returns is called (once its transaction has an answer). */
  reserve(pool: string, family: IpFamily, value: bigint): () => void {
    const key = keyOf(pool, family);
    const set = this.pending.get(key) ?? new Set<bigint>();
    this.pending.set(key, set);
    set.add(value);
    return () => {
      set.delete(value);
      if (set.size === 0 && this.pending.get(key) === set) this.pending.delete(key);
    };
  }

  /** Forgets a pool (after its ranges change). */
  forget(pool: string): void {
    for (const map of [this.entries, this.seen])
      for (const key of map.keys()) if (key.startsWith(`${pool}\u0000`)) map.delete(key);
  }

  private remember(key: string, value: bigint, taken: boolean, nowMs: number): void {
    let seen = this.seen.get(key);
    if (!seen) {
      seen = new Map();
      this.seen.set(key, seen);
    }
    seen.delete(value);
    seen.set(value, { taken, atMs: nowMs });
  }

  private overlay(key: string, entry: Entry, nowMs: number): Hint {
    const seen = this.seen.get(key);
    // Oldest first: a clock that stepped back only keeps an entry a little longer, which a hint may.
    if (seen) {
      for (const [value, s] of seen) {
        if (nowMs - s.atMs < TUNING.localMemoryMs) break;
        seen.delete(value);
      }
    }
    // A listing is current when read: only what the container saw after it overrides it. A summary lags the leases
    // by the stream's lag, so everything the container remembers overrides it.
    const since = entry.source === HintSource.Listing ? entry.fetchedAt : -Infinity;
    return {
      source: entry.source,
      fetchedAt: entry.fetchedAt,
      expiring: entry.expiring,
      has: (value) => {
        const s = seen?.get(value);
        return s !== undefined && s.atMs >= since ? s.taken : entry.has(value);
      },
      count: entry.count,
    };
  }

  private async readListing(request: HintRequest, intervalsKey: string): Promise<Entry> {
    const { pool, family, intervals, nowMs } = request;
    const taken = new Set(await this.read(pool, family, intervals, nowMs));
    const count = (from: bigint, to: bigint): bigint => {
      let n = 0n;
      for (const value of taken) if (value >= from && value <= to) n += 1n;
      return n;
    };
    return {
      source: HintSource.Listing,
      fetchedAt: nowMs,
      intervalsKey,
      expiring: false,
      has: (value) => taken.has(value),
      count,
    };
  }

  private async readSummary(request: HintRequest, intervalsKey: string): Promise<Entry> {
    const snapshot = await this.summary!.read(request.pool, request.family, request.intervals);
    return {
      source: HintSource.Summary,
      fetchedAt: request.nowMs,
      intervalsKey,
      expiring: snapshot.expiring,
      has: (value) => snapshot.has(value),
      count: (from, to) => snapshot.count(from, to),
    };
  }
}

/** The cache key of a pool's family. */
function keyOf(pool: string, family: IpFamily): string {
  return `${pool}\u0000${family}`;
}
