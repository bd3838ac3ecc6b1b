import { NotReadyError } from '../errors.ts';
import type { IpFamily } from '../ip/address.ts';
import type { RangeState } from '../model.ts';
import type { Deps } from '../use-cases/deps.ts';
import type { ReconcileSettings } from './plan.ts';
import { EventReason, type IpamEvent } from '../events.ts';

/** Waits `ms` (a timer in Lambda, virtual time in the simulator). */
export type Pause = (ms: number) => Promise<void>;

/**
 * What a run needs: the container's dependencies, the reconciler's settings, and how to wait before retrying a repair
 * or a read (without `pause`, a retry goes at once: the tests' manual clocks). It drives use cases (an owner's release
 * runs the consumers' leave; a pool's deletion its finish), so it takes all of Deps but the health probe and the
 * exhaustion levels, which neither it nor they read.
 */
export type ReconcileDeps = Omit<Deps, 'health' | 'exhaustion'> & {
  readonly settings: ReconcileSettings;
  readonly pause?: Pause;
};

export const Phase = {
  Expiry: 'expiry',
  Owners: 'owners',
  Ranges: 'ranges',
  Summary: 'summary',
  Drift: 'drift',
  Utilization: 'utilization',
  History: 'history',
  Dns: 'dns',
  Sweep: 'sweep',
} as const;
export type Phase = (typeof Phase)[keyof typeof Phase];

/** Size, used and free of one range, from its last complete count. */
export interface RangeUsage {
  readonly pool: string;
  readonly range: string;
  readonly cidr: string;
  readonly family: IpFamily;
  readonly state: RangeState;
  readonly legacy: boolean;
  readonly size: bigint;
  readonly used: bigint;
  readonly free: bigint;
  /** Epoch ms the count was completed (this run's time for ranges small enough to be counted every run). */
  readonly countedAt: number;
}

/** Names of the persisted checkpoints. */
export const EXPIRY_CHECKPOINT = 'expiry';
export const SWEEP_CHECKPOINT = 'sweep';

/** Where the slow sweep stands: its cursor (absent at the start of a cycle) and how many cycles it finished. */
export interface SweepCheckpoint {
  readonly cursor?: string;
  readonly cycles: number;
}

/** Parallel writes per page: enough to overlap round trips, few enough to stay polite to the table. */
const PARALLELISM = 8;

/**
 * Retries of a store call that failed transiently (NotReadyError: throttled, timed out, or a transaction that kept
 * meeting others), within the run and while its deadline allows (Run.retrying). Repairs and the phases' reads both go
 * through it. Without them one failed write leaves an expired claim (or a gone owner's) held a whole period longer:
 * past "released within the period plus the grace", which the simulator checks (sim/invariants.ts
 * checkReleasedInTime, under the `faults` scenario); and one throttled read of a phase (the expiry checkpoint, the
 * pool listing) would end the whole run, as throttling storms do. Each
 * repair is conditional (same uid, same version, still expired), so a retry after a write that did commit finds
 * nothing to do: 'changed', no second event; reads and conditional checkpoint saves are as safe to repeat.
 */
export const RETRIES = {
  /** A repair (its reads and its conditional write): waits of up to 0.2 and 0.4 s. */
  repair: 2,
  /**
   * A read a phase (or an expiry bucket, or a sweep page) cannot go on without: waits of up to 0.2, 0.4, 0.8, 1.6 and
   * 3.2 s, 3-6 s in all, so a burst of throttling of a few seconds (the simulator's storms last 1-5 s) costs the
   * phase a few seconds of its run instead of a whole period. A read is always safe to repeat.
   */
  read: 5,
} as const;
/** The wait before the first retry, doubled before the next; each wait is jittered over its upper half. */
const RETRY_BASE_MS = 200;

/** What `Run.read` got: the value, or nothing (the failure is among the run's errors). */
export type Read<T> = { readonly ok: true; readonly value: T } | { readonly ok: false };

/** One run's state: deadline, counters, errors. */
export class Run {
  readonly repairs: Record<EventReason, number> = Object.fromEntries(
    Object.values(EventReason).map((r) => [r, 0]),
  ) as Record<EventReason, number>;
  /** Occupancy summary upkeep: pools whose summary was built, and addresses whose summary bit was corrected. */
  readonly summary = { built: 0, repaired: 0 };
  readonly errors: string[] = [];
  /** Work left for a later run because it waits for something expected (not a failure): one line each. */
  readonly waiting: string[] = [];
  stoppedIn: Phase | undefined;

