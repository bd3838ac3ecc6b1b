import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Config } from '../config.ts';
import { LeaseAllocator, type PickStrategy } from '../core/allocator/lease-allocator.ts';
import { BitmapAllocator } from '../core/allocator/bitmap-allocator.ts';
import { dynamicWindowOf } from '../core/bitmap/legacy.ts';
import { LegacyMirror } from '../core/mirror/legacy-mirror.ts';
import { LeaseProjections } from '../core/mirror/projections.ts';
import { HistoryRecorder } from '../core/history/recorder.ts';
import { readSummary } from '../core/occupancy/reader.ts';
import { SummaryMirror } from '../core/occupancy/summary-mirror.ts';
import type { Allocator } from '../core/allocator/allocator.ts';
import { HintCache } from '../core/allocator/hint.ts';
import { PoolViewCache } from '../core/pool-view-cache.ts';
import type { Clock, Random, Timer } from '../core/ports.ts';
import type { Deps } from '../core/use-cases/deps.ts';
import { createDynamoClient } from './dynamodb/client.ts';
import { SdkTable } from './dynamodb/sdk-table.ts';
import { tableStores, type Stores } from './dynamodb/stores.ts';
import type { Table } from './dynamodb/table.ts';
import { cryptoRandom, systemClock, systemTimer } from './system.ts';
import { recordAwsCalls } from './aws-call-log.ts';
import { ExhaustionWatch, type CrossingAnnouncer } from '../core/occupancy/exhaustion.ts';
import { poolExhaustionReading } from '../core/use-cases/pools.ts';
import { TableExhaustionStore } from './dynamodb/exhaustion-store.ts';
import { TableDnsStatusStore } from './dynamodb/dns-status-store.ts';
import { crossingsClient, EventBridgeCrossings } from './crossing-events.ts';
import { DnsProjection } from '../core/dns/projection.ts';
import type { DnsTargets } from '../core/dns/ports.ts';

/**
 * The wait after the `lost`-th lost race (the legacy allocator's bitmap race, a consumer change): a uniform random whole
 * number of milliseconds in [0, min(2^lost, 64)), on `timer` (setTimeout, or the simulator's virtual time).
 */
const backoff =
  (random: Random, timer: Timer) =>
  (lost: number): Promise<void> =>
    timer.sleep(Number(random.below(BigInt(Math.max(1, Math.ceil(Math.min(2 ** lost, 64)))))));

/**
 * Only the stream function and the reconciler write DNS (functions/stream.ts and reconcile.ts give them the targets):
 * the others bundle no DNS client.
 */
const noDnsTargets: DnsTargets = (spec) => {
  throw new Error(`This function writes no DNS (${spec.kind} target)`);
};

/** How long the stream function keeps a pool's view for its DNS settings before checking its range generation. */
const DNS_VIEW_MAX_AGE_MS = 60_000;

export interface Container {
  readonly config: Config;
  /** The table engine every store of this container writes through. */
  readonly table: Table;
  readonly stores: Stores;
  readonly deps: Deps;
  /** The stream function's work: the occupancy summary and the legacy bitmaps. */
  readonly mirror: LeaseProjections;
}

export interface ContainerOverrides {
  /** A DynamoDB client (tests mock one; benchmarks meter one). */
  readonly client?: DynamoDBClient;
  /** A table engine to use instead of DynamoDB (MemoryTable: the core's tests without Java). */
  readonly table?: Table;
  readonly clock?: Clock;
  /** Where waits happen (default setTimeout): the simulator passes its virtual time. */
  readonly timer?: Timer;
  readonly random?: Random;
  readonly strategy?: PickStrategy;
  readonly hintMaxAgeMs?: number;
  readonly summaryMaxAgeMs?: number;
  readonly viewMaxAgeMs?: number;
  /** Wraps the stores (tests and benchmarks count requests through them). */
  readonly wrapStores?: (stores: Stores) => Stores;
  /** Where the stream function's crossings of free-space thresholds go beyond the pool's events (default: EventBridge). */
  readonly announcer?: CrossingAnnouncer;
  /** The DNS servers the pools' `dns` targets name (default: Route 53 and RFC 2136 adapters; tests give memory zones). */
  readonly dnsTargets?: DnsTargets;
}

/** The EventBridge announcer of a config, its client made on the first crossing (most containers never announce one). */
function eventBridgeAnnouncer(config: Config): CrossingAnnouncer {
  let made: EventBridgeCrossings | undefined;
  return {
    announce: (crossings) => {
      if (made === undefined) {
        const client = crossingsClient({ region: config.region, localStack: config.localStack });
        recordAwsCalls(client, 'events', config.callLog);
        made = new EventBridgeCrossings(client, config.stage);
      }
      return made.announce(crossings);
    },
  };
}

