import { GetItemCommand, PutItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { buildContainer } from '../../shared/adapters/composition.ts';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { NotReadyError, RangeFullError } from '../../shared/core/errors.ts';
import { createClaim } from '../../shared/core/use-cases/claims.ts';
import { createPool } from '../../shared/core/use-cases/pools.ts';
import { createRange } from '../../shared/core/use-cases/ranges.ts';
import { Mode, openBench, type Bench } from '../lib/harness.ts';
import { StreamFeed } from '../lib/stream-feed.ts';
import { Meter } from '../lib/bench-client.ts';
import { round, type RunContext, type Scenario, type ScenarioResult } from '../lib/results.ts';
import { benchConfig } from '../strategies/lease.ts';
import { benchOwner } from '../strategies/lease-items.ts';

/** Blocks of the parent: a /16 cut into /24 blocks. */
const BLOCKS = 256;

/** A strategy of this scenario: prefill `filled` positions, then answer one claim per call. */
interface BlockStrategy {
  readonly name: string;
  open(
    bench: Bench,
    filled: number,
  ): Promise<{ claim(caller: number, name: string): Promise<'ok' | 'full' | 'busy'>; close(): Promise<void> }>;
}

/**
 * Block claims through the shipped code (a block pool of /24 blocks over a /16, createClaim per container, the stream
 * function keeping the summary as in the lease strategy), and address claims of an address pool of the same size in the
 * same cell: the requests a block claim costs beside an address claim's.
 */
function leaseStrategy(kind: 'blocks' | 'addresses'): BlockStrategy {
  return {
    name: kind === 'blocks' ? 'lease-blocks' : 'lease-addresses',
    async open(bench, filled) {
      const config = benchConfig(bench.tableName);
      const setup = buildContainer(config, { client: bench.setupClient });
      await createPool(setup.deps, { name: 'p', ...(kind === 'blocks' ? { blockPrefixLength: { IPv4: 24 } } : {}) });
      await createRange(setup.deps, { pool: 'p', cidr: kind === 'blocks' ? '10.0.0.0/16' : '10.0.0.0/23' });
      const feed = new StreamFeed(buildContainer(config, { client: bench.extraClient(new Meter()) }).mirror);
      bench.tap.listener = (leases) => feed.push(leases);
      feed.start();
      for (let i = 0; i < filled; i += 1)
        await createClaim(setup.deps, { pool: 'p', name: `pre-${i}`, owner: benchOwner(9999) });
      await feed.drain();
      const containers = new Map<number, ReturnType<typeof buildContainer>>();
      return {
        async claim(caller, name) {
          if (!containers.has(caller)) containers.set(caller, buildContainer(config, { client: bench.client }));
          try {
            await createClaim(containers.get(caller)!.deps, { pool: 'p', name, owner: benchOwner(caller) });
            return 'ok';
          } catch (error) {
            if (error instanceof RangeFullError) return 'full';
            if (error instanceof NotReadyError) return 'busy';
            throw error;
          }
        },
        async close() {
          bench.tap.listener = undefined;
          await feed.stop();
        },
      };
    },
  };
}

/**
 * The parent-document design (go-ipam's AcquireChildPrefix): one item holding the parent's children, read
 * consistently, a free block picked at random, and the item rewritten under a version condition; a lost race reads
 * again. Written here for the comparison only.
 */
const parentDocument: BlockStrategy = {
  name: 'parent-document',
  async open(bench, filled) {
    const key = { PK: { S: 'PARENT#p' }, SK: { S: 'doc' } };
    const taken = new Set<number>();
    while (taken.size < filled) taken.add(Math.floor(Math.random() * BLOCKS));
    await bench.setupClient.send(
      new PutItemCommand({
        TableName: bench.tableName,
        Item: { ...key, version: { N: '1' }, children: { S: JSON.stringify([...taken]) } },
      }),
    );
    const client: DynamoDBClient = bench.client;
    return {
      async claim() {
        for (let attempt = 0; attempt < 200; attempt += 1) {
          const out = await client.send(
            new GetItemCommand({ TableName: bench.tableName, Key: key, ConsistentRead: true }),
          );
          const version = Number(out.Item!.version!.N);
          const children = new Set(JSON.parse(out.Item!.children!.S!) as number[]);
          if (children.size >= BLOCKS) return 'full';
          const free = Array.from({ length: BLOCKS }, (_, i) => i).filter((i) => !children.has(i));
          children.add(free[Math.floor(Math.random() * free.length)]!);
          try {
            await client.send(
              new PutItemCommand({
                TableName: bench.tableName,
                Item: { ...key, version: { N: String(version + 1) }, children: { S: JSON.stringify([...children]) } },
                ConditionExpression: 'version = :v',
                ExpressionAttributeValues: { ':v': { N: String(version) } },
              }),
            );
            return 'ok';
          } catch (error) {
            if (!(error instanceof ConditionalCheckFailedException)) throw error;
          }
        }
        return 'busy';
      },
      async close() {},
    };
  },
};

/**
 * Block claims per second and requests per claim at 0, 50 and 90 % full with 1 and 32 callers: block claims of a block
 * pool, address claims of an address pool of the same size, and the parent-document design, on one DynamoDB Local.
 */
export const blocksScenario: Scenario = {
  name: 'blocks',
  title: 'Block claims: per-block leases vs a parent document',
  async run(ctx: RunContext): Promise<ScenarioResult> {
    const t0 = performance.now();
    const rows: Record<string, unknown>[] = [];
    const failures: string[] = [];
    const claimsPerCell = ctx.quick ? 8 : 64;
    // Quick (the e2e test's run, which only keeps the harness working): the empty cells; pre-filling is most of the time.
    // Limited: DynamoDB's per-key throughput modelled (the throughput scenario's limiter), which is what a hot item
    // meets in the service; raw: DynamoDB Local as it is. Quick runs the raw mode only.
    for (const mode of ctx.quick ? [Mode.Raw] : [Mode.Limited, Mode.Raw])
      for (const fill of ctx.quick ? [0] : [0, 0.5, 0.9]) {
        for (const callers of [1, 32]) {
          for (const strategy of [leaseStrategy('blocks'), leaseStrategy('addresses'), parentDocument]) {
            const bench = await openBench(ctx.engine, `blocks-${strategy.name}`, mode);
            try {
              const size = strategy.name === 'lease-addresses' ? 510 : BLOCKS;
              const filled = Math.floor(fill * size);
              const run = await strategy.open(bench, filled);
              // At most half of what is free: a cell measures claims at its fill level, not the fill to the last block.
              const want = Math.min(claimsPerCell, Math.floor((size - filled) / 2));
              const before = bench.meter.snapshot();
              const started = performance.now();
              let next = 0;
              let ok = 0;
              let busy = 0;
              await Promise.all(
                Array.from({ length: callers }, async (_, caller) => {
                  while (next < want) {
                    const i = next++;
                    const outcome = await run.claim(caller, `c-${i}`);
                    if (outcome === 'ok') ok += 1;
                    else if (outcome === 'busy') busy += 1;
                    else
                      failures.push(
                        `${strategy.name} at ${fill * 100} % with ${callers} callers answered full with room left`,
                      );
                  }
                }),
              );
              const seconds = (performance.now() - started) / 1000;
              const after = bench.meter.snapshot();
              await run.close();
              rows.push({
                mode,
                strategy: strategy.name,
                fullPercent: fill * 100,
                callers,
                claims: ok,
                busy,
                claimsPerSecond: round(ok / seconds, 1),
                requestsPerClaim: round((after.requests - before.requests) / Math.max(1, ok), 2),
                failedConditions: after.failedConditions - before.failedConditions,
              });
              ctx.log(
                `blocks ${mode} ${strategy.name} ${fill * 100}% ${callers} callers: ${ok} claims, ${round(ok / seconds, 1)}/s`,
              );
            } finally {
              await bench.close();
            }
          }
        }
      }
    // The two goals, read off the rows (each mode): at 90 % full with 32 callers, block claims/s >= 5x the
    // parent document's; requests per block claim within 10 % of an address claim's in the same cell.
    const cell = (mode: string, strategy: string, full: number, callers: number) =>
      rows.find((r) => r.mode === mode && r.strategy === strategy && r.fullPercent === full && r.callers === callers);
    const goals: string[] = [];
    for (const mode of new Set(rows.map((r) => r.mode as string))) {
      const blocks = cell(mode, 'lease-blocks', 90, 32);
      const doc = cell(mode, 'parent-document', 90, 32);
      if (blocks && doc)
        goals.push(
          `${mode}, 90 % full, 32 callers: lease-blocks ${String(blocks.claimsPerSecond)}/s vs parent-document ${String(doc.claimsPerSecond)}/s = ${round(Number(blocks.claimsPerSecond) / Number(doc.claimsPerSecond), 2)}x (goal >= 5x).`,
        );
      for (const r of rows.filter((x) => x.mode === mode && x.strategy === 'lease-blocks')) {
        const a = cell(mode, 'lease-addresses', r.fullPercent as number, r.callers as number);
        if (a)
          goals.push(
            `${mode}, ${String(r.fullPercent)} % full, ${String(r.callers)} callers: requests per claim, blocks ${String(r.requestsPerClaim)} vs addresses ${String(a.requestsPerClaim)} (goal: within 10 %).`,
          );
      }
    }
    return {
      name: 'blocks',
      title: this.title,
      status: failures.length ? 'failed' : 'ok',
      failures,
      notes: [
        `Each cell: a fresh table, the pool pre-filled to the share shown through the same code, then ${claimsPerCell} claims (at most half of those free, so a cell stays near its fill level) by the callers at once. lease-blocks: a block pool of /24 blocks over a /16 (256 blocks); lease-addresses: an address pool of a /23 (510 addresses); parent-document: one item listing the 256 blocks' children, rewritten under a version condition (go-ipam's design).`,
        "requestsPerClaim counts every DynamoDB request of the measured client (reads, transactions, retries) over the claims answered; the stream function's requests are not counted.",
        ...goals,
      ],
      parameters: { claimsPerCell, blocks: BLOCKS },
      rows,
      seconds: round((performance.now() - t0) / 1000, 1),
      charts: [],
    };
  },
};
