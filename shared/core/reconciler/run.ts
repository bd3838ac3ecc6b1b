import { NotReadyError } from '../errors.ts';
import type { IpFamily } from '../ip/address.ts';
import type { RangeState } from '../model.ts';
import type { Deps } from '../use-cases/deps.ts';
import type { ReconcileSettings } from './plan.ts';
import { EventReason, type IpamEvent } from './ports.ts';

/** Waits `ms` (a timer in Lambda, virtual time in the simulator). */
export type Pause = (ms: number) => Promise<void>;

/**
 * What a run needs: the container's dependencies, the reconciler's settings, and how to wait before retrying a repair
 * (without `pause`, a retry goes at once: the tests' manual clocks).
 */
export type ReconcileDeps = Deps & { readonly settings: ReconcileSettings; readonly pause?: Pause };

export const Phase = { Expiry: 'expiry', Owners: 'owners', Ranges: 'ranges', Summary: 'summary', Drift: 'drift', Utilization: 'utilization', Sweep: 'sweep' } as const;
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
 * Retries of a repair whose write failed transiently (NotReadyError: throttled, timed out, or a transaction that kept
 * meeting others), within the run and while its deadline allows. Without them one failed write leaves an expired
 * claim (or a gone owner's) held a whole period longer: past "released within the period plus the grace", which the
 * simulator checks (sim/invariants.ts checkReleasedInTime; full-length `faults` seed 10 broke it). Each repair
 * is conditional (same uid, same version, still expired), so a retry after a write that did commit finds nothing to
 * do: 'changed', no second event.
 */
const REPAIR_RETRIES = 2;
/** The wait before the first retry, doubled before the next; each wait is jittered over its upper half. */
const RETRY_BASE_MS = 200;

/** One run's state: deadline, counters, errors. */
export class Run {
  readonly repairs: Record<EventReason, number> = Object.fromEntries(Object.values(EventReason).map((r) => [r, 0])) as Record<EventReason, number>;
  /** Occupancy summary upkeep: pools whose summary was built, and addresses whose summary bit was corrected. */
  readonly summary = { built: 0, repaired: 0 };
  readonly errors: string[] = [];
  stoppedIn: Phase | undefined;

  /** Clock time the run started at. */
  readonly startedAt: number;

  constructor(readonly deps: ReconcileDeps, private readonly deadlineMs: number) {
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
  async attempt(what: string, work: () => Promise<boolean>): Promise<boolean> {
    try {
      return await work();
    } catch (error) {
      this.fail(what, error);
      return false;
    }
  }

  /**
   * Runs one repair (a conditional write with its event, or a few of them) as `attempt` does, but tries it again up to
   * REPAIR_RETRIES times after a transient failure (NotReadyError), each after a short backoff that still ends before
   * the deadline. `work` must be safe to run again after a write that committed unseen: every repair of the
   * ReconcileStore is conditional, so it is.
   */
  async repair(what: string, work: () => Promise<boolean>): Promise<boolean> {
    for (let retry = 0; ; retry += 1) {
      try {
        return await work();
      } catch (error) {
        const waitMs = error instanceof NotReadyError && retry < REPAIR_RETRIES ? RETRY_BASE_MS * 2 ** retry * (0.5 + this.deps.random.unit() / 2) : undefined;
        if (waitMs === undefined || this.now() + waitMs >= this.deadlineMs) {
          this.fail(what, error);
          return false;
        }
        await this.deps.pause?.(waitMs);
      }
    }
  }

  private fail(what: string, error: unknown): void {
    this.errors.push(`${what}: ${(error as Error)?.name ?? 'Error'}: ${(error as Error)?.message ?? String(error)}`);
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

