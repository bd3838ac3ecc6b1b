import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { WriteTap } from '../lib/stream-feed.ts';
import type { Meter } from '../lib/bench-client.ts';
import type { Usage } from '../lib/meter.ts';

/** One allocation attempt as a client of the IPAM sees it. */
export type AllocationOutcome =
  | { readonly kind: 'allocated'; readonly address: string }
  /** The strategy says no address is left (RangeFull). */
  | { readonly kind: 'full' }
  /** The strategy could not serve now (throttled, contended): a client retries after a pause. */
  | { readonly kind: 'busy'; readonly reason: string };

/** One caller: a Lambda container serving one request at a time, with its own warm caches. */
export interface Caller {
  /** `signal` aborts waiting (a lock poll) when the measurement window closes; an aborted call answers busy. */
  allocate(claimName: string, signal?: AbortSignal): Promise<AllocationOutcome>;
  /**
   * Brings the container's caches up to date as a warm container's would be (a lease container re-reads its hint),
   * without allocating: used after the harness changed the table behind the callers' backs (a pre-fill step).
   */
  warm?(): Promise<void>;
}

/** Who holds an address according to the store (for the no-duplicate check). */
export interface Holding {
  readonly address: string;
  readonly holder: string;
}

export interface Inspection {
  readonly held: readonly Holding[];
  readonly problems: readonly string[];
}

/** What a strategy gets to work in: a fresh table, one pool with one range. */
export interface StrategyContext {
  readonly tableName: string;
  readonly pool: string;
  readonly cidr: string;
  /** Metered (and, in limited runs, limited) client: the one measured. */
  readonly client: DynamoDBClient;
  /** Client for set-up and checks: priced (so the size ledger sees every item) but neither counted nor limited. */
  readonly setupClient: DynamoDBClient;
  /** Where both clients report their lease writes (a strategy that runs the stream function listens). */
  readonly tap: WriteTap;
  /** A client for the stream function, counted on its own meter (limited and halted with the measured client). */
  streamClient(meter: Meter): DynamoDBClient;
}

/** A strategy opened on a table. */
export interface StrategyRun {
  /** Marks these host offsets of the range as taken, written straight into storage (not through the API). */
  prefill(offsets: readonly bigint[]): Promise<void>;
  /** A new caller (a cold container). */
  caller(index: number): Caller;
  /**
   * Takes back allocations made since the pre-fill, so the next measurement starts at the same occupancy: the ones
   * answered, and any the calls named in `unanswered` committed without their caller seeing it.
   */
  undo(claims: readonly { claimName: string; address: string }[], unanswered: readonly string[]): Promise<void>;
  /** Waits until the stream function has seen every write so far (after a pre-fill or an undo; not measured). */
  settle?(): Promise<void>;
  /** Stops what the strategy runs in the background. */
  close?(): Promise<void>;
  /** Lags of the stream function so far, from a write to the end of the batch that delivered it (ms). */
  streamLagMs?(): readonly number[];
  /** What the stream function has cost so far (its own meter): a scenario takes the difference over a window. */
  streamUsage?(): Usage;
  /**
   * Every address the store says is held, with its holder (an address listed twice is a duplicate), and any
   * disagreement between the store's own records (a claim without its lease, a bit without its lease, ...).
   */
  inspect(): Promise<Inspection>;
}

/** One allocation strategy of the comparison. */
export interface Strategy {
  readonly name: string;
  /** One line for the report. */
  readonly description: string;
  /** undefined when it can run; otherwise why not (e.g. "not available yet: ..."). */
  unavailable(): Promise<string | undefined>;
  open(context: StrategyContext): Promise<StrategyRun>;
}
