/**
 * One simulated deployment: API containers built by the real composition root (buildContainer) on a SimTable each,
 * clients that call the real use cases through them, the stream function's mirror fed from the table's change log,
 * the reconciler on its schedule, an operator changing ranges, and the fault plan the seed chose. Everything waits
 * only on the scheduler's virtual time.
 *
 *   clients ──(gateway latency)──▶ dispatcher ──▶ warm container (one request at a time) ──▶ SimTable ─┐
 *                                       └─ no idle container: a cold start (or 429 past the limit)       │
 *   stream log ◀─────────────────────────── committed lease changes ◀──────────────────── SimEngine ◀┘
 *      └─▶ poller (batches, after a lag) ──▶ mirror container (createMirrorHandler, the stream function's code)
 *   schedule ──▶ reconciler container (runReconciler) · operator ──▶ createRange / deleteRange
 *
 * Invariants (invariants.ts) are checked every `checkEveryMs` of virtual time, on every answer, and at quiescence
 * (clients stopped, the stream drained, the reconciler run past its grace, the index settled).
 */
import type { DynamoDBRecord } from 'aws-lambda';
import { buildContainer, type Container } from '../shared/adapters/composition.ts';
import { itemToClaim, type Item } from '../shared/adapters/dynamodb/codec.ts';
import { createMirrorHandler } from '../shared/adapters/stream/mirror-handler.ts';
import { runReconciler } from '../shared/adapters/reconcile-runner.ts';
import { loadConfig, type Config } from '../shared/config.ts';
import { PickStrategy } from '../shared/core/allocator/lease-allocator.ts';
import { Bitmap, addressOfBit, legacyWindow } from '../shared/core/bitmap/bitmap.ts';
import { formatAddress, parseAddress } from '../shared/core/ip/address.ts';
import { isHostOf, parseCidr } from '../shared/core/ip/cidr.ts';
import { hostInterval } from '../shared/core/base/pool-geometry.ts';
import { forEachHeld } from '../shared/core/occupancy/chunk.ts';
import { readSummary } from '../shared/core/occupancy/reader.ts';
import { RangeState, type Claim } from '../shared/core/model.ts';
import type { Deps } from '../shared/core/use-cases/deps.ts';
import {
  Invariant,
  checkBitmaps,
  checkExpiredLeasesGone,
  checkSummaries,
  checkClaimLeases,
  checkDeletedPools,
  checkLeaseInRange,
  checkNoDoubleHold,
  checkReleasedInTime,
  checkRetryAnswer,
  checkSharedClaims,
  checkStatus,
  checkUtilization,
  snapshotOf,
  type DeletedPool,
  type AnsweredClaim,
  type SharedClaim,
  type Violation,
} from './invariants.ts';
import { Prng } from './prng.ts';
import { percentile } from './report.ts';
import { Scheduler } from './scheduler.ts';
import { SimEngine, type CallFault, type Caller, type Spend, type StreamChange } from './sim-table.ts';
import type { Query, WriteOp } from '../shared/adapters/dynamodb/table.ts';
import {
  ClientLedger,
  FreeAddresses,
  ProjectionLag,
  checkRangeFull,
  rangeFullWithoutFullMoment,
  type RangeFullAnswer,
} from './ledger.ts';
import type { PlantHooks } from './plants.ts';
import { checkGrowth, checkPoolTree } from './tree.ts';
import {
  answeredClaim,
  httpOf,
  segment,
  type ClaimDocument,
  type ClaimPage,
  type Http,
  type PoolDetailsDocument,
  type RangeDocument,
  type Reply,
} from './http.ts';
import { DEPLOYED_MAPPING, batchDue, deliverBatch, type DeliveryRules } from '../aws-emulation/stream-delivery.ts';
import { AWS_DEFAULTS, type Quotas } from './quotas.ts';

/** Epoch of virtual time zero. */
const EPOCH_MS = Date.UTC(2026, 0, 1);

/**
 * How far the stream function's projections (occupancy summary, legacy bitmaps) may lag a lease change during load:
 * the stream's lag (p99 800 ms) and polling, failed and retried batches, and throttling storms of up to 5 s that
 * refuse the function's writes. The largest lag seen is printed with each run.
 */
export const PROJECTION_LAG_BOUND_MS = 15_000;

/**
 * Whether a RangeFull answered while one address of the family was free all along stops the run. It does since
 * a "used up" decision is confirmed by a consistent read of the leases (used-up/rule.ts); an allocator deciding
 * "full" from the occupancy summary, which lags the leases, gave several such answers in each crowded quick run.
 * Set to false, such answers are counted and printed as a note instead (the first with its detail). A RangeFull with
 * no moment the family was full, though no address was free all along, is no promise of the allocator: it is
 * counted and printed as a note either way (ledger.ts rangeFullWithoutFullMoment).
 */
export const RANGE_FULL_EXACT_ENFORCED = true;

/** The invariants over the client ledger and the projections' lag (ledger.ts). */
const LEDGER_INVARIANTS: ReadonlySet<string> = new Set([
  Invariant.HeldClaimStaysHeld,
  Invariant.NoAddressToldTwice,
  Invariant.ReleasedAddressFree,
  Invariant.NoClaimInDeletedRange,
  Invariant.ProjectionLagBounded,
  Invariant.RangeFullExact,
]);

/**
 * Latency outside DynamoDB, lognormal (median, p99 ms). API Gateway HTTP API plus the Lambda invoke of a warm
 * container: a few milliseconds each way (AWS's published IntegrationLatency/Latency difference for HTTP APIs is
 * typically 5-15 ms). Cold start: the bench's measured init time of the bundled http function (224.8 ms median,
 * 324 ms max over 7 runs, bench/results/cold-start.json) plus Lambda's own sandbox start (~100 ms, AWS Lambda docs).
 */
export const OUTSIDE = {
  gateway: { median: 6, p99: 25 },
  coldStart: { median: 325, p99: 600 },
  /** API Gateway's integration timeout: a client that hears nothing gets a 504 after this. */
  gatewayTimeoutMs: 30_000,
} as const;

/** What a scenario asks of the fault plan: per-call probabilities and episode rates. */
export interface FaultRates {
  /** Per API write: a timeout after which the write committed (half of them) or not. */
  readonly timeout: number;
  /** Per API write: the container dies after the write committed, before it answers. */
  readonly die: number;
  /** Per minute: a throttling storm of 1-5 s on every call. */
  readonly stormsPerMinute: number;
  /** Per stream batch: delivered again after success (a duplicate), or the invocation fails whole. */
  readonly redeliver: number;
  readonly streamFailure: number;
  /** Per reconciler run: a second run overlaps it; the run's container is killed mid-run. */
  readonly reconcilerOverlap: number;
  readonly reconcilerKill: number;
  /** Per minute: the operator deletes a range while claims are in flight (and adds one). */
  readonly rangeChurnPerMinute: number;
  /** Per minute: an owner is released while its client is claiming. */
  readonly ownerReleasesPerMinute: number;
  /**
   * Per minute: the operator deletes the second pool while its clients claim (releases its claims, then DELETE,
   * again while 409 PoolNotEmpty), and creates it again a few seconds later with a new range. 0: no second pool.
   */
  readonly poolDeletesPerMinute: number;
}

export const NO_FAULTS: FaultRates = {
  timeout: 0,
  die: 0,
  stormsPerMinute: 0,
  redeliver: 0,
  streamFailure: 0,
  reconcilerOverlap: 0,
  reconcilerKill: 0,
  rangeChurnPerMinute: 0,
  ownerReleasesPerMinute: 0,
  poolDeletesPerMinute: 0,
};

export interface Scenario {
  readonly name: string;
  /** Virtual milliseconds of client load. */
  readonly durationMs: number;
  readonly clients: number;
  /** Lambda concurrency: containers at most (a request finding none idle past this answers 429). */
  readonly maxContainers: number;
  /** Mean think time between a client's requests (exponential). */
  readonly thinkMs: number;
  /** IPv4 ranges of the pool (the first legacy when `legacy`), and an IPv6 one when `ipv6`. */
  readonly cidrs: readonly string[];
  readonly legacy: boolean;
  readonly ipv6?: string;
  /** A block pool: the pool's blockPrefixLength; its claims take blocks of the ranges instead of addresses. */
  readonly blocks?: Readonly<Partial<Record<'IPv4' | 'IPv6', number>>>;
  /**
   * A pool tree under the block pool: address pool `sim-child` made from an IPv4 block claim of `sim`
   * (POST ranges with `source`), and address pool `sim-grow`, without ranges at first, growing from `sim` (`grow`:
   * this threshold and bound). Clients 1 and 2 (mod 4) claim in them. `parentDeletes`: the tree operator's rounds
   * (treeOperator) on a parent pool of one block, deleted right after a child range is made from that block.
   */
  readonly tree?: { readonly belowFree: number; readonly maxBlocks: number; readonly parentDeletes?: number };
  /** Fraction of claims made with a TTL (renewed by their client while it holds them), and that TTL. */
  readonly ttlShare: number;
  readonly ttlSeconds: number;
  /** Fraction of creates with generateName (the others are named). */
  readonly generateShare: number;
  /** Fraction of a client's steps that release one of its claims (the rest create, or renew when due). */
  readonly releaseShare: number;
  /** Claims a client holds at most before it releases instead. */
  readonly holdMax: number;
  /** Maximum clock skew of a container, either way (ms). */
  readonly skewMs: number;
  readonly reconcilePeriodMs: number;
  readonly faults: FaultRates;
  /** 'lease' (as shipped) or 'bitmap-cas' (MultiCIDRServiceAllocator=false). */
  readonly allocator: 'lease' | 'bitmap-cas';
  /** Addresses taken before the load starts, as a fraction of the first range. */
  readonly prefill: number;
  readonly checkEveryMs: number;
  /** Storage options: no capacity limits (a model check), latency scale. */
  readonly unlimited?: boolean;
  /** A broken store (the checker's tests). */
  readonly mutate?: (ops: readonly WriteOp[], caller: Caller) => WriteOp[];
  /**
   * The checker's own tests of the table-only invariants: the ledger's checks, which see most broken stores first,
   * are ignored, so each table invariant is shown to catch its broken store on its own.
   */
  readonly tableInvariantsOnly?: boolean;
  /** A planted bug (plants.ts, `--plant NAME`). */
  readonly plant?: PlantHooks;
  /** DynamoDB's quotas and ramps (quotas.ts); AWS's defaults for a new on-demand table when absent. */
  readonly quotas?: Quotas;
  /** API Gateway's account throttle: requests per second and burst (AWS's defaults 10,000 and 5,000 when absent). */
  readonly apiGateway?: { readonly rps: number; readonly burst: number };
  /** Lambda's scaling rate: new execution environments per 10 s (AWS's 1,000 when absent). */
  readonly lambdaScalePer10s?: number;
  /**
   * Provisioned concurrency: the API function's first this many environments are made without drawing on the
   * scaling rate (set up before the load; each still pays a cold start here, which overstates their first latency).
   */
  readonly lambdaProvisioned?: number;
  /**
   * Open loop: instead of closed-loop clients, requests arrive as a Poisson process at `perSecond` allocations a
   * second, each released after an exponential hold of mean `holdMs` (its latency counted from its arrival).
   */
  readonly arrivals?: { readonly perSecond: number; readonly holdMs: number };
  /** LEASE_INDEX_SHARDS (8 when absent). */
  readonly indexShards?: number;
  /**
   * Multiplies every latency input (storage calls, the index's and the stream's lag, the gateway legs, cold starts):
   * the sensitivity table halves and doubles them. 1 when absent.
   */
  readonly latencyScale?: number;
  /** The stream function's event source mapping (the deployed one when absent). */
  readonly streamMapping?: DeliveryRules;
  /** Stream shards: records by partition-key hash, each shard with one batch in flight (parallelizationFactor 1). */
  readonly streamShards?: number;
  /** When a client renews a claim with a TTL, as a fraction of the TTL after its last answer (1/3 when absent). */
  readonly renewAfter?: number;
  /** The reconciler's expired-claim grace (RECONCILE_EXPIRED_GRACE_SECONDS; the deployed 30 when absent). */
  readonly reconcilerGraceSeconds?: number;
  /** A broken store (the checker's tests): queries answered as if empty. */
  readonly hideQuery?: (query: Query) => boolean;
}

