import type { Allocator } from '../allocator/allocator.ts';
import type { BitmapStore } from '../bitmap/ports.ts';
import type { HintCache } from '../allocator/hint.ts';
import type { PoolViewCache } from '../pool-view-cache.ts';
import type { Clock, IpamStore, Random } from '../ports.ts';
import type { ReconcileStore } from '../reconciler/ports.ts';

/** The gates that change allocation behaviour (Kubernetes' names). */
export interface AllocationGates {
  readonly MultiCIDRServiceAllocator: boolean;
  readonly DisableAllocatorDualWrite: boolean;
}

/** What every use case may use; built once per container by the composition root. */
export interface Deps {
  readonly store: IpamStore;
  readonly clock: Clock;
  readonly random: Random;
  readonly views: PoolViewCache;
  readonly hints: HintCache;
  readonly allocator: Allocator;
  /** The legacy bitmaps (RangeAllocation items), read by the allocation route. */
  readonly bitmaps: BitmapStore;
  readonly gates: AllocationGates;
  /** The reconciler's store: expiry index, repairs with their events, checkpoints (also owner release and events). */
  readonly reconcile: ReconcileStore;
}

/** ISO time of the clock's now. */
export function nowIso(deps: Pick<Deps, 'clock'>): string {
  return new Date(deps.clock.nowMs()).toISOString();
}

/** Checks a page size: 1-1000, default 100. */
export function pageLimit(value: number | undefined): number {
  return value ?? 100;
}
