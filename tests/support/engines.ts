import { SdkTable } from '../../shared/adapters/dynamodb/sdk-table.ts';
import type { Query, Table } from '../../shared/adapters/dynamodb/table.ts';
import { MemoryTable, type Fault, type TableCall } from '../../shared/adapters/memory/memory-table.ts';
import { freshTable } from './dynamo.ts';
import { FollowedTable } from './stream-follower.ts';
import { FreedAudit } from './freed-audit.ts';

/**
 * A table engine a suite runs on. Suites written once in tests/cases/ run on both: DynamoDB Local in the
 * integration tier (the reference), MemoryTable in the unit tier (no Java), so the memory engine carries the core's
 * tests only as far as it answers the same cases the same way. Both run the stream function's summary upkeep as
 * part of each write (FollowedTable), so utilization and the allocator's summary reads see every lease at once.
 */
export interface TestEngine {
  readonly name: string;
  /** A fresh, empty table, and the settings a container needs for it. */
  fresh(prefix?: string): Promise<{ table: Table; env: Record<string, string> }>;
}

/** Every write it takes is audited against the freed-counter rule (FreedAudit: a freeing write bumps its range). */
export const memoryEngine: TestEngine = {
  name: 'memory',
  fresh: async (prefix = 'memory') => ({
    table: new FollowedTable(new FreedAudit(new MemoryTable({ name: prefix }))),
    env: { TABLE_NAME: prefix, LOCAL_STACK: 'true' },
  }),
};

function dynamoLocal(name: string, stream: boolean): TestEngine {
  return {
    name,
    async fresh(prefix) {
      const { client, tableName, endpoint } = await freshTable(prefix, { stream });
      return {
        table: new FollowedTable(new SdkTable(client, tableName)),
        env: { TABLE_NAME: tableName, DYNAMODB_ENDPOINT: endpoint, LOCAL_STACK: 'true' },
      };
    },
  };
}

export const dynamoLocalEngine = dynamoLocal('DynamoDB Local', false);

/** DynamoDB Local with the table's stream on, for the tests that read it (the legacy mirror's). */
export const dynamoLocalWithStream = dynamoLocal('DynamoDB Local', true);

/**
 * The memory engine with an index the test can hold at a moment: while held, the queries `lags` picks see the table
 * as it was then (DynamoDB's eventually consistent index, lagging behind a fresh write).
 */
export function laggingIndexEngine(
  name: string,
  lags: (query: Query) => boolean,
): { engine: TestEngine; hold(): void; catchUp(): void } {
  let heldAt: number | undefined;
  let memory: MemoryTable | undefined;
  const engine: TestEngine = {
    name,
    fresh: async () => {
      memory = new MemoryTable({
        name: 'lagging',
        indexLag: (q) => (heldAt !== undefined && lags(q) ? memory!.writes() - heldAt : 0),
      });
      return { table: new FollowedTable(memory), env: { TABLE_NAME: 'lagging', LOCAL_STACK: 'true' } };
    },
  };
  return { engine, hold: () => (heldAt = memory!.writes()), catchUp: () => (heldAt = undefined) };
}

/**
 * `engine` with its summary upkeep `lag` lease changes behind the leases (FollowedTable's lag): the stream's delay,
 * under which the summary shows free addresses that were taken a moment ago.
 */
export function withSummaryLag(engine: TestEngine, lag: number): TestEngine {
  return {
    name: `${engine.name}, summary ${lag} changes behind`,
    async fresh(prefix) {
      const { table, env } = await engine.fresh(prefix);
      return { table: new FollowedTable(table instanceof FollowedTable ? table.inner : table, lag), env };
    },
  };
}

/** The memory engine with a hook that sees every table call before it runs (to move a clock, or to fault the call). */
export function hookedEngine(hook: (call: TableCall) => Fault | undefined): TestEngine {
  return {
    name: 'memory, hooked',
    fresh: async () => ({
      table: new FollowedTable(new MemoryTable({ name: 'hooked', faults: hook })),
      env: { TABLE_NAME: 'hooked', LOCAL_STACK: 'true' },
    }),
  };
}

/**
 * The memory engine whose first transaction writing `address` is cancelled with TransactionConflict on every item (as
 * two requests racing for one free address can both be); `conflicts()` counts the ones injected.
 */
export function conflictOnceOn(address: string): { engine: TestEngine; conflicts: () => number } {
  let conflicts = 0;
  const engine = hookedEngine((call) => {
    if (
      call.method !== 'transact' ||
      conflicts > 0 ||
      !call.ops?.some((op) => op.kind === 'put' && op.item.address === address)
    )
      return undefined;
    conflicts += 1;
    return { kind: 'conflict' };
  });
  return { engine, conflicts: () => conflicts };
}