/** What a run reports. */
export interface Outcome {
  readonly seed: number;
  readonly scenario: string;
  readonly virtualMs: number;
  readonly steps: number;
  readonly answers: Readonly<Record<string, number>>;
  readonly allocations: number;
  readonly latencies: readonly number[];
  readonly spend: ReadonlyMap<string, Spend>;
  readonly faults: Readonly<Record<string, number>>;
  readonly reconcilerRuns: number;
  readonly streamRecords: number;
  readonly mirrorBatches: number;
  readonly checks: number;
  /** Answers recorded in the client ledger. */
  readonly told: number;
  /** The open loop's requests (scenario.arrivals): how each ended, and the allocations' latencies from arrival. */
  readonly openLoop?: OpenLoop;
  /** Requests refused before a container ran them, by what refused them. */
  readonly refused: Readonly<Record<string, number>>;
  /** Throttled calls by the bucket that was short (quotas.ts), most first. */
  readonly throttledBy: readonly (readonly [string, number])[];
  /** The oldest difference seen between the stream function's projections and the leases (ms). */
  readonly maxProjectionLagMs: number;
  /** What the pool tree (Scenario.tree) came to: the child's block, the blocks grown, the claims made in each. */
  readonly tree?: string;
  readonly violation?: Violation;
  readonly trace: readonly string[];
  readonly notes: readonly string[];
}

/** What the open loop's arrivals came to. */
export interface OpenLoop {
  arrived: number;
  allocated: number;
  /** Answered 429 or 503 on every attempt, or never answered: refused, not dropped. */
  refused: number;
  rangeFull: number;
  other: number;
  /** The window the rate is measured over (ms). */
  windowMs: number;
  /** Per second of the window, by arrival: arrived, allocated, refused, and the allocations' latencies from arrival (ms, retries included). */
  readonly bySecond: { arrived: number; allocated: number; refused: number; readonly latencies: number[] }[];
}

/** The invariant's failure, carried out of the run through the scheduler. */
export class InvariantBroken extends Error {
  constructor(readonly violation: Violation) {
    super(`${violation.invariant}: ${violation.detail}`);
  }
}

interface ApiContainer {
  readonly caller: Caller;
  readonly container: Container;
  readonly deps: Deps;
  /** The container's HTTP API (sim/http.ts): every request of the clients, operators and auditor goes through it. */
  readonly http: Http;
  busy: boolean;
}

/** What a request came to, as its client reads the answer. */
interface Asked {
  readonly status: number;
  readonly claim?: AnsweredClaim;
  readonly error?: string;
}

/** A reply as its client reads it: the status, and an error's line. */
const asked = (r: Reply): Asked => ({ status: r.status, ...(r.error !== undefined ? { error: r.error } : {}) });

/** A reply whose success carries a Claim document (create, renew), in the pool the request named. */
const claimAsked =
  (pool: string) =>
  (r: Reply): Asked =>
    r.status < 300 ? { status: r.status, claim: answeredClaim(pool, r.body as ClaimDocument) } : asked(r);

/** An answer, with when its attempt arrived at a container and when that container answered (virtual ms). */
type Answer =
  | {
      readonly status: number;
      readonly claim?: AnsweredClaim;
      readonly error?: string;
      readonly arrivedAt?: number;
      readonly doneAt?: number;
    }
  | { readonly status: 'lost' };

/** A stream reader drops the records behind its cursor once this many have piled up. */
const STREAM_KEPT_READ = 4096;

const POOL = 'sim';
/** The second pool, deleted and created again under load (FaultRates.poolDeletesPerMinute); its clients are every fourth. */
const POOL_B = 'sim-b';
/** The pool tree's pools (Scenario.tree): one made from a block claim of POOL, one growing from POOL. */
const POOL_CHILD = 'sim-child';
const POOL_GROW = 'sim-grow';
/** The tree operator's parent pool (one block: a second hand-out of it is a double hold) and its range. */
const POOL_PARENT = 'sim-parent';
const PARENT_CIDR = '10.70.0.0/26';
/** The block claim of POOL that POOL_CHILD's range is made from. */
const CHILD_SOURCE = 'child-source';
/** The range of the second pool's k-th incarnation: a CIDR of its own, so an address tells which incarnation it was taken in. */
const poolBCidr = (k: number): string => `10.60.${k % 256}.0/26`;

export class World {
  readonly scheduler = new Scheduler();
  readonly rng: Prng;
  readonly engine: SimEngine;
  readonly config: Config;
  private readonly trace: string[] = [];
  private readonly traceLimit = 50_000;
  private readonly api: ApiContainer[] = [];
  private containerCount = 0;
  private readonly answers: Record<string, number> = {};
  private readonly faultCounts: Record<string, number> = {};
  private readonly latencies: number[] = [];
  private allocations = 0;
  private reconcilerRuns = 0;
  private mirrorBatches = 0;
  private checks = 0;
  private stormUntil = -1;
  private loadOver = false;
  /** Per claim name: every incarnation committed (uid, addresses, when), from the commit log. */
  private readonly committedClaims = new Map<string, { uid: string; addresses: string[]; atMs: number }[]>();
  /** Claim incarnations released (deleted, or replaced after they expired). */
  private readonly endedClaims = new Set<string>();
  private readonly ownersGone: { pool: string; uid: string; askedAtMs: number; claimUids: Set<string> }[] = [];
  /** The shared claims the consumer actor made, as its answers tell (checkSharedClaims). */
  private readonly shared: {
    pool: string;
    name: string;
    claimUid: string;
    present: Set<string>;
    allLeftAtMs?: number;
  }[] = [];
  /** The second pool's deletions (when the pool item's delete committed), each with the CIDR it had: none of its claims or leases may outlive it. */
  private readonly deletedPools: DeletedPool[] = [];
  /** The second pool's incarnation (its range is poolBCidr of it). */
  private poolBIncarnation = 1;
  /**
   * Owner uids whose release has begun: the claims committed for them since (creates in flight), with when. Once the
   * release is answered 200, each such claim, and each one committed later, must be gone within the allowance too.
   */
  private readonly releasing = new Map<
    string,
    { pool: string; answered: boolean; late: { claimUid: string; atMs: number }[] }
  >();
  private readonly notes: string[] = [];
  private readonly faultRng: Prng;
  private readonly workRng: Prng;
  /** Owners (uids) currently in use, per client. */
  private readonly owners: string[] = [];
  /** What clients were told, and the checks over it (ledger.ts). */
  private readonly ledger: ClientLedger;
  /** Free positions (host addresses, a block pool's blocks) per pool family over time, for RangeFull answers. */
  private readonly free = new FreeAddresses();
  /** The stream function's projections against the leases, during load. */
  private readonly lag = new ProjectionLag(PROJECTION_LAG_BOUND_MS);
  /** When each lease (`pool/address`) last changed, epoch ms. */
  private readonly leaseChanged = new Map<string, number>();
  /** Load start, epoch ms: the stream function starts then, behind the setup's records. */
  private loadStartMs = 0;
  /** Owners whose release began: claims answered to them later are not the client's to count on. */
  private readonly ownersLetGo = new Set<string>();
  /** The second pool is being deleted (from the first round until it is created again). */
  private poolBDeleting = false;
  private readonly plantRng: Prng;
  private readonly refused: Record<string, number> = {};
  /** API Gateway's and Lambda's scaling token buckets. */
  private gateway = { tokens: 0, atMs: 0 };
  private scaling = { tokens: 0, atMs: 0 };
  private openLoop: OpenLoop | undefined;
  private readonly shardLogs: StreamChange[][] = [];
  /** RangeFull answers given while the family had a free address (RANGE_FULL_EXACT_ENFORCED). */
  private readonly inexactFull: string[] = [];
  /** RangeFull answers with no moment of their request the family was full (rangeFullWithoutFullMoment). */
  private readonly noFullMoment: string[] = [];
  /** Claims answered 201 to the clients, by pool. */
  private readonly createdIn: Record<string, number> = {};
  private readonly latencyScale: number;

