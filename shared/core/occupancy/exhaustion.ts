import { IpFamily } from '../ip/address.ts';
import type { Clock } from '../ports.ts';
import type { Utilization } from '../model.ts';

/**
 * Warnings before a pool runs out. Per pool and family, the free share of the address space sits at a
 * level: 0 above every threshold of the pool (freeThresholds, percent free, highest first), i below the i-th, and one
 * more, "full", with no address free. A change of level is announced once per threshold crossed, each way.
 *
 * Where the crossing is decided: by the stream function, which sees every lease change, on one state item per pool
 * and family. Every check reads the state item, then the utilization (so the count is at least as new as the state it
 * replaces), and writes the new level only if the item is still at the version it read: of racing checks (stream
 * batches of several shards, redeliveries) exactly one writes a transition, and only the writer announces it; the
 * pool's event items go in the same transaction as the state, so the pool's events hold each crossing exactly once.
 */
export { DEFAULT_FREE_THRESHOLDS } from '../model.ts';
/** The most thresholds a pool may set. */
export const MAX_FREE_THRESHOLDS = 5;

/** A pool family's level as the state item keeps it. */
export interface ExhaustionState {
  readonly level: number;
  readonly version: number;
  /** ISO time of the last change of level. */
  readonly since: string;
}

export type CrossingDirection = 'below' | 'recovered';

/** One threshold crossed, one way: what every channel (the pool's events, the metric, EventBridge) announces. */
export interface Crossing {
  readonly pool: string;
  readonly family: IpFamily;
  readonly direction: CrossingDirection;
  /** The threshold crossed: a percentage of the space free, or 'full' (no address free). */
  readonly threshold: number | 'full';
  readonly size: bigint;
  readonly free: bigint;
  /** free / size, in percent, two decimals. */
  readonly freePercent: number;
  readonly time: string;
}

/** The free share of a pool family a check read. */
export interface Observation {
  readonly pool: string;
  readonly family: IpFamily;
  readonly freePercent: number;
}

export interface ExhaustionCheck {
  readonly crossings: readonly Crossing[];
  readonly observed: readonly Observation[];
}

/** The state items (TableExhaustionStore is the adapter). */
export interface ExhaustionStore {
  /** The state of a pool family, read consistently; undefined before its first change of level. */
  getState(pool: string, family: IpFamily): Promise<ExhaustionState | undefined>;
  /** Every family's state of a pool, read consistently in one request. */
  states(pool: string): Promise<ReadonlyMap<IpFamily, ExhaustionState>>;
  /**
   * Writes `state` if the item is still at `expected` (its version, or absent), with the crossings' event items in
   * the same transaction; 'changed' when another check got there first.
   */
  putState(
    pool: string,
    family: IpFamily,
    write: {
      readonly state: ExhaustionState;
      readonly expected: number | 'absent';
      readonly crossings: readonly Crossing[];
    },
  ): Promise<'written' | 'changed'>;
}

/** Announces the crossings a check wrote, beyond the pool's events: a metric, an EventBridge event. */
export interface CrossingAnnouncer {
  announce(crossings: readonly Crossing[]): Promise<void>;
}

/** Free percent with two decimals (0 for an empty space). */
export function freePercentOf(u: Pick<Utilization, 'size' | 'free'>): number {
  return u.size === 0n ? 0 : Number((u.free * 10_000n) / u.size) / 100;
}

/** The level of a utilization: how many of the thresholds (percent free, highest first) it is below, and one more when full. */
export function levelOf(u: Pick<Utilization, 'size' | 'free'>, thresholds: readonly number[]): number {
  if (u.size > 0n && u.free === 0n) return thresholds.length + 1;
  // free / size < t / 100, exactly: free * 100 < t * size (t may have decimals: scale by 100 again).
  return thresholds.filter((t) => u.free * 10_000n < BigInt(Math.round(t * 100)) * u.size).length;
}

/** The thresholds passed between two levels, in the order they were crossed. */
export function crossingsBetween(
  from: number,
  to: number,
  thresholds: readonly number[],
): { direction: CrossingDirection; threshold: number | 'full' }[] {
  const named = (level: number): number | 'full' => (level > thresholds.length ? 'full' : thresholds[level - 1]!);
  const out: { direction: CrossingDirection; threshold: number | 'full' }[] = [];
  for (let level = from + 1; level <= to; level += 1) out.push({ direction: 'below', threshold: named(level) });
  for (let level = from; level > to; level -= 1) out.push({ direction: 'recovered', threshold: named(level) });
  return out;
}

