import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Config } from '../config.ts';
import { LeaseAllocator, type PickStrategy } from '../core/allocator/lease-allocator.ts';
import { BitmapAllocator } from '../core/allocator/bitmap-allocator.ts';
import { BitmapReleasingStore } from '../core/bitmap/bitmap-releasing-store.ts';
import { dynamicWindowOf } from '../core/bitmap/legacy.ts';
import { LegacyMirror } from '../core/mirror/legacy-mirror.ts';
import type { Allocator } from '../core/allocator/allocator.ts';
import { HintCache } from '../core/allocator/hint.ts';
import { PoolViewCache } from '../core/pool-view-cache.ts';
import type { Clock, IpamStore, Random } from '../core/ports.ts';
import type { Deps } from '../core/use-cases/deps.ts';
import { createDynamoClient } from './dynamodb/client.ts';
import { DynamoStore } from './dynamodb/dynamo-store.ts';
import { DynamoBitmapStore } from './dynamodb/bitmap-store.ts';
import { DynamoReconcileStore } from './dynamodb/reconcile-store.ts';
import { cryptoRandom, systemClock } from './system.ts';

/** Waits a uniform random whole number of milliseconds in [0, maxMs) (the legacy allocator's backoff after a lost bitmap race). */
const jitter = (random: Random, maxMs: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Number(random.below(BigInt(Math.max(1, Math.ceil(maxMs)))))));

export interface Container {
  readonly config: Config;
  readonly client: DynamoDBClient;
  readonly store: DynamoStore;
  readonly bitmaps: DynamoBitmapStore;
  readonly deps: Deps;
  /** The stream function's legacy-bitmap mirror. */
  readonly mirror: LegacyMirror;
}

export interface ContainerOverrides {
  readonly client?: DynamoDBClient;
  readonly clock?: Clock;
  readonly random?: Random;
  readonly strategy?: PickStrategy;
  readonly hintMaxAgeMs?: number;
  readonly viewMaxAgeMs?: number;
  /** Wraps the store (benchmarks count requests through it). */
  readonly wrapStore?: (store: IpamStore) => IpamStore;
}

/** The one composition root: builds the adapters once per container and binds them to the use cases. */
export function buildContainer(config: Config, overrides: ContainerOverrides = {}): Container {
  // One attempt per request: a throttle or timeout surfaces instead of being retried behind the allocator's back.
  const client = overrides.client ?? createDynamoClient({ ...(config.dynamodbEndpoint ? { endpoint: config.dynamodbEndpoint } : {}), region: config.region, maxAttempts: 1, requestTimeoutMs: config.requestTimeoutMs });
  const store = new DynamoStore({ client, tableName: config.tableName, shards: config.leaseIndexShards, cursorSecret: config.cursorSecret });
  const bitmaps = new DynamoBitmapStore({ client, tableName: config.tableName, shards: config.leaseIndexShards });
  const gates = config.featureGates;
  const wrapped: IpamStore = overrides.wrapStore ? overrides.wrapStore(store) : store;
  // Legacy mode (MultiCIDRServiceAllocator=false): the bitmap allocates, and a release clears its bits in its own transaction.
  const legacy = !gates.MultiCIDRServiceAllocator;
  const port: IpamStore = legacy ? new BitmapReleasingStore(wrapped, bitmaps) : wrapped;
  const clock = overrides.clock ?? systemClock;
  const random = overrides.random ?? cryptoRandom;
  const hints = new HintCache((pool, family, intervals, nowMs) => port.takenAddresses(pool, family, intervals, nowMs), overrides.hintMaxAgeMs);
  const views = new PoolViewCache(port, overrides.viewMaxAgeMs);
  const allocator: Allocator = legacy
    ? new BitmapAllocator({ store: port, bitmaps, clock, random, pause: (lost) => jitter(random, Math.min(2 ** lost, 64)) })
    : new LeaseAllocator({ store: port, hints, clock, random, windowOf: dynamicWindowOf(gates), ...(overrides.strategy ? { strategy: overrides.strategy } : {}) });
  const reconcile = new DynamoReconcileStore({ client, tableName: config.tableName, shards: config.leaseIndexShards, cursorSecret: config.cursorSecret });
  const deps: Deps = { store: port, clock, random, views, hints, allocator, bitmaps, gates, reconcile };
  const mirror = new LegacyMirror({ store: port, bitmaps, gates });
  return { config, client, store, bitmaps, deps, mirror };
}