  constructor(
    readonly seed: number,
    readonly scenario: Scenario,
  ) {
    this.rng = new Prng(seed);
    this.faultRng = this.rng.fork('faults');
    this.workRng = this.rng.fork('work');
    this.plantRng = this.rng.fork('plant');
    this.ledger = new ClientLedger(scenario.skewMs);
    this.latencyScale = scenario.latencyScale ?? 1;
    this.config = loadConfig({
      TABLE_NAME: 'sim',
      LOCAL_STACK: 'true',
      LEASE_INDEX_SHARDS: String(scenario.indexShards ?? 8),
      FEATURE_GATES: scenario.allocator === 'bitmap-cas' ? 'MultiCIDRServiceAllocator=false' : '',
      ...(scenario.reconcilerGraceSeconds !== undefined
        ? { RECONCILE_EXPIRED_GRACE_SECONDS: String(scenario.reconcilerGraceSeconds) }
        : {}),
    });
    const mutations = [scenario.mutate, scenario.plant?.mutate].filter((m) => m !== undefined);
    const misreport = scenario.plant?.misreport;
    this.engine = new SimEngine({
      scheduler: this.scheduler,
      rng: this.rng.fork('storage'),
      requestTimeoutMs: this.config.requestTimeoutMs,
      faults: (call) => this.callFault(call.method, call.caller),
      ...(scenario.unlimited ? { unlimited: true } : {}),
      latencyScale: this.latencyScale,
      ...(mutations.length
        ? {
            mutate: (ops: readonly WriteOp[], caller: Caller) =>
              mutations.reduce<WriteOp[]>((acc, m) => m(acc, caller), [...ops]),
          }
        : {}),
      ...(misreport ? { misreport } : {}),
      quotas: scenario.quotas ?? AWS_DEFAULTS,
      ...(scenario.hideQuery ? { hideQuery: scenario.hideQuery } : {}),
      onCommit: (change) => this.onCommit(change.caller, change.after, change.before),
    });
  }

  private log(line: string): void {
    this.trace.push(`${(this.scheduler.now / 1000).toFixed(3).padStart(9)}s ${line}`);
    if (this.trace.length > this.traceLimit * 1.5) this.trace.splice(0, this.trace.length - this.traceLimit);
  }

  private count(into: Record<string, number>, key: string): void {
    into[key] = (into[key] ?? 0) + 1;
  }

  private onCommit(caller: Caller, after: Item | undefined, before: Item | undefined): void {
    const item = after ?? before;
    if (!item) return;
    this.free.commit(before, after, EPOCH_MS + this.scheduler.now);
    if (item.entity === 'lease')
      this.leaseChanged.set(`${item.pool as string}/${item.address as string}`, EPOCH_MS + this.scheduler.now);
    if (item.entity === 'claim' && after) {
      const addresses = (after.addresses as { address: string }[] | undefined)?.map((a) => a.address) ?? [];
      const history = this.committedClaims.get(after.name as string) ?? [];
      if (before && before.uid !== after.uid) {
        // A put over another incarnation: legitimate only when that one had expired (by the writer's skewed clock).
        const expiresAt = before.expiresAt as number | undefined;
        if (expiresAt !== undefined && expiresAt <= EPOCH_MS + this.scheduler.now + this.scenario.skewMs)
          this.endedClaims.add(before.uid as string);
      }
      if (before?.uid !== after.uid) {
        history.push({ uid: after.uid as string, addresses, atMs: this.scheduler.now });
        this.onClaimOfGoneOwner(itemToClaim(after));
      }
      this.committedClaims.set(after.name as string, history);
      this.log(`${caller.id} commit claim ${after.name as string} ${addresses.join(',')} uid=${after.uid as string}`);
    } else if (item.entity === 'claim') {
      this.endedClaims.add(before!.uid as string);
      this.log(`${caller.id} delete claim ${before!.name as string} uid=${before!.uid as string}`);
    } else if (item.entity === 'lease') {
      this.log(`${caller.id} ${after ? 'put' : 'delete'} lease ${item.address as string} -> ${item.claim as string}`);
    } else if (item.entity === 'pool') {
      this.log(`${caller.id} ${after ? 'put' : 'delete'} pool ${item.name as string}`);
      // From this commit on the pool and its ranges are gone (whether or not the DELETE is answered): the pool item's
      // Terminating mark (the deletion's first phase), or its removal where no mark came first.
      const gone = after
        ? after.state === 'Terminating' && before?.state !== 'Terminating'
        : before?.state !== 'Terminating';
      if (gone && item.name === POOL_B)
        this.deletedPools.push({
          pool: POOL_B,
          cidr: poolBCidr(this.poolBIncarnation),
          atMs: EPOCH_MS + this.scheduler.now,
        });
    } else if (item.entity === 'range') {
      this.log(
        `${caller.id} ${after ? `range ${after.name as string} ${after.state as string}` : `delete range ${before!.name as string}`}`,
      );
    }
  }

  /** A claim committed for an owner being released (or released): it too must be gone within the allowance. */
  private onClaimOfGoneOwner(claim: Claim): void {
    const gone = this.releasing.get(claim.spec.owner.uid);
    if (!gone) return;
    if (gone.pool !== claim.pool) return;
    const late = { claimUid: claim.uid, atMs: this.scheduler.now };
    if (gone.answered) this.ownersGone.push(this.lateClaim(gone.pool, claim.spec.owner.uid, late));
    else gone.late.push(late);
  }

  /** The invariant's entry for a claim committed after its owner's release began: its allowance counts from its commit. */
  private lateClaim(
    pool: string,
    uid: string,
    late: { claimUid: string; atMs: number },
  ): { pool: string; uid: string; askedAtMs: number; claimUids: Set<string> } {
    return { pool, uid, askedAtMs: EPOCH_MS + late.atMs, claimUids: new Set([late.claimUid]) };
  }

  /** The fault of one storage call: storms hit everyone; timeouts and deaths hit API and reconciler writes. */
  private callFault(method: string, caller: Caller): CallFault | undefined {
    if (this.loadOver) return undefined;
    if (this.scheduler.now < this.stormUntil) {
      this.count(this.faultCounts, 'throttled-in-storm');
      return { kind: 'throttle' };
    }
    const write = method === 'write' || method === 'transact';
    if (!write) return undefined;
    const f = this.scenario.faults;
    if (caller.role === 'api' || caller.role === 'reconciler') {
      if (this.faultRng.chance(f.timeout)) {
        const committed = this.faultRng.chance(0.5);
        this.count(this.faultCounts, committed ? 'timeout-committed' : 'timeout-not-committed');
        this.log(`${caller.id} FAULT timeout (${committed ? 'committed' : 'not committed'})`);
        return { kind: 'timeout', committed };
      }
      const die = caller.role === 'api' ? f.die : f.reconcilerKill;
      if (this.faultRng.chance(die)) {
        this.count(this.faultCounts, `${caller.role}-died-after-commit`);
        this.log(`${caller.id} FAULT dies after this write`);
        return { kind: 'die' };
      }
    }
    return undefined;
  }

  private clockFor(skewMs: number) {
    return { nowMs: () => EPOCH_MS + this.scheduler.now + skewMs };
  }

  private newContainer(role: string, skewed = true): ApiContainer {
    this.containerCount += 1;
    const id = `${role}-${this.containerCount}`;
    const caller: Caller = { id, role, alive: true };
    const skew =
      this.scenario.skewMs && skewed ? this.rng.fork(`skew/${id}`).int(-this.scenario.skewMs, this.scenario.skewMs) : 0;
    const random = this.rng.fork(`random/${id}`);
    // Crossings of free-space thresholds stay in the pools' events: the simulated world has no EventBridge to print to.
    // Every wait of the container (the legacy allocator's back-off, a consumer change's) is in virtual time.
    const timer = { sleep: (ms: number) => this.scheduler.sleep(ms) };
    const container = buildContainer(this.config, {
      table: this.engine.tableFor(caller),
      clock: this.clockFor(skew),
      random,
      timer,
      strategy: PickStrategy.Hinted,
      announcer: { announce: async () => undefined },
    });
    let deps = container.deps;
    if (this.scenario.plant?.deps) deps = this.scenario.plant.deps(deps, role);
    return { caller, container, deps, http: httpOf(deps, id, this.config.localStack), busy: false };
  }

