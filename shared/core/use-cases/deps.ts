import type { Allocator } from '../allocator/allocator.ts';
import type { BitmapStore } from '../bitmap/ports.ts';
import type { OccupancyStore } from '../occupancy/ports.ts';
import type { HintCache } from '../allocator/hint.ts';
import type { PoolViewCache } from '../pool-view-cache.ts';
import type { ClaimStore, Clock, HealthProbe, LeaseIndex, PoolStore, Random } from '../ports.ts';
import type { ReconcileStore } from './reconcile-ports.ts';
import type { HistoryAuditor, HistoryCursors, HistoryReader } from '../history/ports.ts';
import type { ExhaustionState } from '../occupancy/exhaustion.ts';
import type { IpFamily } from '../ip/address.ts';
import type { DnsTargets } from '../dns/ports.ts';
import type { DnsStatusStore } from '../dns/status.ts';

export type { AllocationGates } from '../ports.ts';
import type { AllocationGates } from '../ports.ts';

/**
 * Everything the use cases may use, built once per container by the composition root. Most use cases take a
 * `Pick` of the parts they use, so a test provides only those; a few take the whole of it.
 */
export interface Deps {
  readonly pools: PoolStore;
  readonly claims: ClaimStore;
  readonly leases: LeaseIndex;
  readonly health: HealthProbe;
  readonly clock: Clock;
  readonly random: Random;
  readonly views: PoolViewCache;
  readonly hints: HintCache;
  readonly allocator: Allocator;
  /** The legacy bitmaps (RangeAllocation items): read by the allocation route and the drift repair. */
  readonly bitmaps: Pick<BitmapStore, 'getBitmap' | 'leaseHolders'>;
  readonly gates: AllocationGates;
  /** The occupancy summary: utilization, the occupancy route, and the reconciler's build and repair of it. */
  readonly occupancy: OccupancyStore;
  /** The reconciler's store: expiry index, repairs with their events, checkpoints; owner release and events too. */
  readonly reconcile: ReconcileStore;
  /**
   * The address history as the use cases read it and the reconciler checks it (the stream function writes it through
   * its own HistoryWriter), and its cursors.
   */
  readonly history: HistoryReader & HistoryAuditor & HistoryCursors;
  /**
   * A jittered wait after the `lost`-th lost race of a version-guarded change (a claim's consumers), so concurrent
   * writers spread out instead of all reading and colliding again; absent: no wait (the simulator's own time).
   */
  readonly pause?: (lost: number) => Promise<void>;
  /**
   * The DNS servers the pools' `dns` targets name, for the reconciler's repair of zone drift (the stream function's
   * projection takes its own); absent in a container that writes no DNS.
   */
  readonly dns?: DnsTargets;
  /**
   * True on the local stack, whose embedded DNS server holds the zones of pools with the `local` DNS target (the
   * default there); a deployed stack refuses that target.
   */
  readonly localDns?: boolean;
  /** The exhaustion levels the stream function keeps (occupancy/exhaustion.ts): GET pool shows them. */
  readonly exhaustion?: { states(pool: string): Promise<ReadonlyMap<IpFamily, ExhaustionState>> };
  /** The DNS status of claims' names the stream function keeps (core/dns/status.ts): GET claim shows it. */
  readonly dnsStatus?: Pick<DnsStatusStore, 'statuses'>;
}

export { nowIso, pageLimit } from '../base/time.ts';