  /** Clock time the run started at. */
  readonly startedAt: number;

  constructor(
    readonly deps: ReconcileDeps,
    private readonly deadlineMs: number,
  ) {
    this.startedAt = deps.clock.nowMs();
  }

  now(): number {
    return this.deps.clock.nowMs();
  }

  iso(ms = this.now()): string {
    return new Date(ms).toISOString();
  }

  /** True (and remembered) once the deadline has come: callers stop starting work. */
  out(phase: Phase): boolean {
    if (this.stoppedIn !== undefined) return true;
    if (this.now() < this.deadlineMs) return false;
    this.stoppedIn = phase;
    return true;
  }

  /** Counts a repair when its conditional write took effect. */
  done(event: IpamEvent, applied: boolean): boolean {
    if (applied) this.repairs[event.reason] += 1;
    return applied;
  }

  /** Runs one unit of work; a failure is recorded and reported as false, so one bad item does not stop the run. */
  attempt(what: string, work: () => Promise<boolean>): Promise<boolean> {
    return this.recorded(what, work, false);
  }

  /**
   * Runs `work`, and again up to `retries` times after a transient failure (NotReadyError), each after a backoff
   * (100-200 ms, then 200-400 ms, doubling, jittered with the Random port) that still ends before the deadline; any
   * other error, or the last one, is thrown. `work` must be safe to run again after a call that took effect unseen (a read, or a
   * conditional write).
   */
  async retrying<T>(work: () => Promise<T>, retries: number = RETRIES.repair): Promise<T> {
    for (let retry = 0; ; retry += 1) {
      try {
        return await work();
      } catch (error) {
        const waitMs =
          error instanceof NotReadyError && retry < retries
            ? RETRY_BASE_MS * 2 ** retry * (0.5 + this.deps.random.unit() / 2)
            : undefined;
        if (waitMs === undefined || this.now() + waitMs >= this.deadlineMs) throw error;
        await this.deps.pause?.(waitMs);
      }
    }
  }

  /**
   * Runs one repair (a conditional write with its event, or a few of them) as `attempt` does, but `retrying`: every
   * repair of the ReconcileStore is conditional, so running it again after a write that committed unseen is safe.
   */
  async repair(what: string, work: () => Promise<boolean>): Promise<boolean> {
    return this.attempt(what, () => this.retrying(work));
  }

  /**
   * A phase's read (a listing, a checkpoint, a page) made `retrying` (RETRIES.read); when it still fails, the failure is recorded
   * and `{ ok: false }` returned, so the caller ends its phase (or skips its item) and the run goes on.
   */
  read<T>(what: string, work: () => Promise<T>): Promise<Read<T>> {
    return this.recorded<Read<T>>(what, async () => ({ ok: true, value: await this.retrying(work, RETRIES.read) }), {
      ok: false,
    });
  }

  /**
   * Runs one phase; whatever it throws is recorded and the run goes on to the next phase (the backstop for a failure
   * no unit of work or `read` caught: one phase that cannot proceed does not take the later ones, or the report, with
   * it). Returns `fallback` then.
   */
  phase<T>(phase: Phase, work: () => Promise<T>, fallback: T): Promise<T> {
    return this.recorded(`${phase} phase`, work, fallback);
  }

  /** `work`'s result; whatever it throws goes into the run's errors as `what`, and `fallback` is returned instead. */
  private async recorded<T>(what: string, work: () => Promise<T>, fallback: T): Promise<T> {
    try {
      return await work();
    } catch (error) {
      this.errors.push(`${what}: ${(error as Error)?.name ?? 'Error'}: ${(error as Error)?.message ?? String(error)}`);
      return fallback;
    }
  }

  /** Runs `work` over items, PARALLELISM at a time, stopping at the deadline; true when every item returned true. */
  async each<T>(phase: Phase, items: readonly T[], work: (item: T) => Promise<boolean>): Promise<boolean> {
    let all = true;
    let next = 0;
    const worker = async () => {
      while (next < items.length) {
        if (this.out(phase)) {
          all = false;
          return;
        }
        const item = items[next++]!;
        if (!(await work(item))) all = false;
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLELISM, items.length) }, worker));
    return all;
  }
}
