import type { WriteTap } from './stream-feed.ts';
import { DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { randomUUID } from 'node:crypto';
import { startDynamoDbLocal, type DynamoDbLocal } from '../../scripts/dynamodb-local.ts';
import { createTable } from '../../shared/adapters/dynamodb/table-setup.ts';
import { DEPLOYED_ROUND_TRIP, Meter, createBenchClient } from './bench-client.ts';
import { SizeLedger } from './ledger.ts';
import { PartitionLimiter } from './limiter.ts';
import { Pricer, usageBetween, type Usage } from './meter.ts';
import { tableSchema } from './schema.ts';
import { forEachLimit, sleep } from './storage.ts';
import type { AllocationOutcome, Caller, Strategy, StrategyContext, StrategyRun } from '../strategies/strategy.ts';

/**
 * Raw: DynamoDB Local as it is (no limits). Limited: with the per-partition-key model in the adapter. Deployed:
 * limited, and each attempt of the measured clients waits a modelled round trip (DEPLOYED_ROUND_TRIP).
 */
export const Mode = { Raw: 'raw', Limited: 'limited', Deployed: 'deployed' } as const;
export type Mode = (typeof Mode)[keyof typeof Mode];

/** The engine every scenario shares: one DynamoDB Local, a fresh table per scenario and strategy. */
export class Engine {
  private constructor(readonly db: DynamoDbLocal) {}

  static async start(): Promise<Engine> {
    return new Engine(await startDynamoDbLocal());
  }

  get endpoint(): string {
    return this.db.endpoint;
  }

  stop(): Promise<void> {
    return this.db.stop();
  }
}

/** A fresh table with its clients: the measured one (metered, limited in limited mode) and an unmetered set-up one. */
export interface Bench {
  readonly tableName: string;
  readonly meter: Meter;
  readonly pricer: Pricer;
  readonly ledger: SizeLedger;
  readonly limiter: PartitionLimiter | undefined;
  readonly client: DynamoDBClient;
  readonly setupClient: DynamoDBClient;
  /** Set `halted` to end the calls in flight on the measured clients (they answer busy at their next request). */
  readonly gate: { halted: boolean };
  /** A further measured client (its own meter) on the same ledger and limiter: a background worker's, say. */
  extraClient(meter: Meter, maxAttempts?: number): DynamoDBClient;
  /** The lease writes of the measured and set-up clients, for a strategy that runs the stream function. */
  readonly tap: WriteTap;
  close(): Promise<void>;
}

export async function openBench(engine: Engine, prefix: string, mode: Mode): Promise<Bench> {
  const tableName = `bench-${prefix}-${randomUUID().slice(0, 8)}`.slice(0, 200);
  const ledger = new SizeLedger(tableSchema);
  const pricer = new Pricer(tableSchema, ledger);
  const meter = new Meter();
  const limiter = mode === Mode.Raw ? undefined : new PartitionLimiter();
  const roundTrip = mode === Mode.Deployed ? DEPLOYED_ROUND_TRIP : undefined;
  const gate = { halted: false };
  const tap: WriteTap = {};
  const client = createBenchClient({
    endpoint: engine.endpoint,
    pricer,
    meter,
    gate,
    tap,
    ...(limiter ? { limiter } : {}),
    ...(roundTrip ? { roundTrip } : {}),
  });
  const setupMeter = new Meter();
  setupMeter.recording = false;
  const setupClient = createBenchClient({ endpoint: engine.endpoint, pricer, meter: setupMeter, maxAttempts: 5, tap });
  // No stream: the mirror scenario feeds its stream records to the handler itself, and DynamoDB Local slows down
  // with every stream record it keeps (it looks the stream up on each write), which skewed the later scenarios.
  await createTable(setupClient, tableName, { stream: false });
  return {
    tableName,
    meter,
    pricer,
    ledger,
    limiter,
    client,
    setupClient,
    gate,
    tap,
    extraClient: (m, maxAttempts = 3) =>
      createBenchClient({
        endpoint: engine.endpoint,
        pricer,
        meter: m,
        maxAttempts,
        gate,
        ...(limiter ? { limiter } : {}),
        ...(roundTrip ? { roundTrip } : {}),
      }),
    async close() {
      await setupClient.send(new DeleteTableCommand({ TableName: tableName })).catch(() => undefined);
      ledger.forgetTable(tableName);
      client.destroy();
      setupClient.destroy();
    },
  };
}

export function strategyContext(bench: Bench, cidr: string, pool = 'bench'): StrategyContext {
  return {
    tableName: bench.tableName,
    pool,
    cidr,
    client: bench.client,
    setupClient: bench.setupClient,
    tap: bench.tap,
    streamClient: (meter) => bench.extraClient(meter, 3),
  };
}

/** A client's view of one call: its outcome and how long it took. */
export interface CallRecord {
  readonly caller: number;
  readonly outcome: AllocationOutcome['kind'];
  readonly ms: number;
  readonly endedAt: number;
}

export interface LoopResult {
  readonly allocated: { claimName: string; address: string; caller: number; at: number }[];
  /**
   * Claim names of calls answered busy: a call halted or timed out after its transaction committed leaves a claim
   * the caller never saw (a real client would retry with the same name and get it back), so undo looks them up.
   */
  readonly unanswered: string[];
  readonly calls: CallRecord[];
  /** Callers that saw RangeFull (and stopped, when asked to). */
  readonly fullAnswers: number;
  readonly busyAnswers: number;
  /** Calls that failed with a server error of the engine (DynamoDB Local's lock timeouts under load). */
  readonly engineErrors: number;
  readonly usage: Usage;
  readonly startedAt: number;
  readonly endedAt: number;
  /** True when a time bound ended the loop before its goal. */
  readonly timedOut: boolean;
}

export interface LoopOptions {
  readonly callers: readonly Caller[];
  readonly meter: Meter;
  /** Stop starting calls at this time (performance.now()). */
  readonly until?: number;
  /** Each caller stops at its first RangeFull answer. */
  readonly untilFull?: boolean;
  /** Stop after this many allocations in total. */
  readonly allocations?: number;
  readonly namePrefix: string;
  /** Halted when the time is up, so calls in flight end at their next request instead of running on. */
  readonly gate?: { halted: boolean };
}

/**
 * Runs callers in parallel, each one call at a time, as Lambda containers serve requests. A busy answer (throttle,
 * contention) is retried after an exponential pause with full jitter (10 ms doubling to 1 s), as an SDK client would.
 */
export async function runCallers(options: LoopOptions): Promise<LoopResult> {
  const before = options.meter.snapshot();
  const allocated: LoopResult['allocated'] = [];
  const unanswered: string[] = [];
  const calls: CallRecord[] = [];
  let fullAnswers = 0;
  let busyAnswers = 0;
  let engineErrors = 0;
  let started = 0;
  let timedOut = false;
  const abort = new AbortController();
  const stopTimer =
    options.until !== undefined
      ? setTimeout(
          () => {
            abort.abort();
            if (options.gate) options.gate.halted = true;
          },
          Math.max(0, options.until - performance.now()),
        )
      : undefined;
  const startedAt = performance.now();
  await Promise.all(
    options.callers.map(async (caller, index) => {
      let busyStreak = 0;
      for (let n = 0; ; n += 1) {
        if (options.until !== undefined && performance.now() >= options.until) {
          if (options.untilFull) timedOut = true;
          return;
        }
        if (options.allocations !== undefined && started >= options.allocations) return;
        started += 1;
        // Claim names are DNS labels: lower-case letters, digits and '-'.
        const claimName = `${options.namePrefix}-${index}-${n}`.toLowerCase().replace(/[^a-z0-9-]/g, '-');
        const t0 = performance.now();
        const outcome = await allocateOnce(caller, claimName, abort.signal, () => (engineErrors += 1));
        const t1 = performance.now();
        calls.push({ caller: index, outcome: outcome.kind, ms: t1 - t0, endedAt: t1 });
        if (outcome.kind === 'allocated') {
          allocated.push({ claimName, address: outcome.address, caller: index, at: t1 });
          busyStreak = 0;
        } else if (outcome.kind === 'full') {
          fullAnswers += 1;
          started -= 1;
          if (options.untilFull) return;
        } else {
          busyAnswers += 1;
          unanswered.push(claimName);
          started -= 1;
          await sleep(Math.random() * Math.min(1000, 10 * 2 ** busyStreak));
          busyStreak += 1;
        }
      }
    }),
  );
  if (stopTimer) clearTimeout(stopTimer);
  if (options.gate) options.gate.halted = false;
  const endedAt = performance.now();
  return {
    allocated,
    unanswered,
    calls,
    fullAnswers,
    busyAnswers,
    engineErrors,
    usage: usageBetween(before, options.meter.snapshot()),
    startedAt,
    endedAt,
    timedOut,
  };
}

/**
 * One call, with the errors a client sees as "try again": the harness halting the run (AbortError, which the adapters
 * already turn into NotReady where they catch it), server errors of the engine (DynamoDB Local answers 500 when its
 * internal lock times out under load; DynamoDB would not) and connections it drops or stalls. Anything else is a bug
 * and ends the run.
 */
export async function allocateOnce(
  caller: Caller,
  claimName: string,
  signal: AbortSignal | undefined,
  onEngineError: () => void,
): Promise<AllocationOutcome> {
  try {
    return await caller.allocate(claimName, signal);
  } catch (error) {
    const e = error as { name?: string; code?: string; message?: string; $fault?: string; cause?: { name?: string } };
    if (e.name === 'AbortError' || e.cause?.name === 'AbortError') return { kind: 'busy', reason: 'halted' };
    // Also the engine dropping or stalling connections when many callers poll it (socket hang up, resets, timeouts).
    const network =
      e.name === 'TimeoutError' ||
      e.code === 'ECONNRESET' ||
      e.code === 'EPIPE' ||
      /socket hang up/i.test(e.message ?? '');
    if (e.$fault === 'server' || e.name === 'InternalServerError' || network || e.cause?.name === 'TimeoutError') {
      onEngineError();
      return { kind: 'busy', reason: 'engine error' };
    }
    throw error;
  }
}

/**
 * Refreshes warm callers' caches, a few at a time (128 containers re-reading their hints at once would queue past
 * the client's timeout on DynamoDB Local). Best effort: a caller whose refresh fails refreshes on its next call.
 */
export async function warmAll(callers: readonly Caller[]): Promise<void> {
  await forEachLimit(callers, 4, async (caller) => {
    await caller.warm?.().catch(() => undefined);
  });
}

/** `count` distinct random host offsets in [0, size), none of them in `exclude` (a partial Fisher-Yates shuffle). */
export function randomOffsets(size: number, count: number, exclude: ReadonlySet<number> = new Set()): number[] {
  const pool: number[] = [];
  for (let i = 0; i < size; i += 1) if (!exclude.has(i)) pool.push(i);
  if (count > pool.length) throw new Error(`cannot pick ${count} offsets from ${pool.length} free ones`);
  for (let i = 0; i < count; i += 1) {
    const j = i + Math.floor(Math.random() * (pool.length - i));
    [pool[i], pool[j]] = [pool[j]!, pool[i]!];
  }
  return pool.slice(0, count);
}

/** An address held twice anywhere, or a call that returned an address twice: both break the run. */
export function findDuplicates(addresses: readonly string[]): string[] {
  const seen = new Set<string>();
  const dup = new Set<string>();
  for (const a of addresses) (seen.has(a) ? dup : seen).add(a);
  return [...dup];
}

export type { Strategy, StrategyRun };
