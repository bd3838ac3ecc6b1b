import type { Claim, Lease } from '../../shared/core/model.ts';
import type { ReconcileSettings } from '../../shared/core/reconciler/plan.ts';
import type { ReconcileStore } from '../../shared/core/use-cases/reconcile-ports.ts';
import {
  EXPIRY_CHECKPOINT,
  reconcile,
  type ReconcileDeps,
  type ReconcileReport,
} from '../../shared/core/reconciler/reconcile.ts';
import type { Pause } from '../../shared/core/reconciler/run.ts';
import { claimToItem, leaseToItem } from '../../shared/adapters/dynamodb/codec.ts';
import { EVENT_SHARDS, keys, type Key } from '../../shared/adapters/dynamodb/keys.ts';
import type { ContainerOverrides } from '../../shared/adapters/composition.ts';
import { queryAll, type Table } from '../../shared/adapters/dynamodb/table.ts';
import { testApi, type TestApi } from './api.ts';
import { dynamoLocalEngine, type TestEngine } from './engines.ts';
import { plannedFaults } from './planned-faults.ts';
import { asIntFunction } from './int-functions.ts';

/** A clock the test moves by hand; every container of the test shares it. */
export class ManualClock {
  constructor(public t: number) {}
  nowMs = (): number => this.t;
  advance(ms: number): number {
    this.t += ms;
    return this.t;
  }
  iso(ms = this.t): string {
    return new Date(ms).toISOString();
  }
}

/** Small graces (as configuration would set them), in ms. */
export const testSettings: ReconcileSettings = {
  expiredClaimGraceMs: 30_000,
  orphanLeaseGraceMs: 60_000,
  terminatingRangeGraceMs: 10_000,
  leakStrikes: 3,
  sweepItems: 1000,
  countItems: 20_000,
};

/**
 * 2035-01-01T00:10:00Z: early in an hour bucket, so a test's minutes stay in one bucket unless it says otherwise; and
 * in the future, because DynamoDB Local runs TTL deletion against the real clock and would delete items whose `ttl`
 * (expiry + 24 h) lies in the real past.
 */
export const T0 = Date.parse('2035-01-01T00:10:00.000Z');

export const owner = (uid: string, name = `pod-${uid}`) => ({ kind: 'Pod', name, uid });

export interface ReconcilerHarness {
  readonly api: TestApi;
  readonly clock: ManualClock;
  /** The table engine under the API (DynamoDB Local or memory): writes here bypass the service, as a fault would. */
  readonly table: Table;
  /**
   * One reconciler pass with the test settings (overridable), a 60 s deadline unless given, an optional store wrapper,
   * and how a retried repair waits (default: at once; a test may move the clock).
   */
  run(options?: {
    settings?: Partial<ReconcileSettings>;
    deadlineMs?: number;
    wrap?: (store: ReconcileStore) => ReconcileStore;
    pause?: Pause;
  }): Promise<ReconcileReport>;
  put(item: Record<string, unknown>): Promise<void>;
  get(key: Key): Promise<Record<string, unknown> | undefined>;
  remove(key: Key): Promise<void>;
  /** Writes a claim item or a lease item directly (no transaction): the way corruption looks. */
  putClaim(claim: Claim): Promise<void>;
  putLease(lease: Lease): Promise<void>;
  /** Every event item of a pool, oldest first, straight from the table. */
  events(pool: string): Promise<{ reason: string; object: string; message: string; time: string }[]>;
  /** Creates a pool with ranges through the API. */
  pool(name: string, cidrs: readonly (string | { cidr: string; name?: string; legacy?: boolean })[]): Promise<void>;
  /** Creates a claim through the API; returns its body. */
  claim(
    pool: string,
    body: Record<string, unknown>,
  ): Promise<{
    name: string;
    uid: string;
    version: number;
    addresses: { address: string; family: string; range: string }[];
  }>;
}

export interface HarnessOptions {
  readonly overrides?: ContainerOverrides;
  readonly env?: Record<string, string>;
  readonly start?: number;
  /**
   * Start as a reconciler that has run before (its expiry checkpoint one hour before the start), so a run reads two
   * hour buckets instead of a first run's 48-hour lookback. Default true.
   */
  readonly ranBefore?: boolean;
  /** The table engine (default DynamoDB Local). */
  readonly engine?: TestEngine;
}

