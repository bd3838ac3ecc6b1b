import type { BitmapStore } from '../../core/bitmap/ports.ts';
import type { OccupancyStore } from '../../core/occupancy/ports.ts';
import type { UsedUpSeals } from '../../core/used-up/ports.ts';
import type { ClaimStore, HealthProbe, LeaseIndex, PoolStore, Random } from '../../core/ports.ts';
import type { ReconcileStore } from '../../core/use-cases/reconcile-ports.ts';
import { cryptoRandom } from '../system.ts';
import { TableBitmapStore } from './bitmap-store.ts';
import { TableClaimStore } from './claim-store.ts';
import { CursorCodec } from './cursor.ts';
import { TableLeaseIndex } from './lease-index.ts';
import { TableOccupancyStore } from './occupancy-store.ts';
import { TablePoolStore } from './pool-store.ts';
import { TableReconcileStore } from './reconcile-store.ts';
import { TableHistoryStore } from './history-store.ts';
import type { HistoryCursors, HistoryStore } from '../../core/history/ports.ts';
import type { Table } from './table.ts';

/** Every port the service persists through, by role. */
export interface Stores {
  readonly pools: PoolStore;
  readonly claims: ClaimStore;
  readonly leases: LeaseIndex;
  readonly bitmaps: BitmapStore;
  readonly occupancy: OccupancyStore;
  /** The used-up seals of ranges and their freed counters (the same store as the summary's). */
  readonly seals: UsedUpSeals;
  readonly reconcile: ReconcileStore;
  readonly health: HealthProbe;
  readonly history: HistoryStore & HistoryCursors;
}

export interface StoreOptions {
  /** Shards of the listing index keys; fixed for a table's life. */
  readonly shards: number;
  /** Secret for signing cursors. */
  readonly cursorSecret: string;
  /** Ids of range generations and the pick of the copy a generation read goes to (default: cryptographic). */
  readonly random?: Pick<Random, 'below' | 'uid'>;
}

/** The stores of one table, on whichever engine the table is (DynamoDB, or memory in tests). */
export function tableStores(table: Table, options: StoreOptions): Stores {
  const cursors = new CursorCodec(options.cursorSecret);
  const random = options.random ?? cryptoRandom;
  const pools = new TablePoolStore(table, options.shards, cursors, random);
  const claims = new TableClaimStore(table, options.shards, cursors);
  const occupancy = new TableOccupancyStore(table, random);
  return {
    pools,
    claims,
    leases: new TableLeaseIndex(table, options.shards, cursors),
    bitmaps: new TableBitmapStore(table, options.shards, claims),
    occupancy,
    seals: occupancy,
    reconcile: new TableReconcileStore(table, options.shards, cursors, pools),
    history: new TableHistoryStore(table, cursors),
    health: { health: async () => ({ table: table.name, status: await table.describe() }) },
  };
}