/**
 * The DynamoDB table of a config: one attempt per request, so a throttle or timeout surfaces instead of being retried
 * behind the allocator's back. The reconciler's function uses it too, on purpose: its core retries a transient failure
 * itself (Run.retrying: repairs and phase reads), within the run's deadline and the same way in the simulator; SDK
 * retries underneath would multiply each read's attempts without knowing the deadline.
 */
export function dynamoTable(config: Config, client?: DynamoDBClient): SdkTable {
  const sdk =
    client ??
    createDynamoClient({
      ...(config.dynamodbEndpoint ? { endpoint: config.dynamodbEndpoint } : {}),
      region: config.region,
      maxAttempts: 1,
      requestTimeoutMs: config.requestTimeoutMs,
    });
  if (client === undefined) recordAwsCalls(sdk, 'dynamodb', config.callLog);
  return new SdkTable(sdk, config.tableName);
}

/** The allocator the gates choose, over the container's stores. */
function allocatorOf(parts: {
  readonly gates: Config['featureGates'];
  readonly stores: Stores;
  readonly hints: HintCache;
  readonly clock: Clock;
  readonly random: Random;
  readonly pause: (lost: number) => Promise<void>;
  readonly strategy: ContainerOverrides['strategy'];
}): Allocator {
  const { gates, stores, hints, clock, random, pause, strategy } = parts;
  const { pools, claims, leases, bitmaps, occupancy } = stores;
  // Legacy mode (MultiCIDRServiceAllocator=false): the bitmap allocates, and a release clears its bits in its own transaction.
  return gates.MultiCIDRServiceAllocator
    ? new LeaseAllocator({
        claims,
        hints,
        clock,
        random,
        windowOf: dynamicWindowOf(gates),
        leaseStates: (pool, addresses) => occupancy.leaseStates(pool, addresses),
        heldFor: (pool, owner, nowMs) => leases.heldFor(pool, owner, nowMs),
        seals: stores.seals,
        ...(strategy ? { strategy } : {}),
      })
    : new BitmapAllocator({ claims, leases, pools, bitmaps, clock, random, pause });
}

/** The one composition root: builds the adapters once per container and binds them to the use cases. */
export function buildContainer(config: Config, overrides: ContainerOverrides = {}): Container {
  const table = overrides.table ?? dynamoTable(config, overrides.client);
  const random = overrides.random ?? cryptoRandom;
  const built = tableStores(table, { shards: config.leaseIndexShards, cursorSecret: config.cursorSecret, random });
  const stores = overrides.wrapStores ? overrides.wrapStores(built) : built;
  const gates = config.featureGates;
  const clock = overrides.clock ?? systemClock;
  const pause = backoff(random, overrides.timer ?? systemTimer);
  const { pools, claims, leases, bitmaps, occupancy } = stores;
  const hints = new HintCache(
    (pool, family, intervals, nowMs) => leases.takenAddresses(pool, family, intervals, nowMs),
    overrides.hintMaxAgeMs,
    {
      read: (pool, family, intervals) => readSummary(occupancy, pool, family, intervals),
      ...(overrides.summaryMaxAgeMs !== undefined ? { maxAgeMs: overrides.summaryMaxAgeMs } : {}),
    },
  );
  const views = new PoolViewCache(pools, overrides.viewMaxAgeMs);
  const dnsViews = new PoolViewCache(pools, DNS_VIEW_MAX_AGE_MS);
  const allocator = allocatorOf({ gates, stores, hints, clock, random, pause, strategy: overrides.strategy });
  const exhaustion = new TableExhaustionStore(table);
  const dnsStatus = new TableDnsStatusStore(table);
  const deps: Deps = {
    pools,
    claims,
    leases,
    health: stores.health,
    clock,
    random,
    views,
    hints,
    allocator,
    bitmaps,
    gates,
    occupancy,
    reconcile: stores.reconcile,
    history: stores.history,
    exhaustion,
    dnsStatus,
    pause,
    ...(overrides.dnsTargets ? { dns: overrides.dnsTargets } : {}),
    localDns: config.localStack,
  };
  const watch = new ExhaustionWatch({
    store: exhaustion,
    utilization: (pool) => poolExhaustionReading(deps, pool),
    announcer: overrides.announcer ?? eventBridgeAnnouncer(config),
    clock,
  });
  const mirror = new LeaseProjections({
    summary: new SummaryMirror({ store: occupancy, clock }),
    legacy: new LegacyMirror({ pools, leases, bitmaps, gates }),
    history: new HistoryRecorder({ store: stores.history, clock }),
    marks: stores.history,
    exhaustion: watch,
    dns: new DnsProjection({
      // Pools and their dns are fixed at creation: a long-lived copy, checked against the range generation when old.
      pools: { getPoolView: (pool) => dnsViews.get(pool, clock.nowMs()).catch(() => undefined) },
      claims,
      leases,
      targets: overrides.dnsTargets ?? noDnsTargets,
      clock,
      status: dnsStatus,
    }),
  });
  return { config, table, stores, deps, mirror };
}