export interface ExhaustionWatchDeps {
  readonly store: ExhaustionStore;
  /** The pool's thresholds and its utilization per family, read consistently; undefined when the pool is gone. */
  readonly utilization: (
    pool: string,
  ) => Promise<
    { readonly thresholds: readonly number[]; readonly families: Partial<Record<IpFamily, Utilization>> } | undefined
  >;
  readonly announcer?: CrossingAnnouncer;
  readonly clock: Clock;
  /** Read-decide-write rounds per family before giving up (the next batch of the pool checks again). Default 8. */
  readonly maxAttempts?: number;
}

/** The stream function's check of a pool's levels after a batch changed its leases. */
export class ExhaustionWatch {
  constructor(private readonly deps: ExhaustionWatchDeps) {}

  /**
   * Moves each family's level to the pool's utilization now. Returns the crossings this call wrote (and announced)
   * and the free share it read of each family (the stream function publishes it as the PoolFreePercent metric).
   */
  async check(pool: string): Promise<ExhaustionCheck> {
    const out: { crossings: Crossing[]; observed: Observation[] } = { crossings: [], observed: [] };
    // Both families' levels in one read, then the pool's utilization once (levels first, as on a retry): a check
    // costs the same reads whatever the number of families (BENCHMARKS.md, "Free-space threshold check").
    const states = await this.deps.store.states(pool);
    const read = await this.deps.utilization(pool);
    for (const family of [IpFamily.IPv4, IpFamily.IPv6])
      await this.checkFamily(pool, family, out, { state: states.get(family), read });
    if (out.crossings.length > 0) await this.deps.announcer?.announce(out.crossings);
    return out;
  }

  private async checkFamily(
    pool: string,
    family: IpFamily,
    out: { crossings: Crossing[]; observed: Observation[] },
    first: { state: ExhaustionState | undefined; read: Awaited<ReturnType<ExhaustionWatchDeps['utilization']>> },
  ): Promise<void> {
    for (let attempt = 0; attempt < (this.deps.maxAttempts ?? 8); attempt += 1) {
      // After a lost conditional write: the winner's level, then the utilization again.
      const state = attempt === 0 ? first.state : await this.deps.store.getState(pool, family);
      const read = attempt === 0 ? first.read : await this.deps.utilization(pool);
      const u = read?.families[family];
      // A family without ranges (or a deleted pool) has no level to keep: a state left over stays until it has one.
      if (read === undefined || u === undefined || u.size === 0n) return;
      if (attempt === 0) out.observed.push({ pool, family, freePercent: freePercentOf(u) });
      const level = levelOf(u, read.thresholds);
      if (level === (state?.level ?? 0)) return;
      const time = new Date(this.deps.clock.nowMs()).toISOString();
      const crossings = crossingsBetween(state?.level ?? 0, level, read.thresholds).map((c) => ({
        pool,
        family,
        ...c,
        size: u.size,
        free: u.free,
        freePercent: freePercentOf(u),
        time,
      }));
      const next: ExhaustionState = { level, version: (state?.version ?? 0) + 1, since: time };
      if (
        (await this.deps.store.putState(pool, family, {
          state: next,
          expected: state ? state.version : 'absent',
          crossings,
        })) === 'written'
      ) {
        out.crossings.push(...crossings);
        return;
      }
    }
  }
}

/** One sentence for the pool's events. */
export function crossingMessage(c: Crossing): string {
  const free = `${c.free} of ${c.size} addresses free (${c.freePercent} %)`;
  if (c.threshold === 'full')
    return c.direction === 'below'
      ? `${c.family} space of pool ${c.pool} is full: ${free}.`
      : `${c.family} space of pool ${c.pool} is no longer full: ${free}.`;
  return c.direction === 'below'
    ? `${c.family} space of pool ${c.pool} fell below ${c.threshold} % free: ${free}.`
    : `${c.family} space of pool ${c.pool} is back above ${c.threshold} % free: ${free}.`;
}