  /** Runs one request on an idle warm container, or a cold one, as Lambda does; 429 past the concurrency limit. */
  private async invoke(
    what: string,
    work: (http: Http) => Promise<Asked>,
    onAnswer?: (a: Asked) => void,
  ): Promise<Answer> {
    const there = this.workRng.lognormal(OUTSIDE.gateway.median, OUTSIDE.gateway.p99) * this.latencyScale;
    await this.scheduler.sleep(there / 2);
    const refuse = async (by: string): Promise<Answer> => {
      this.count(this.refused, by);
      await this.scheduler.sleep(there / 2);
      return { status: 429, error: `TooManyRequestsException (${by})` };
    };
    if (
      !this.takeToken(this.gateway, this.scenario.apiGateway?.rps ?? 10_000, this.scenario.apiGateway?.burst ?? 5_000)
    )
      return refuse('api-gateway');
    // The first idle container in creation order (a linear scan: the small scenarios' histories depend on the order).
    let target = this.api.find((c) => !c.busy && c.caller.alive);
    if (!target) {
      if (this.api.filter((c) => c.caller.alive).length >= this.scenario.maxContainers)
        return refuse('lambda-concurrency');
      const per10s = this.scenario.lambdaScalePer10s ?? 1000;
      const provisioned = this.api.length < (this.scenario.lambdaProvisioned ?? 0);
      if (!provisioned && !this.takeToken(this.scaling, per10s / 10, per10s)) return refuse('lambda-scaling');
      target = this.newContainer('api');
      this.api.push(target);
      target.busy = true;
      await this.scheduler.sleep(
        this.workRng.lognormal(OUTSIDE.coldStart.median, OUTSIDE.coldStart.p99) * this.latencyScale,
      );
    }
    const container = target;
    container.busy = true;
    const started = this.scheduler.now;
    let doneAt = started;
    const done = (async (): Promise<Answer> => {
      let answer: Asked;
      try {
        answer = await work(container.http);
      } catch (error) {
        // The handler answers every error with a problem document: a throw out of it is the function failing.
        answer = { status: 500, error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
      }
      // The container answered: it is free for the next request (a dead one never gets here).
      container.busy = false;
      doneAt = this.scheduler.now;
      onAnswer?.(answer);
      this.violations(checkStatus(answer.status, what, answer.error ?? ''));
      await this.scheduler.sleep(there / 2);
      return { ...answer, arrivedAt: started, doneAt };
    })();
    // The gateway's timeout as a timer, cancelled once the container answers: a sleep raced against `done` would be
    // held, with its closures, for the whole 30 s after nearly every answer (600,000 of them at 10,000 requests a
    // second). The same steps, at the same times, in the same order (Scheduler.timer).
    const answer = await new Promise<Answer>((resolve, reject) => {
      const timeout = this.scheduler.timer(OUTSIDE.gatewayTimeoutMs, () => resolve({ status: 'lost' }));
      done.then(
        (a) => {
          timeout.cancel();
          resolve(a);
        },
        (error: unknown) => {
          timeout.cancel();
          reject(error as Error);
        },
      );
    });
    if (answer.status === 'lost') {
      this.api.splice(this.api.indexOf(container), 1);
    } else this.latencies.push(this.scheduler.now - started);
    return answer;
  }

  /** A token of a bucket refilled at `rate` a second up to `cap` (full at first); false when it is empty. */
  private takeToken(bucket: { tokens: number; atMs: number }, rate: number, cap: number): boolean {
    const now = this.scheduler.now;
    if (bucket.atMs === 0 && bucket.tokens === 0) bucket.tokens = cap;
    bucket.tokens = Math.min(cap, bucket.tokens + ((now - bucket.atMs) * rate) / 1000);
    bucket.atMs = now;
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  private violations(found: readonly Violation[]): void {
    const [first] = this.scenario.tableInvariantsOnly
      ? found.filter((v) => !LEDGER_INVARIANTS.has(v.invariant))
      : found;
    if (!first) return;
    this.log(`VIOLATION ${first.invariant}: ${first.detail}`);
    this.scheduler.stop(new InvariantBroken(first));
  }

  /** The continuous checks, on the table's current items. */
  check(final = false): void {
    this.checks += 1;
    const s = snapshotOf([...this.engine.state.values()]);
    const now = EPOCH_MS + this.scheduler.now;
    const skew = this.scenario.skewMs;
    const allowance =
      this.scenario.reconcilePeriodMs + this.config.reconciler.expiredClaimGraceSeconds * 1000 + 10_000 + skew;
    this.violations([
      ...checkNoDoubleHold(s, now, skew),
      ...checkLeaseInRange(s, now, skew, this.deletedPools),
      ...checkClaimLeases(s, now, skew, this.deletedPools),
      ...(final || !this.loadOver ? checkReleasedInTime(s, now, allowance, this.ownersGone) : []),
      ...(final || !this.loadOver ? checkExpiredLeasesGone(s, now, allowance) : []),
      ...checkDeletedPools(s, now, allowance, this.deletedPools),
      ...checkSharedClaims(s, now, allowance, this.shared as readonly SharedClaim[]),
      ...this.ledger.check(s, now),
      ...(this.scenario.tree
        ? [
            ...checkPoolTree(s, now, skew),
            ...checkGrowth(s, [{ pool: POOL_GROW, parent: POOL, maxBlocks: this.scenario.tree.maxBlocks }]),
          ]
        : []),
    ]);
    if (this.scheduler.stoppedBy) return;
    const chunks = [...this.engine.state.values()].filter((item) => item.entity === 'chunk');
    this.violations(this.lag.check(s, chunks, this.leaseChanged, now, this.loadStartMs));
  }

  // ---------------------------------------------------------------------------------------------- actors

  private async client(index: number, endMs: number): Promise<void> {
    const rng = this.rng.fork(`client/${index}`);
    const pool = this.poolOf(index);
    const held: { name: string; ttl: boolean; renewAt: number }[] = [];
    let made = 0;
    let owner = `owner-${index}-0`;
    this.owners[index] = owner;
    let generation = 0;
    const renewEvery = this.scenario.ttlSeconds * 1000 * (this.scenario.renewAfter ?? 1 / 3);
    while (this.scheduler.now < endMs && !this.scheduler.stoppedBy) {
      await this.scheduler.sleep(rng.exponential(this.scenario.thinkMs));
      if (this.owners[index] !== owner) {
        // The owner was released behind this client's back: its claims are gone; carry on as a new owner.
        generation += 1;
        owner = `owner-${index}-${generation}`;
        this.owners[index] = owner;
        held.length = 0;
      }
      const now = this.scheduler.now;
      const due = held.find((h) => h.ttl && h.renewAt <= now);
      if (due) {
        const answer = await this.retrying(rng, `renew ${due.name}`, (http) =>
          http('POST', `/v1/pools/${pool}/claims/${due.name}/renew`).then(claimAsked(pool)),
        );
        if (answer.status === 200 && 'claim' in answer && answer.claim) {
          due.renewAt = this.scheduler.now + renewEvery;
          this.tell(answer.claim, answer, false);
        } else if (answer.status === 404) {
          held.splice(held.indexOf(due), 1);
          const arrived = EPOCH_MS + ('arrivedAt' in answer && answer.arrivedAt !== undefined ? answer.arrivedAt : now);
          this.violations(
            this.ledger.renewRefused(pool, due.name, arrived, 'error' in answer ? (answer.error ?? '') : ''),
          );
        }
        continue;
      }
      if (held.length && (held.length >= this.scenario.holdMax || rng.chance(this.scenario.releaseShare))) {
        const victim = held.splice(rng.int(0, held.length - 1), 1)[0]!;
        this.ledger.letGo(pool, victim.name, EPOCH_MS + this.scheduler.now);
        const answer = await this.retrying(rng, `release ${victim.name}`, (http) =>
          http('DELETE', `/v1/pools/${pool}/claims/${victim.name}`).then(asked),
        );
        if (answer.status === 204)
          this.violations(
            this.ledger.released(pool, victim.name, (p, a) => this.engine.state.get(`LEASE#${p}#${a}\u0000LEASE`)),
          );
        continue;
      }
      made += 1;
      const ttl = rng.chance(this.scenario.ttlShare);
      const generate = rng.chance(this.scenario.generateShare);
      const name = `c${index}-${made}`;
      const generateName = `g${index}-${made}`;
      const body = {
        ...(generate ? { generateName } : { name }),
        owner: { kind: 'Pod', name: `pod-${index}`, uid: owner },
        ...(this.scenario.ipv6 && rng.chance(0.2) && pool === POOL
          ? { ipFamilyPolicy: 'RequireDualStack' as const }
          : {}),
        ...(ttl ? { ttlSeconds: this.scenario.ttlSeconds } : {}),
      };
      const askedAt = this.scheduler.now;
      const answer = await this.retrying(
        rng,
        `create ${generate ? generateName : name}`,
        (http) => http('POST', `/v1/pools/${pool}/claims`, body).then(claimAsked(pool)),
        (a) => {
          if (!a.claim) return;
          // The incarnation this request should be answered with: the first it committed that is still held.
          const first = (this.committedClaims.get(a.claim.name) ?? []).find(
            (h) => h.atMs >= askedAt && !this.endedClaims.has(h.uid),
          );
          this.violations(checkRetryAnswer(a.claim, first));
        },
      );
      if ((answer.status === 201 || answer.status === 200) && 'claim' in answer && answer.claim) {
        this.allocations += answer.status === 201 ? 1 : 0;
        if (answer.status === 201) this.count(this.createdIn, pool);
        held.push({ name: answer.claim.name, ttl, renewAt: this.scheduler.now + renewEvery });
        this.tell(answer.claim, answer, answer.status === 201);
      } else if (
        answer.status === 409 &&
        'error' in answer &&
        answer.error &&
        'doneAt' in answer &&
        answer.doneAt !== undefined
      ) {
        const [, family, unit] = /No free (IPv4|IPv6) (address|block)/.exec(answer.error) ?? [];
        if (family)
          this.rangeFull({
            pool,
            family,
            unit: unit as RangeFullAnswer['unit'],
            fromMs: EPOCH_MS + answer.arrivedAt!,
            toMs: EPOCH_MS + answer.doneAt,
            what: `create ${generate ? generateName : name}`,
          });
      }
    }
  }

  /**
   * A RangeFull answer over its request's window: a violation once RANGE_FULL_EXACT_ENFORCED when an address (a block
   * pool's block) was free all along (counted until then); counted when no moment of it had the family full.
   */
  private rangeFull(answer: RangeFullAnswer): void {
    const found = checkRangeFull(this.free, answer);
    // The note says no position was free throughout: only true when checkRangeFull found none.
    const unmet = found.length ? undefined : rangeFullWithoutFullMoment(this.free, answer);
    if (unmet !== undefined) {
      if (!this.noFullMoment.length) this.log(`NOTE ${unmet}`);
      this.noFullMoment.push(unmet);
    }
    if (RANGE_FULL_EXACT_ENFORCED) return this.violations(found);
    const [first] = found;
    if (!first) return;
    if (!this.inexactFull.length) this.log(`NOTE ${first.invariant}: ${first.detail}`);
    this.inexactFull.push(first.detail);
  }

  /** The open loop: Poisson arrivals at the scenario's rate, each one allocation released after its hold. */
  private async arrivals(endMs: number): Promise<void> {
    const { perSecond, holdMs } = this.scenario.arrivals!;
    const rng = this.rng.fork('arrivals');
    const loop: OpenLoop = {
      arrived: 0,
      allocated: 0,
      refused: 0,
      rangeFull: 0,
      other: 0,
      windowMs: endMs - this.scheduler.now,
      bySecond: [],
    };
    const startMs = this.scheduler.now;
    this.openLoop = loop;
    while (!this.scheduler.stoppedBy) {
      await this.scheduler.sleep(rng.exponential(1000 / perSecond));
      if (this.scheduler.now >= endMs) break;
      loop.arrived += 1;
      const second = (loop.bySecond[Math.floor((this.scheduler.now - startMs) / 1000)] ??= {
        arrived: 0,
        allocated: 0,
        refused: 0,
        latencies: [],
      });
      second.arrived += 1;
      // Not kept: nothing waits for the arrivals (a failed one stops the process, as an unhandled rejection).
      void this.oneShot(loop.arrived, loop, Math.max(1, rng.exponential(holdMs)), second);
    }
  }

  /** One arrival: create a claim (retried as a client does), hold it, release it; then its name's history goes. */
  private async oneShot(
    n: number,
    loop: OpenLoop,
    holdMs: number,
    second: OpenLoop['bySecond'][number],
  ): Promise<void> {
    const name = `a${n}`;
    // The create attempts still running (a container may answer after the gateway gave up on it): the retry check
    // reads the name's commit history until the last of them has answered.
    let running = 0;
    let over = false;
    const forget = (): void => {
      if (!over || running > 0) return;
      for (const h of this.committedClaims.get(name) ?? []) this.endedClaims.delete(h.uid);
      this.committedClaims.delete(name);
    };
    await this.oneArrival(n, name, loop, holdMs, second, {
      started: () => (running += 1),
      answered: () => {
        running -= 1;
        forget();
      },
    });
    over = true;
    forget();
  }

  private async oneArrival(
    n: number,
    name: string,
    loop: OpenLoop,
    holdMs: number,
    second: OpenLoop['bySecond'][number],
    attempts: { started: () => void; answered: () => void },
  ): Promise<void> {
    const rng = this.workRng.fork(`arrival/${n}`);
    const arrived = this.scheduler.now;
    const body = { name, owner: { kind: 'Pod', name: `pod-a${n}`, uid: `owner-a${n}` } };
    const create = (http: Http) => {
      attempts.started();
      return http('POST', `/v1/pools/${POOL}/claims`, body).then(claimAsked(POOL));
    };
    const answer = await this.retrying(rng, `create ${name}`, create, (a) => {
      attempts.answered();
      if (!a.claim) return;
      const first = (this.committedClaims.get(a.claim.name) ?? []).find(
        (h) => h.atMs >= arrived && !this.endedClaims.has(h.uid),
      );
      this.violations(checkRetryAnswer(a.claim, first));
    });
    if ((answer.status === 201 || answer.status === 200) && 'claim' in answer && answer.claim) {
      loop.allocated += 1;
      second.allocated += 1;
      this.allocations += 1;
      second.latencies.push(this.scheduler.now - arrived);
      this.tell(answer.claim, answer, answer.status === 201);
      await this.scheduler.sleep(holdMs);
      this.ledger.letGo(POOL, name, EPOCH_MS + this.scheduler.now);
      const released = await this.retrying(rng, `release ${name}`, (http) =>
        http('DELETE', `/v1/pools/${POOL}/claims/${name}`).then(asked),
      );
      if (released.status === 204)
        this.violations(
          this.ledger.released(POOL, name, (p, a) => this.engine.state.get(`LEASE#${p}#${a}\u0000LEASE`)),
        );
      return;
    }
    if (answer.status === 429 || answer.status === 503 || answer.status === 'lost') {
      loop.refused += 1;
      second.refused += 1;
    } else if (answer.status === 409 && 'error' in answer && answer.error?.includes('No free')) loop.rangeFull += 1;
    else loop.other += 1;
  }

  /**
   * Records a claim answer in the ledger. A claim its client cannot count on (its owner's release or its pool's
   * deletion began, or it lies in an earlier incarnation of the second pool) is let go at once.
   */
  private tell(claim: AnsweredClaim, answer: { readonly arrivedAt?: number }, created: boolean): void {
    const now = EPOCH_MS + this.scheduler.now;
    this.violations(
      this.ledger.told({ claim, atMs: now, arrivedAtMs: EPOCH_MS + (answer.arrivedAt ?? this.scheduler.now), created }),
    );
    const stale =
      claim.pool === POOL_B &&
      (this.poolBDeleting ||
        claim.addresses.some((a) => !isHostOf(parseCidr(poolBCidr(this.poolBIncarnation)), parseAddress(a.address))));
    if (this.ownersLetGo.has(claim.owner) || stale) this.ledger.letGo(claim.pool, claim.name, now);
  }

  /**
   * A client's request with its retries: a 503 or 429 waits (exponential backoff with full jitter, 50 ms doubling to
   * 5 s) and asks again; a lost answer (the container died, the gateway timed out) asks again with the same request,
   * so a claim is asked for under the same name. Gives up after 8 attempts.
   */
  private async retrying(
    rng: Prng,
    what: string,
    work: (http: Http) => Promise<Asked>,
    onAnswer?: (a: Asked) => void,
  ): Promise<Answer> {
    let answer: Answer = { status: 'lost' };
    for (let attempt = 0; attempt < 8; attempt += 1) {
      answer = await this.invoke(what, work, onAnswer);
      const status = answer.status;
      this.count(this.answers, `${what.split(' ')[0]} ${status}`);
      this.log(
        `client ${what} -> ${status}${'claim' in answer && answer.claim ? ` ${answer.claim.addresses.map((a) => a.address).join(',')}` : ''}${'error' in answer && answer.error && status !== 503 ? ` (${answer.error})` : ''}`,
      );
      if (status !== 503 && status !== 429 && status !== 'lost') return answer;
      await this.scheduler.sleep(rng.unit() * Math.min(5000, 50 * 2 ** attempt));
    }
    return answer;
  }

  /**
   * The stream's event source mapping for one shard: records readable after a lag, invoked when a batch is full or
   * its window has passed, delivered by the mapping's rules as deployed (aws-emulation/stream-delivery.ts: retry from
   * the lowest failed record, bisection of a failed invocation, at most 10 retries, then the failure destination,
   * which nothing replays: the records are lost to the projections).
   */
  private async streamPoller(shard: number): Promise<void> {
    const rng = this.rng.fork(shard === 0 ? 'stream' : `stream/${shard}`);
    let container = this.newContainer('mirror');
    let cursor = 0;
    const { records: log, drop } = this.shardLog(shard);
    const f = this.scenario.faults;
    const rules = this.scenario.streamMapping ?? DEPLOYED_MAPPING;
    let idle = true;
    for (;;) {
      if (this.scheduler.stoppedBy) return;
      // Lambda polls an idle shard about four times a second, and again as soon as an invocation returns.
      if (idle) await this.scheduler.sleep(250);
      const lag = rng.lognormal(100, 800) * this.latencyScale;
      const ready = log()
        .slice(cursor, cursor + rules.batchSize)
        .filter((r) => r.atMs <= this.scheduler.now - lag);
      idle = !batchDue(ready.length, ready.length ? this.scheduler.now - lag - ready[0]!.atMs : 0, rules);
      if (idle) continue;
      const loses = this.scenario.plant?.loses;
      const delivered = loses
        ? ready.filter((r) => {
            if (!loses(this.plantRng)) return true;
            this.log(`PLANT stream loses record ${r.seq} (${r.eventName} ${r.key.PK})`);
            return false;
          })
        : ready;
      if (delivered.length === 0) {
        cursor += ready.length;
        continue;
      }
      const records = delivered.map(
        (r): DynamoDBRecord => ({
          eventName: r.eventName,
          dynamodb: {
            SequenceNumber: String(r.seq).padStart(21, '0'),
            Keys: { PK: { S: r.key.PK }, SK: { S: r.key.SK } },
          },
          ...(r.ttl ? { userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' } } : {}),
        }),
      );
      await deliverBatch(records, rules, {
        invoke: async (batch) => {
          this.mirrorBatches += 1;
          if (!this.loadOver && rng.chance(f.streamFailure)) {
            // The invocation fails whole (the container crashed): the mapping bisects the batch and retries.
            this.count(this.faultCounts, 'stream-batch-failed');
            this.log(`mirror FAULT batch of ${batch.length} failed whole`);
            container = this.newContainer('mirror');
            throw new Error('the function crashed');
          }
          const response = await createMirrorHandler(
            () => container.container.mirror,
            () => undefined,
          )({ Records: batch });
          if (response.batchItemFailures.length)
            this.log(
              `mirror batch of ${batch.length}: ${response.batchItemFailures.length} failed, retry from the lowest`,
            );
          return response;
        },
        pause: () => this.scheduler.sleep(rng.int(100, 1000)),
        stopped: () => this.scheduler.stoppedBy !== undefined,
        onGiveUp: (given) => {
          this.count(this.faultCounts, 'stream-records-given-up');
          this.log(
            `mirror gives up ${given.records.length} record(s) from ${given.records[0]!.dynamodb!.SequenceNumber!} after ${given.attempts} attempts (${given.outcome.message})`,
          );
        },
      });
      if (!this.loadOver && rng.chance(f.redeliver)) {
        this.count(this.faultCounts, 'stream-batch-redelivered');
        this.log(`mirror FAULT batch of ${ready.length} will be delivered again`);
        continue;
      }
      cursor += ready.length;
      // Records behind the cursor are never read again (a redelivery starts at the cursor): drop them now and then.
      if (cursor >= STREAM_KEPT_READ && cursor * 2 >= log().length) {
        drop(cursor);
        cursor = 0;
      }
    }
  }

  /**
   * A shard's records (by partition-key hash), in commit order; one shard: the whole stream. `drop(n)` lets the
   * shard's reader drop its first n records (done with).
   */
  private shardLog(shard: number): { records: () => readonly StreamChange[]; drop: (count: number) => void } {
    const shards = this.scenario.streamShards ?? 1;
    if (shards === 1) {
      return {
        records: () => this.engine.stream,
        drop: (count) => this.engine.dropStream(count),
      };
    }
    return {
      records: () => {
        const stream = this.engine.stream;
        for (const r of stream) {
          let h = 0;
          for (let i = 0; i < r.key.PK.length; i += 1) h = (Math.imul(h, 31) + r.key.PK.charCodeAt(i)) >>> 0;
          (this.shardLogs[h % shards] ??= []).push(r);
        }
        // Dispatched to the shards' logs: the engine's log has nothing left to give.
        this.engine.dropStream(stream.length);
        return (this.shardLogs[shard] ??= []);
      },
      drop: (count) => {
        (this.shardLogs[shard] ??= []).splice(0, count);
      },
    };
  }

  /** The schedule: one run per period, in a warm container (a new one after a kill); some runs overlapped. */
  private async reconcilerSchedule(endMs: number): Promise<void> {
    const rng = this.rng.fork('reconciler');
    let container = this.newContainer('reconciler');
    while (this.scheduler.now < endMs && !this.scheduler.stoppedBy) {
      await this.scheduler.sleep(this.scenario.reconcilePeriodMs);
      if (!container.caller.alive) container = this.newContainer('reconciler');
      const runs = [this.reconcileOnce(container)];
      if (!this.loadOver && rng.chance(this.scenario.faults.reconcilerOverlap)) {
        this.count(this.faultCounts, 'reconciler-overlap');
        this.log('reconciler FAULT a second run overlaps');
        await this.scheduler.sleep(rng.int(0, 2000));
        runs.push(this.reconcileOnce(this.newContainer('reconciler')));
      }
      // A killed run never finishes: the schedule does not wait for it.
      void Promise.all(runs);
    }
  }

  private async reconcileOnce(container: ApiContainer): Promise<void> {
    this.reconcilerRuns += 1;
    this.log(`${container.caller.id} reconcile run`);
    try {
      // The function's timeout: 60 s (serverless.yml), so a run stops starting work 5 s before it.
      // A retried repair waits in virtual time, as the legacy allocator's backoff does.
      await runReconciler(container.deps, this.config.reconciler, 60_000, {
        log: () => undefined,
        pause: (ms) => this.scheduler.sleep(ms),
      });
    } catch (error) {
      this.log(`${container.caller.id} reconcile run failed: ${(error as Error).message}`);
    }
  }

  /** The operator: adds a range and deletes another while claims are in flight; a second DELETE later. */
  private async operator(endMs: number): Promise<void> {
    const rate = this.scenario.faults.rangeChurnPerMinute;
    if (rate <= 0) return;
    const rng = this.rng.fork('operator');
    let next = 0;
    const admin = this.newContainer('admin');
    const mine: string[] = [];
    const cidrOf = new Map<string, string>();
    while (!this.scheduler.stoppedBy) {
      await this.scheduler.sleep(rng.exponential(60_000 / rate));
      if (this.scheduler.now >= endMs) return;
      next += 1;
      const cidr = `10.${100 + (next % 100)}.${Math.floor(next / 100)}.0/26`;
      const made = await admin.http('POST', `/v1/pools/${POOL}/ranges`, { cidr });
      if (made.status < 300) {
        const range = made.body as RangeDocument;
        mine.push(range.name);
        cidrOf.set(range.name, cidr);
        this.count(this.faultCounts, 'range-added');
        this.log(`operator created range ${range.name}`);
      } else this.log(`operator create range failed: ${made.status} ${made.error}`);
      if (mine.length < 2) continue;
      const victim = mine.splice(rng.int(0, mine.length - 2), 1)[0]!;
      const path = `/v1/pools/${POOL}/ranges/${victim}`;
      const first = await admin.http('DELETE', path);
      if (first.status >= 300) {
        this.violations(checkStatus(first.status, `delete range ${victim}`, first.error ?? ''));
        continue;
      }
      this.ledger.rangeDeleted(POOL, cidrOf.get(victim)!, EPOCH_MS + this.scheduler.now);
      this.count(this.faultCounts, 'range-deleted-under-load');
      this.log(`operator DELETE range ${victim} -> ${first.status}`);
      await this.scheduler.sleep(rng.int(2500, 6000));
      const second = await admin.http('DELETE', path);
      this.log(`operator DELETE range ${victim} again -> ${second.status}`);
      if (second.status >= 300)
        this.violations(checkStatus(second.status, `delete range ${victim}`, second.error ?? ''));
    }
  }

  /** Owners released while their client is claiming (DELETE /v1/pools/{pool}/owners/{uid}). */
  private async ownerReaper(endMs: number): Promise<void> {
    const rate = this.scenario.faults.ownerReleasesPerMinute;
    if (rate <= 0) return;
    const rng = this.rng.fork('reaper');
    while (!this.scheduler.stoppedBy) {
      await this.scheduler.sleep(rng.exponential(60_000 / rate));
      if (this.scheduler.now >= endMs) return;
      const index = rng.int(0, this.scenario.clients - 1);
      const uid = this.owners[index];
      if (!uid) continue;
      const pool = this.poolOf(index);
      this.count(this.faultCounts, 'owner-released-while-claiming');
      const askedAtMs = EPOCH_MS + this.scheduler.now;
      // The claims that exist as the release begins must be gone within the allowance, however shortly before it
      // they committed (the owner index may not list them yet: the reconciler looks again), and so must those that
      // commit after it began (the client's creates in flight), each within the allowance from its commit.
      const claims = snapshotOf([...this.engine.state.values()]).claims.filter(
        (c) => c.pool === pool && c.spec.owner.uid === uid,
      );
      const claimUids = new Set(claims.map((c) => c.uid));
      const gone = { pool, answered: false, late: [] as { claimUid: string; atMs: number }[] };
      this.releasing.set(uid, gone);
      this.ownersLetGo.add(uid);
      this.ledger.letGoOwner(pool, uid, EPOCH_MS + this.scheduler.now);
      this.owners[index] = `${uid}-gone`;
      this.log(`reaper releases owner ${uid} (claims ${claims.map((c) => c.name).join(', ') || 'none'})`);
      const answer = await this.retrying(rng, `release-owner ${uid}`, (http) =>
        http('DELETE', `/v1/pools/${pool}/owners/${segment(uid)}`).then(asked),
      );
      // Only a release that was answered 200 promises anything (a client that gave up after 503s got no promise).
      if (answer.status !== 200) {
        this.releasing.delete(uid);
        continue;
      }
      gone.answered = true;
      this.ownersGone.push(
        { pool, uid, askedAtMs, claimUids },
        ...gone.late.map((late) => this.lateClaim(pool, uid, late)),
      );
    }
  }

  /**
   * Shared claims: every few seconds a claim is made for 1-3 consumers, which join, stay a while, and
   * leave one by one, each removed (DELETE .../consumers/{uid}) or reported gone as an owner (DELETE .../owners/{uid});
   * the last one's leaving releases the claim. In the first pool, which is never deleted.
   */
  private async consumerActor(endMs: number): Promise<void> {
    const rng = this.rng.fork('consumers');
    for (let n = 1; !this.scheduler.stoppedBy; n += 1) {
      await this.scheduler.sleep(rng.exponential(4000));
      if (this.scheduler.now >= endMs) return;
      const name = `shared-${n}`;
      const made = await this.retrying(rng, `claim ${name}`, (http) =>
        http('POST', `/v1/pools/${POOL}/claims`, { name, owner: { kind: 'Service', name, uid: `sharer-${n}` } }).then(
          claimAsked(POOL),
        ),
      );
      if (!('claim' in made) || !made.claim) continue;
      const track: (typeof this.shared)[number] = { pool: POOL, name, claimUid: made.claim.uid, present: new Set() };
      this.shared.push(track);
      const uids = Array.from({ length: rng.int(1, 3) }, (_, k) => `consumer-${n}-${k}`);
      let unsure = false;
      for (const uid of uids) {
        const added = await this.retrying(rng, `consume ${name} ${uid}`, (http) =>
          http('POST', `/v1/pools/${POOL}/claims/${name}/consumers`, { kind: 'Pod', name: uid, uid }).then(asked),
        );
        if (added.status === 201 || added.status === 200) track.present.add(uid);
        else unsure = true;
      }
      await this.scheduler.sleep(rng.exponential(5000));
      for (const [k, uid] of uids.entries()) {
        // Consumers leave one by one, a while apart (so the checks see a claim between two leavings).
        if (k > 0) await this.scheduler.sleep(rng.exponential(1500));
        // From the moment its removal is asked, a consumer is no longer surely there.
        track.present.delete(uid);
        const left =
          rng.unit() < 0.5
            ? await this.retrying(rng, `release-owner ${uid}`, (http) =>
                http('DELETE', `/v1/pools/${POOL}/owners/${segment(uid)}`).then(asked),
              )
            : await this.retrying(rng, `unconsume ${name} ${uid}`, (http) =>
                http('DELETE', `/v1/pools/${POOL}/claims/${name}/consumers/${segment(uid)}`).then(asked),
              );
        if (left.status !== 200) unsure = true;
      }
      if (!unsure) track.allLeftAtMs = EPOCH_MS + this.scheduler.now;
    }
  }

  /** The pool a client claims in: every fourth client uses the second pool when the scenario deletes it. */
  private poolOf(index: number): string {
    if (this.scenario.tree && index % 4 === 1) return POOL_CHILD;
    if (this.scenario.tree && index % 4 === 2) return POOL_GROW;
    return this.scenario.faults.poolDeletesPerMinute > 0 && index % 4 === 3 ? POOL_B : POOL;
  }

  /**
   * The operator deletes the second pool while its clients claim: lists and releases its claims, then DELETE, and
   * again while the answer is 409 PoolNotEmpty (claims committed meanwhile); then creates it again 5-15 s later with
   * a range of its own. From the commit of the pool item's delete, none of its claims or leases may outlive the
   * reconciler's allowance (checkDeletedPools).
   */
  private async poolOperator(endMs: number): Promise<void> {
    const rate = this.scenario.faults.poolDeletesPerMinute;
    if (rate <= 0) return;
    const rng = this.rng.fork('pool-operator');
    const admin = this.newContainer('admin');
    // A request of the operator's: its reply, checked (no 5xx but 503); `ok` for a 2xx.
    const attempt = async (
      what: string,
      method: 'GET' | 'POST' | 'DELETE',
      path: string,
      body?: unknown,
    ): Promise<Reply & { ok: boolean }> => {
      const reply = await admin.http(method, path, body);
      if (reply.status >= 300) this.violations(checkStatus(reply.status, what, reply.error ?? ''));
      return { ...reply, ok: reply.status < 300 };
    };
    while (!this.scheduler.stoppedBy) {
      await this.scheduler.sleep(rng.exponential(60_000 / rate));
      if (this.scheduler.now >= endMs) return;
      this.log(`pool-operator deletes pool ${POOL_B} (${poolBCidr(this.poolBIncarnation)})`);
      this.poolBDeleting = true;
      this.ledger.letGoPool(POOL_B, EPOCH_MS + this.scheduler.now);
      let deleted = false;
      for (let round = 1; round <= 20 && !deleted && !this.scheduler.stoppedBy; round += 1) {
        // Release what the listing shows (eventually consistent: claims committed just now may be missing).
        let cursor: string | undefined;
        let released = 0;
        do {
          const query = `limit=100${cursor !== undefined ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
          const listed = await attempt(`list claims of ${POOL_B}`, 'GET', `/v1/pools/${POOL_B}/claims?${query}`);
          if (!listed.ok) break;
          const page = listed.body as ClaimPage;
          for (const claim of page.items)
            if ((await attempt(`release ${claim.name}`, 'DELETE', `/v1/pools/${POOL_B}/claims/${claim.name}`)).ok)
              released += 1;
          cursor = page.nextCursor;
        } while (cursor);
        const answer = await attempt(`delete pool ${POOL_B}`, 'DELETE', `/v1/pools/${POOL_B}`);
        this.log(
          `pool-operator round ${round}: released ${released}, DELETE pool ${POOL_B} -> ${answer.status}${answer.ok ? '' : ` ${answer.error}`}`,
        );
        // A 404: an earlier attempt committed and its answer was lost (a storm throttled what followed the commit).
        if (answer.ok || answer.status === 404) deleted = true;
        else if (answer.status === 409) this.count(this.faultCounts, 'pool-delete-409');
        if (deleted) break;
        await this.scheduler.sleep(rng.int(50, 500));
      }
      if (!deleted) {
        this.count(this.faultCounts, 'pool-delete-gave-up');
        this.poolBDeleting = false;
        continue;
      }
      this.count(this.faultCounts, 'pool-deleted-under-load');
      await this.scheduler.sleep(rng.int(5000, 15_000));
      this.poolBIncarnation += 1;
      for (let tries = 0; tries < 10; tries += 1) {
        // A 409 is an earlier attempt's commit whose answer was lost: carry on.
        const pool = await attempt(`create pool ${POOL_B}`, 'POST', '/v1/pools', { name: POOL_B });
        const made =
          pool.ok || pool.status === 409
            ? await attempt(`create pool ${POOL_B}`, 'POST', `/v1/pools/${POOL_B}/ranges`, {
                cidr: poolBCidr(this.poolBIncarnation),
              })
            : pool;
        const ok = made.ok || made.status === 409;
        this.log(
          `pool-operator creates pool ${POOL_B} again (${poolBCidr(this.poolBIncarnation)}) -> ${ok ? 201 : made.status}`,
        );
        if (ok) {
          this.poolBDeleting = false;
          break;
        }
        await this.scheduler.sleep(rng.int(500, 2000));
      }
      this.count(this.faultCounts, 'pool-recreated');
    }
  }

  /**
   * The tree operator (Scenario.tree.parentDeletes rounds over the load): makes a child pool's range from the one
   * block of POOL_PARENT and deletes POOL_PARENT at once, while its listings may still lag behind the block's claim
   * (the index lag of sim-table.ts). The deletion must refuse or wait while the block is the child's range: one that
   * freed it would hand the block out again once the parent is made again, which the round then does (a claim of the
   * parent made again would be the block's second holder). Then it takes the tree down and makes the parent again.
   */
  private async treeOperator(endMs: number): Promise<void> {
    const rounds = this.scenario.tree?.parentDeletes ?? 0;
    if (rounds <= 0) return;
    const rng = this.rng.fork('tree-operator');
    const admin = this.newContainer('admin');
    // A request, again while the answer is 429 or 5xx (a storm); a 5xx but 503 is a violation.
    const send = async (method: 'POST' | 'DELETE', path: string, body?: unknown): Promise<Reply> => {
      let reply = await admin.http(method, path, body);
      for (let tries = 1; tries < 10 && (reply.status === 429 || reply.status >= 500); tries += 1) {
        this.violations(checkStatus(reply.status, `${method} ${path}`, reply.error ?? ''));
        await this.scheduler.sleep(rng.int(200, 1000));
        reply = await admin.http(method, path, body);
      }
      this.violations(checkStatus(reply.status, `${method} ${path}`, reply.error ?? ''));
      return reply;
    };
    // Not the owner a growth gives its blocks (grown-blocks.ts): the child pool's deletion must not release the block.
    const claimBody = (name: string, pool: string) => ({
      name,
      owner: { kind: 'Pool', name: pool, uid: `tree-operator-${pool}` },
      ipFamilies: ['IPv4'],
    });
    for (let k = 1; k <= rounds && !this.scheduler.stoppedBy; k += 1) {
      await this.scheduler.sleep(rng.exponential(this.scenario.durationMs / rounds));
      if (this.scheduler.now >= endMs) return;
      const child = `sim-nested-${k}`;
      await send('POST', '/v1/pools', { name: child });
      const made = await send('POST', `/v1/pools/${POOL_PARENT}/claims`, claimBody(`block-${k}`, child));
      const block = made.status === 201 ? (made.body as ClaimDocument).addresses[0]?.prefix : undefined;
      if (block) {
        const source = { pool: POOL_PARENT, claim: `block-${k}` };
        const range = await send('POST', `/v1/pools/${child}/ranges`, { cidr: block, source });
        const deleted = await send('DELETE', `/v1/pools/${POOL_PARENT}`);
        this.log(
          `tree-operator round ${k}: ${child} made from ${POOL_PARENT}/block-${k} (${block}) -> ${range.status}; DELETE pool ${POOL_PARENT} -> ${deleted.status}`,
        );
        this.count(this.faultCounts, `parent-delete-${deleted.status}`);
        if (deleted.status === 204) {
          await this.makeParent(send);
          const again = await send('POST', `/v1/pools/${POOL_PARENT}/claims`, claimBody(`again-${k}`, POOL_PARENT));
          this.log(`tree-operator round ${k}: ${POOL_PARENT} made again; a claim of its one block -> ${again.status}`);
          this.check();
        }
      }
      await this.untilGone(child, send, rng);
      for (const name of [`again-${k}`, `block-${k}`]) await send('DELETE', `/v1/pools/${POOL_PARENT}/claims/${name}`);
      await this.untilGone(POOL_PARENT, send, rng);
      await this.makeParent(send);
    }
  }

  /** DELETE a pool again while it answers 409 (claims listed) or 202 (Terminating), up to 30 times. */
  private async untilGone(
    pool: string,
    send: (method: 'DELETE', path: string) => Promise<Reply>,
    rng: Prng,
  ): Promise<void> {
    for (let tries = 0; tries < 30 && !this.scheduler.stoppedBy; tries += 1) {
      const answer = await send('DELETE', `/v1/pools/${pool}`);
      if (answer.status === 204 || answer.status === 404) return;
      await this.scheduler.sleep(rng.int(50, 300));
    }
    this.count(this.faultCounts, 'tree-delete-gave-up');
  }

  /** The tree operator's parent: a block pool of /26 blocks with one /26 range (a 409 is an earlier attempt's commit). */
  private async makeParent(send: (method: 'POST', path: string, body: unknown) => Promise<Reply>): Promise<void> {
    for (let tries = 0; tries < 10 && !this.scheduler.stoppedBy; tries += 1) {
      await send('POST', '/v1/pools', { name: POOL_PARENT, openToChildPools: true, blockPrefixLength: { IPv4: 26 } });
      const range = await send('POST', `/v1/pools/${POOL_PARENT}/ranges`, { cidr: PARENT_CIDR });
      if (range.status === 201 || range.status === 409) return;
      await this.scheduler.sleep(500);
    }
  }

  private async storms(endMs: number): Promise<void> {
    const rate = this.scenario.faults.stormsPerMinute;
    if (rate <= 0) return;
    const rng = this.rng.fork('storms');
    while (!this.scheduler.stoppedBy) {
      await this.scheduler.sleep(rng.exponential(60_000 / rate));
      if (this.scheduler.now >= endMs) return;
      const length = rng.int(1000, 5000);
      this.stormUntil = this.scheduler.now + length;
      this.count(this.faultCounts, 'throttling-storm');
      this.log(`FAULT throttling storm for ${length} ms`);
    }
  }

  private async checker(): Promise<void> {
    while (!this.scheduler.stoppedBy) {
      await this.scheduler.sleep(this.scenario.checkEveryMs);
      this.check();
    }
  }

  // ---------------------------------------------------------------------------------------------- the run

  /** Creates the pool, its ranges and the prefill, outside the measured load. */
  private async setup(): Promise<void> {
    const admin = this.newContainer('setup', false);
    // The setup runs outside the faults: every request must succeed.
    const send = async (path: string, body: unknown): Promise<void> => {
      const reply = await admin.http('POST', path, body);
      if (reply.status >= 300) throw new Error(`setup: POST ${path} answered ${reply.status}: ${reply.error}`);
    };
    await send('/v1/pools', {
      name: POOL,
      ...(this.scenario.blocks ? { blockPrefixLength: this.scenario.blocks } : {}),
      // The pool tree's child and growing pools use its blocks: a parent without access consents explicitly.
      ...(this.scenario.tree ? { openToChildPools: true } : {}),
    });
    for (const [i, cidr] of this.scenario.cidrs.entries())
      await send(`/v1/pools/${POOL}/ranges`, { cidr, legacy: this.scenario.legacy && i === 0 });
    if (this.scenario.ipv6) await send(`/v1/pools/${POOL}/ranges`, { cidr: this.scenario.ipv6 });
    if (this.scenario.faults.poolDeletesPerMinute > 0) {
      await send('/v1/pools', { name: POOL_B });
      await send(`/v1/pools/${POOL_B}/ranges`, { cidr: poolBCidr(1) });
    }
    if (this.scenario.tree) await this.plantTree(admin.http, send);
    if (this.scenario.tree?.parentDeletes) {
      await send('/v1/pools', { name: POOL_PARENT, blockPrefixLength: { IPv4: 26 } });
      await send(`/v1/pools/${POOL_PARENT}/ranges`, { cidr: PARENT_CIDR });
    }
    const fill = Math.floor(this.scenario.prefill * this.hostCount(this.scenario.cidrs[0]!));
    for (let i = 0; i < fill; i += 1)
      await send(`/v1/pools/${POOL}/claims`, { name: `pre-${i}`, owner: { kind: 'Pod', name: 'pre', uid: 'pre' } });
  }

  /** The pool tree (Scenario.tree): a child pool made from a block claim of POOL, and a pool growing from POOL. */
  private async plantTree(http: Http, send: (path: string, body: unknown) => Promise<void>): Promise<void> {
    const owner = { kind: 'Pool', name: POOL_CHILD, uid: `pool-${POOL_CHILD}` };
    const made = await http('POST', `/v1/pools/${POOL}/claims`, { name: CHILD_SOURCE, owner, ipFamilies: ['IPv4'] });
    if (made.status !== 201) throw new Error(`setup: the child pool's block answered ${made.status}: ${made.error}`);
    const block = (made.body as ClaimDocument).addresses[0]!.prefix!;
    await send('/v1/pools', { name: POOL_CHILD });
    await send(`/v1/pools/${POOL_CHILD}/ranges`, { cidr: block, source: { pool: POOL, claim: CHILD_SOURCE } });
    const { belowFree, maxBlocks } = this.scenario.tree!;
    await send('/v1/pools', { name: POOL_GROW, grow: { pool: POOL, belowFree, maxBlocks } });
  }

  private hostCount(cidr: string): number {
    const c = parseCidr(cidr);
    return c.family === 'IPv4' ? Math.max(0, 2 ** (32 - c.prefix) - 2) : 2 ** Math.min(20, 128 - c.prefix) - 1;
  }

  async run(): Promise<Outcome> {
    const s = this.scenario;
    const setupDone = this.setup();
    await this.scheduler.runUntil(120_000);
    await setupDone;
    const start = this.scheduler.now;
    const end = start + s.durationMs;
    this.loadStartMs = EPOCH_MS + start;
    this.log(`load starts: ${s.clients} clients, up to ${s.maxContainers} containers`);
    if (s.arrivals) void this.arrivals(end);
    else for (let i = 0; i < s.clients; i += 1) void this.client(i, end);
    for (let shard = 0; shard < (s.streamShards ?? 1); shard += 1) void this.streamPoller(shard);
    void this.reconcilerSchedule(end + 3 * s.reconcilePeriodMs + 120_000);
    void this.operator(end);
    void this.ownerReaper(end);
    void this.consumerActor(end);
    void this.poolOperator(end);
    void this.treeOperator(end);
    void this.storms(end);
    void this.checker();
    await this.scheduler.runUntil(end);
    // Quiescence: clients finish what they were doing, faults stop, the stream drains, the reconciler runs past
    // its graces, and the index settles.
    this.loadOver = true;
    this.stormUntil = -1;
    const quiet = end + 2 * s.reconcilePeriodMs + this.config.reconciler.orphanLeaseGraceSeconds * 1000 + 60_000;
    await this.scheduler.runUntil(quiet);
    if (!this.scheduler.stoppedBy) await this.finalChecks();
    const stopped = this.scheduler.stoppedBy;
    const violation = stopped instanceof InvariantBroken ? stopped.violation : undefined;
    if (stopped && !violation) throw stopped;
    return {
      seed: this.seed,
      scenario: s.name,
      virtualMs: this.scheduler.now - start,
      steps: this.scheduler.steps,
      answers: this.answers,
      allocations: this.allocations,
      latencies: this.latencies,
      spend: this.engine.spend,
      faults: this.faultCounts,
      reconcilerRuns: this.reconcilerRuns,
      streamRecords: this.engine.streamRecords,
      mirrorBatches: this.mirrorBatches,
      checks: this.checks,
      told: this.ledger.answers,
      ...(this.openLoop ? { openLoop: this.openLoop } : {}),
      refused: this.refused,
      throttledBy: [...this.engine.throttledBy.entries()]
        .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1))
        .slice(0, 5),
      maxProjectionLagMs: this.lag.maxLagMs,
      ...(s.tree ? { tree: this.treeSummary(s.tree.maxBlocks) } : {}),
      ...(violation ? { violation } : {}),
      trace: violation ? this.traceOf(violation) : [],
      notes: [
        ...this.notes,
        ...(this.inexactFull.length
          ? [
              `${this.inexactFull.length} RangeFull answer(s) while an address of the family was free throughout the request (not enforced until issue 20); first: ${this.inexactFull[0]!}`,
            ]
          : []),
        ...(this.noFullMoment.length
          ? [
              `${this.noFullMoment.length} RangeFull answer(s) with no moment of the request when the family was full (the allocator reads addresses one after another, not one snapshot; no address was free throughout); first: ${this.noFullMoment[0]!}`,
            ]
          : []),
      ],
    };
  }

  /** The pool tree at the end of the run: the child's range and source, the growing pool's ranges, the claims made. */
  private treeSummary(maxBlocks: number): string {
    const { ranges } = snapshotOf([...this.engine.state.values()]);
    const child = ranges.find((r) => r.pool === POOL_CHILD);
    const grown = ranges.filter((r) => r.pool === POOL_GROW && r.source?.pool === POOL);
    return `${POOL_CHILD} made from ${POOL}/${CHILD_SOURCE} (${child?.cidr ?? 'gone'}), ${this.createdIn[POOL_CHILD] ?? 0} claims created in it; ${POOL_GROW} grew ${grown.length} of at most ${maxBlocks} IPv4 blocks from ${POOL} (${grown.map((r) => r.cidr).join(', ')}), ${this.createdIn[POOL_GROW] ?? 0} claims created in it`;
  }

  /** Where a long run is: virtual seconds since load start, arrivals and allocations so far (for progress lines). */
  progress(): string {
    const l = this.openLoop;
    if (!l) return `${(this.scheduler.now / 1000).toFixed(1)} s virtual`;
    // Seconds whose arrivals are all answered or refused (8 attempts with their backoff take well under 15 s here: no faults in the open loop): their rate and latencies.
    const done = l.bySecond.slice(0, Math.max(0, l.bySecond.length - 15));
    const latencies = done.flatMap((x) => x.latencies).sort((a, b) => a - b);
    const at = (p: number) => (latencies.length ? percentile(latencies, p).toFixed(1) : '-');
    const settled = done.length
      ? `; arrival seconds 0-${done.length}: ${done.map((x) => x.allocated).join(' ')} allocated, ${done.reduce((n, x) => n + x.refused, 0)} refused, from arrival p50 ${at(50)} ms p99 ${at(99)} ms`
      : '';
    return `${(this.scheduler.now / 1000).toFixed(1)} s virtual, ${l.arrived} arrived, ${l.allocated} allocated, ${l.refused} refused, largest projection lag ${this.lag.maxLagMs} ms${settled}`;
  }

  /** The trace lines that mention the violation's subjects (the last 40), or the last 40 lines. */
  private traceOf(violation: Violation): string[] {
    const subjects = violation.subjects.filter((x) => x.length > 2);
    const relevant = this.trace.filter((line) => subjects.some((x) => line.includes(x)) || line.includes('VIOLATION'));
    return (relevant.length ? relevant : this.trace).slice(-40);
  }

  private async finalChecks(): Promise<void> {
    this.check(true);
    if (this.scheduler.stoppedBy) return;
    const auditor = this.newContainer('auditor', false);
    const done = (async () => {
      const snap = snapshotOf([...this.engine.state.values()]);
      const reported = [];
      // Each pool that has ranges (the second one may be deleted at the end).
      for (const pool of [...new Set(snap.ranges.map((r) => r.pool))].sort()) {
        const reply = await auditor.http('GET', `/v1/pools/${pool}`);
        if (reply.status !== 200) throw new Error(`GET /v1/pools/${pool} answered ${reply.status}: ${reply.error}`);
        const details = reply.body as PoolDetailsDocument;
        reported.push(...details.ranges.map((r) => ({ pool, range: r.name, used: BigInt(r.used) })));
      }
      const now = EPOCH_MS + this.scheduler.now;
      const bitmaps = [];
      for (const range of snap.ranges.filter((r) => r.legacy && r.state !== RangeState.Terminating)) {
        const doc = await auditor.deps.bitmaps.getBitmap(range.pool, range.name);
        const cidr = parseCidr(range.cidr);
        const window = legacyWindow(cidr);
        const set = new Set<string>();
        if (doc)
          Bitmap.decode(doc.data, window).forEachSet((bit) =>
            set.add(formatAddress({ family: cidr.family, value: addressOfBit(cidr, bit) })),
          );
        const leased = new Set(
          snap.leases
            .filter((l) => {
              if (l.pool !== range.pool) return false;
              const a = parseAddress(l.address);
              return (
                a.family === cidr.family &&
                a.value >= addressOfBit(cidr, 0) &&
                a.value <= addressOfBit(cidr, Number(window) - 1)
              );
            })
            .map((l) => l.address),
        );
        bitmaps.push({ range: range.name, leased, set });
      }
      // Every range's occupancy summary (kept by the same stream function) against the lease items of its hosts.
      const summaries = [];
      for (const range of snap.ranges) {
        const cidr = parseCidr(range.cidr);
        const hosts = hostInterval(cidr);
        if (!hosts) continue;
        const summary = await readSummary(auditor.deps.occupancy, range.pool, cidr.family, [hosts]);
        const set = new Set<string>();
        for (const chunk of summary.chunks)
          forEachHeld(chunk, [hosts], (value) => set.add(formatAddress({ family: cidr.family, value })));
        const leased = new Set(
          snap.leases
            .filter((l) => l.pool === range.pool && isHostOf(cidr, parseAddress(l.address)))
            .map((l) => l.address),
        );
        summaries.push({ range: range.name, leased, set });
      }
      this.violations([
        ...checkUtilization(snap, now, reported),
        ...checkSummaries(summaries),
        ...checkBitmaps(bitmaps),
      ]);
    })();
    await this.scheduler.runUntil(this.scheduler.now + 60_000);
    await done;
  }
}
