import type { IpFamily } from '../ip/address.ts';
import type { RangeState } from '../model.ts';
import type { Deps } from '../use-cases/deps.ts';
import type { ReconcileSettings } from './plan.ts';
import { EventReason, type IpamEvent } from './ports.ts';

/** What a run needs: the container's dependencies and the reconciler's settings. */
export type ReconcileDeps = Deps & { readonly settings: ReconcileSettings };

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
      this.errors.push(`${what}: ${(error as Error)?.name ?? 'Error'}: ${(error as Error)?.message ?? String(error)}`);
      return false;
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

