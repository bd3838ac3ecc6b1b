import { Agent } from 'node:http';
import {
  DynamoDBClient,
  type TransactWriteItemsCommandInput,
  type UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import type { PartitionLimiter } from './limiter.ts';
import { addUsage, emptyUsage, type Pricer, type Usage } from './meter.ts';
import { leaseWritesOf, type WriteTap } from './stream-feed.ts';

/** Counts what a client's attempts cost while `recording` is on; set-up traffic is sent with recording off. */
export class Meter {
  recording = true;
  private readonly totals: Usage = emptyUsage();

  add(usage: Usage): void {
    if (this.recording) addUsage(this.totals, usage);
  }

  /** A copy of the totals so far. */
  snapshot(): Usage {
    return { ...this.totals, operations: { ...this.totals.operations } };
  }
}

export interface BenchClientOptions {
  readonly endpoint: string;
  readonly pricer: Pricer;
  readonly meter: Meter;
  /** The per-partition model; absent for raw runs. */
  readonly limiter?: PartitionLimiter;
  /** SDK attempts per request: 1 for the allocator's client (as composition.ts builds it), 3 for background workers. */
  readonly maxAttempts?: number;
  /** Sockets to DynamoDB Local: one per caller, so 128 callers never queue inside the client. */
  readonly sockets?: number;
  /** While `halted`, attempts fail at once with an AbortError (not sent, not counted): ends a run's calls in flight. */
  readonly gate?: { halted: boolean };
  /** Told the lease keys of every write that succeeded (the bench's stand-in for the table's stream). */
  readonly tap?: WriteTap;
  /** The round trip each attempt waits before it is sent, by operation; absent: none (DynamoDB Local as it is). */
  readonly roundTrip?: RoundTrip;
}

/** Milliseconds an attempt of an operation waits before it reaches the engine. */
export type RoundTrip = (operation: string) => number;

/**
 * A model of a deployed function's round trip to DynamoDB in its region, which DynamoDB Local on the same host lacks:
 * where a design pays in round trips (a caller re-reading a contended item) rather than in engine work, only this
 * shows it. Assumed figures, not measured ones: 5 ms a read, 7 ms a single-item write, 15 ms a transaction (DynamoDB
 * runs a transaction in two phases). Every strategy of a cell pays the same model.
 */
export const DEPLOYED_ROUND_TRIP: RoundTrip = (operation) =>
  operation.startsWith('Transact') ? 15 : /^(Put|Update|Delete|BatchWrite)/.test(operation) ? 7 : 5;

/** What a halted client throws; the adapters treat it as a timeout (NotReady), so a call in flight ends quickly. */
export class HaltedError extends Error {
  override readonly name = 'AbortError';
}

/** The error DynamoDB answers when a partition key is over its limit; the SDK retries it as a throttle. */
export class ProvisionedThroughputExceededError extends Error {
  override readonly name = 'ProvisionedThroughputExceededException';
  readonly $fault = 'client';
  readonly $metadata = { httpStatusCode: 400 };
  readonly $retryable = { throttling: true };
  constructor(readonly partitions: readonly string[]) {
    super(
      `The level of configured provisioned throughput for one or more partition keys was exceeded (${partitions.join(', ')}).`,
    );
  }
}

/** A transaction refused because one of its items' partitions is over its limit: DynamoDB names them per item. */
export class ThrottledTransactionError extends Error {
  override readonly name = 'TransactionCanceledException';
  readonly $fault = 'client';
  readonly $metadata = { httpStatusCode: 400 };
  constructor(readonly CancellationReasons: readonly { Code: string; Message?: string }[]) {
    super(
      `Transaction cancelled, please refer cancellation reasons for specific reasons [${CancellationReasons.map((r) => r.Code).join(', ')}]`,
    );
  }
}

/**
 * A DynamoDB client for the benchmark: every attempt (SDK retries included, since the meter sits inside the retry
 * loop at the finalizeRequest step) is priced and counted, and, when a limiter is given, refused the way DynamoDB
 * refuses a hot partition key before it reaches the engine.
 */
export function createBenchClient(options: BenchClientOptions): DynamoDBClient {
  const client = new DynamoDBClient({
    endpoint: options.endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: options.maxAttempts ?? 1,
    requestHandler: {
      httpAgent: new Agent({ keepAlive: true, maxSockets: options.sockets ?? 256 }),
      requestTimeout: 30_000,
      connectionTimeout: 5_000,
    },
  });
  const { pricer, meter, limiter } = options;

  // An update's size afterwards is only known from the item it leaves: ask for it (ALL_NEW) when the caller did
  // not ask for anything, and take it off the answer again so the caller sees what it asked for.
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== 'UpdateItemCommand') return next(args);
      const input = args.input as UpdateItemCommandInput;
      if (input.ReturnValues !== undefined && input.ReturnValues !== 'NONE') return next(args);

      const result = await next({ ...args, input: { ...input, ReturnValues: 'ALL_NEW' } });
      const output = result.output as { Attributes?: unknown };
      delete output.Attributes;
      return result;
    },
    { step: 'initialize', name: 'benchUpdateImage', priority: 'high' },
  );

  client.middlewareStack.add(
    (next, context) => async (args) => {
      const op = (context.commandName ?? 'Unknown').replace(/Command$/, '');
      if (options.gate?.halted) throw new HaltedError('the measurement is over');
      const planned = limiter ? pricer.plan(op, args.input) : [];
      if (limiter) {
        const short = limiter.admit(planned);
        if (short.length > 0) {
          const usage = emptyUsage();
          usage.requests = 1;
          usage.throttled = 1;
          usage.operations[op] = 1;
          meter.add(usage);
          throw throttleError(op, args.input, short, pricer);
        }
      }
      const wait = options.roundTrip?.(op) ?? 0;
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      try {
        const result = await next(args);
        const assessment = pricer.assess(op, args.input, result.output, undefined);
        meter.add(assessment.usage);
        limiter?.settle(planned, assessment.charges);
        const listener = options.tap?.listener;
        if (listener) {
          const leases = leaseWritesOf(op, args.input);
          if (leases.length) listener(leases);
        }
        return result;
      } catch (error) {
        const assessment = pricer.assess(op, args.input, undefined, error);
        meter.add(assessment.usage);
        limiter?.settle(planned, assessment.charges);
        throw error;
      }
    },
    { step: 'finalizeRequest', name: 'benchMeter', priority: 'low' },
  );
  return client;
}

function throttleError(op: string, input: unknown, short: readonly string[], pricer: Pricer): Error {
  if (op !== 'TransactWriteItems') return new ProvisionedThroughputExceededError(short);
  const hot = new Set(short);
  const items = (input as TransactWriteItemsCommandInput).TransactItems ?? [];
  return new ThrottledTransactionError(
    items.map((item) => {
      const throttled = pricer.plan('TransactWriteItems', { TransactItems: [item] }).some((c) => hot.has(c.partition));
      return throttled
        ? { Code: 'ThrottlingError', Message: 'Throughput exceeds the current capacity of your table or index.' }
        : { Code: 'None' };
    }),
  );
}
