import type { IpFamily } from '../ip/address.ts';
import type { Interval } from './intervals.ts';

/** Reads the addresses currently taken in some intervals of a pool's family (the store's takenAddresses). */
export type TakenReader = (pool: string, family: IpFamily, intervals: readonly Interval[], nowMs: number) => Promise<bigint[]>;

interface Entry {
  taken: Set<bigint>;
  fetchedAt: number;
  intervalsKey: string;
}

/**
 * How long a container keeps its view of what is taken when nothing says it is stale. Collisions (the allocator
 * re-reads after every second one) and a view that shows the range full (re-read when older than a second) are what
 * refresh it; the age is only a backstop. Every read lists the taken addresses of the whole pool family through
 * every index shard, so a short age would make each warm container read the range again and again whatever its
 * allocation rate (at 5 s, 128 containers on a 90 %-full /16 would read about 1.5 million index entries a second).
 */
export const DEFAULT_HINT_MAX_AGE_MS = 30_000;

/**
 * A warm container's recent view of what is taken, per pool and family. It only steers the choice of candidates:
 * the conditional write stays the judge, so a stale hint costs a collision, never a duplicate.
 */
export class HintCache {
  private readonly entries = new Map<string, Entry>();
  /** Candidates this container is trying right now, so concurrent requests in one container do not pick the same. */
  private readonly pending = new Map<string, Set<bigint>>();

  constructor(private readonly read: TakenReader, private readonly maxAgeMs = DEFAULT_HINT_MAX_AGE_MS) {}

  /** The hint for a pool's family over these intervals, refreshed when older than maxAge or covering other intervals. */
  async get(pool: string, family: IpFamily, intervals: readonly Interval[], nowMs: number, force = false): Promise<{ taken: ReadonlySet<bigint>; fetchedAt: number }> {
    const key = `${pool}\u0000${family}`;
    const intervalsKey = intervals.map(([a, b]) => `${a}-${b}`).join(',');
    const entry = this.entries.get(key);
    if (!force && entry && entry.intervalsKey === intervalsKey && nowMs - entry.fetchedAt < this.maxAgeMs) return entry;
    const taken = new Set(await this.read(pool, family, intervals, nowMs));
    const fresh: Entry = { taken, fetchedAt: nowMs, intervalsKey };
    this.entries.set(key, fresh);
    return fresh;
  }

  /** Records a collision or a success so the next pick in this container avoids the address. */
  markTaken(pool: string, family: IpFamily, value: bigint): void {
    this.entries.get(`${pool}\u0000${family}`)?.taken.add(value);
  }

  /** Records a release made by this container. */
  markFree(pool: string, family: IpFamily, value: bigint): void {
    this.entries.get(`${pool}\u0000${family}`)?.taken.delete(value);
  }

  /** The candidates in flight for a pool's family (a live set: callers must not keep it across awaits). */
  inFlight(pool: string, family: IpFamily): ReadonlySet<bigint> {
    return this.pending.get(`${pool}\u0000${family}`) ?? new Set();
  }

  /** Marks a candidate as in flight until `settle` is called. */
  reserve(pool: string, family: IpFamily, value: bigint): () => void {
    const key = `${pool}\u0000${family}`;
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
    for (const key of this.entries.keys()) if (key.startsWith(`${pool}\u0000`)) this.entries.delete(key);
  }
}