/** The real API and reconciler over a fresh table (DynamoDB Local unless another engine is given), on a hand-moved clock. */
export async function reconcilerHarness(options: HarnessOptions = {}): Promise<ReconcilerHarness> {
  const start = options.start ?? T0;
  const clock = new ManualClock(start);
  const api = await testApi(
    { clock, viewMaxAgeMs: 0, ...options.overrides },
    options.env ?? {},
    undefined,
    options.engine ?? dynamoLocalEngine,
  );
  if (options.ranBefore ?? true)
    await api.container.deps.reconcile.saveCheckpoint(
      EXPIRY_CHECKPOINT,
      { hour: Math.floor(start / 3600_000) - 1 },
      undefined,
    );
  const table = api.container.table;
  const harness: ReconcilerHarness = {
    api,
    clock,
    table,
    async run(options = {}) {
      const deps: ReconcileDeps = {
        ...api.container.deps,
        ...(options.wrap ? { reconcile: options.wrap(api.container.deps.reconcile) } : {}),
        settings: { ...testSettings, ...options.settings },
        ...(options.pause ? { pause: options.pause } : {}),
      };
      return asIntFunction('reconciler', () => reconcile(deps, { deadlineMs: options.deadlineMs ?? clock.t + 60_000 }));
    },
    async put(item) {
      await table.write({ kind: 'put', item });
    },
    get: (key) => table.get(key),
    async remove(key) {
      await table.write({ kind: 'delete', key });
    },
    putClaim: (claim) => harness.put(claimToItem(claim, api.container.config.leaseIndexShards)),
    putLease: (lease) => harness.put(leaseToItem(lease, api.container.config.leaseIndexShards)),
    async events(pool) {
      const shards = await Promise.all(
        Array.from({ length: EVENT_SHARDS }, (_, shard) =>
          queryAll(table, { index: 'GSI1', partition: keys.eventsListing(pool, shard) }),
        ),
      );
      const items = shards.flat().sort((a, b) => ((a.GSI1SK as string) < (b.GSI1SK as string) ? -1 : 1));
      return items as { reason: string; object: string; message: string; time: string }[];
    },
    async pool(name, cidrs) {
      const created = await api.call('POST', '/v1/pools', { name });
      if (created.status !== 201) throw new Error(`pool ${name}: ${created.status} ${JSON.stringify(created.body)}`);
      for (const c of cidrs) {
        const body = typeof c === 'string' ? { cidr: c } : c;
        const range = await api.call('POST', `/v1/pools/${name}/ranges`, body);
        if (range.status !== 201)
          throw new Error(`range ${JSON.stringify(body)}: ${range.status} ${JSON.stringify(range.body)}`);
      }
    },
    async claim(pool, body) {
      const res = await api.call('POST', `/v1/pools/${pool}/claims`, body);
      if (res.status !== 201)
        throw new Error(`claim ${JSON.stringify(body)}: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body as unknown as Awaited<ReturnType<ReconcilerHarness['claim']>>;
    },
  };
  return harness;
}

/** A claim as the store holds it (for seeding corrupt states directly). */
export function claimOf(
  pool: string,
  name: string,
  uid: string,
  addresses: { address: string; range: string }[],
  at: number,
  expiresAt?: number,
): Claim {
  return {
    pool,
    name,
    uid,
    spec: { owner: owner(`o-${name}`), ipFamilyPolicy: 'SingleStack', ipFamilies: [], addresses: [] },
    addresses: addresses.map((a) => ({
      address: a.address,
      family: a.address.includes(':') ? 'IPv6' : 'IPv4',
      range: a.range,
    })),
    createdAt: new Date(at).toISOString(),
    version: 1,
    ...(expiresAt !== undefined ? { expiresAt } : {}),
  };
}

/** A lease as the store holds it (for seeding corrupt states directly). */
export function leaseOf(
  pool: string,
  address: string,
  range: string,
  claim: string,
  claimUid: string,
  at: number,
  expiresAt?: number,
): Lease {
  return {
    pool,
    address,
    family: address.includes(':') ? 'IPv6' : 'IPv4',
    range,
    claim,
    claimUid,
    owner: owner(`o-${claim}`),
    createdAt: new Date(at).toISOString(),
    ...(expiresAt !== undefined ? { expiresAt } : {}),
  };
}

/** Past a 60 s TTL and the harness's grace (testSettings: 30 s). */
export const EXPIRED_PAST_GRACE = 60_000 + testSettings.expiredClaimGraceMs + 1;

/**
 * A harness on the memory engine with faults the test plans, pool p (10.0.0.0/24) and claim `web` (owner a, a 60 s
 * TTL), with the clock moved past web's expiry and the grace; `before` runs just before the clock moves.
 */
export async function expiredWebUnderFaults(before?: (h: ReconcilerHarness) => Promise<unknown>): Promise<{
  faults: ReturnType<typeof plannedFaults>;
  h: ReconcilerHarness;
  web: Awaited<ReturnType<ReconcilerHarness['claim']>>;
}> {
  const faults = plannedFaults();
  const h = await reconcilerHarness({ engine: faults.engine });
  await h.pool('p', ['10.0.0.0/24']);
  const web = await h.claim('p', { name: 'web', owner: owner('a'), ttlSeconds: 60 });
  await before?.(h);
  h.clock.advance(EXPIRED_PAST_GRACE);
  return { faults, h, web };
}

/** A retry's wait that records each wait and moves the test's clock by it, as time would pass. */
export function recordingPause(clock: ManualClock): { waits: number[]; pause: Pause } {
  const waits: number[] = [];
  return {
    waits,
    pause: async (ms) => {
      waits.push(ms);
      clock.advance(Math.ceil(ms));
    },
  };
}
