import { buildContainer } from '../../shared/adapters/composition.ts';
import { SdkTable } from '../../shared/adapters/dynamodb/sdk-table.ts';
import { blocksOf, parentDocumentCaller, parentItem } from '../../scripts/lib/designs.ts';
import { sleep } from '../lib/storage.ts';
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
import { capacity, lowerBandSize, parseCidr, slotted } from '../../shared/core/ip/cidr.ts';

/**
 * Blocks of the parent: a /16 cut into /26 blocks, Calico's default pool and block size (Kubernetes' node IPAM gives a
 * /14 cluster CIDR in /24 node blocks the same count).
 */
const BLOCKS = 1024;
const BLOCK_PREFIX = 26;
const PARENT = '10.0.0.0/16';
/** The address pool of the same size beside it: a /22 holds 1,022 addresses. */
const ADDRESSES = 1022;

/** A strategy of this scenario: prefill `filled` positions, then answer one claim per call. */
export interface BlockStrategy {
  readonly name: string;
  open(
    bench: Bench,
    filled: number,
  ): Promise<{
    /** Brings a caller to the state a container serving claims is in (caches filled); unmeasured. */
    warm(caller: number): Promise<void>;
    claim(caller: number, name: string): Promise<'ok' | 'full' | 'busy'>;
    close(): Promise<void>;
  }>;
}

/**
 * Block claims through the shipped code (a block pool of /26 blocks over a /16, createClaim per container, the stream
 * function keeping the summary as in the lease strategy), and address claims of an address pool of the same size in the
 * same cell: the requests a block claim costs beside an address claim's.
 */
export function leaseStrategy(kind: 'blocks' | 'addresses'): BlockStrategy {
  return {
    name: kind === 'blocks' ? 'lease-blocks' : 'lease-addresses',
    async open(bench, filled) {
      const config = benchConfig(bench.tableName);
      const setup = buildContainer(config, { client: bench.setupClient });
      await createPool(setup.deps, {
        name: 'p',
        ...(kind === 'blocks' ? { blockPrefixLength: { IPv4: BLOCK_PREFIX } } : {}),
      });
      await createRange(setup.deps, { pool: 'p', cidr: kind === 'blocks' ? PARENT : '10.0.0.0/22' });
      const feed = new StreamFeed(buildContainer(config, { client: bench.extraClient(new Meter()) }).mirror);
      bench.tap.listener = (leases) => feed.push(leases);
      feed.start();
      for (let i = 0; i < filled; i += 1)
        await createClaim(setup.deps, { pool: 'p', name: `pre-${i}`, owner: benchOwner(9999) });
      await feed.drain();
      const containers = new Map<number, ReturnType<typeof buildContainer>>();
      const container = (caller: number) => {
        if (!containers.has(caller)) containers.set(caller, buildContainer(config, { client: bench.client }));
        return containers.get(caller)!;
      };
      return {
        async warm(caller) {
          // A preview takes the path a claim takes (pool view, hint) and writes nothing.
          await createClaim(container(caller).deps, {
            pool: 'p',
            name: `warm-${caller}`,
            owner: benchOwner(caller),
            dryRun: true,
          });
        },
        async claim(caller, name) {
          try {
            await createClaim(container(caller).deps, { pool: 'p', name, owner: benchOwner(caller) });
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
 * The parent-document design (go-ipam's AcquireChildPrefix): scripts/lib/designs.ts, the code the simulator's
 * comparison runs, on the metered client. The parent is go-ipam's document of the /16 with every child it lists.
 */
export const parentDocument: BlockStrategy = {
  name: 'parent-document',
  async open(bench, filled) {
    const all = blocksOf(PARENT, BLOCK_PREFIX);
    const taken = new Set<number>();
    while (taken.size < filled) taken.add(Math.floor(Math.random() * BLOCKS));
    const children = new Map([...taken].map((i) => [all[i]!, false]));
    await new SdkTable(bench.setupClient, bench.tableName).write({
      kind: 'put',
      item: parentItem({ pool: 'p', parent: PARENT, blockPrefix: BLOCK_PREFIX, children, version: 1 }),
    });
    const design = parentDocumentCaller({
      table: new SdkTable(bench.client, bench.tableName),
      pool: 'p',
      parent: PARENT,
      blockPrefix: BLOCK_PREFIX,
      ports: { nowMs: () => Date.now(), unit: () => Math.random(), sleep },
    });
    return {
      // Nothing to warm: the design keeps no state between claims.
      async warm() {},
      async claim() {
        return (await design.claim()).kind;
      },
      async close() {},
    };
  },
};

/**
 * Where the 90 % cells stand in the allocator's bands: dynamic picks fill the upper band (KEP-3070) first, so the
 * pre-fill leaves the lower band empty and the upper band nearly used up, and the measured claims cross into the
 * lower band (after the one consistent "used up" decision of the upper band a pool makes on that crossing).
 */
function bandNote(): string {
  const band = (cidr: string, slot?: number) => {
    const c = slotted(parseCidr(cidr), slot);
    return { size: capacity(c), lower: lowerBandSize(c) };
  };
  const [b, a] = [band('10.0.0.0/16', BLOCK_PREFIX), band('10.0.0.0/22')];
  const upperFree = (x: { size: bigint; lower: bigint }) => x.size - x.lower - BigInt(Math.floor(0.9 * Number(x.size)));
  return `At 90 % full the upper band is nearly used up: the block pool's lower band is its first ${b.lower} of ${b.size} blocks, the address pool's its first ${a.lower} of ${a.size} addresses, and the pre-fill's dynamic picks take the upper band first, leaving ${upperFree(b)} blocks and ${upperFree(a)} addresses free there. A 90 % cell's claims therefore read the last free positions of the upper band consistently (at most TUNING.verifyLimit of them shown free), make the one "used up" decision of that band (a consistent read of its leases, shared among callers through seals), and go on in the lower band; the parent document has no bands and picks among all free blocks.`;
}

/**
 * Requests a claim by kind (GetItem as Get, TransactWriteItems as Tx, ...), largest first: where a cell's requests go
 * (e.g. near full, BatchGet for consistent reads of free positions, Update for seals of a band read used up).
 */
function byKind(before: Readonly<Record<string, number>>, after: Readonly<Record<string, number>>, claims: number) {
  const short = (op: string) => op.replace(/^TransactWriteItems$/, 'Tx').replace(/Item$/, '');
  return Object.entries(after)
    .map(([op, n]) => [short(op), (n - (before[op] ?? 0)) / Math.max(1, claims)] as const)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([op, n]) => `${op} ${round(n, 2)}`)
    .join(', ');
}

/** One cell: a fresh table filled to `fill`, warm callers, then `claims` claims at most (half of what is free). */
async function measureCell(cell: {
  readonly ctx: RunContext;
  readonly mode: Mode;
  readonly strategy: BlockStrategy;
  readonly fill: number;
  readonly callers: number;
  readonly claims: number;
  readonly failures: string[];
}): Promise<Record<string, unknown>> {
  const { ctx, mode, strategy, fill, callers } = cell;
  const bench = await openBench(ctx.engine, `blocks-${strategy.name}`, mode);
  try {
    const size = strategy.name === 'lease-addresses' ? ADDRESSES : BLOCKS;
    const filled = Math.floor(fill * size);
    const run = await strategy.open(bench, filled);
    // At most half of what is free: a cell measures claims at its fill level, not the fill to the last block.
    const want = Math.min(cell.claims, Math.floor((size - filled) / 2));
    // Warm callers, as the throughput scenario's: a container serves many claims in its life, so its first claim's
    // cache fills are not what a claim costs.
    await Promise.all(Array.from({ length: callers }, (_, caller) => run.warm(caller)));
    const before = bench.meter.snapshot();
    const started = performance.now();
    const took: number[] = [];
    let next = 0;
    let ok = 0;
    let busy = 0;
    await Promise.all(
      Array.from({ length: callers }, async (_, caller) => {
        while (next < want) {
          const i = next++;
          const at = performance.now();
          const outcome = await run.claim(caller, `c-${i}`);
          took.push(performance.now() - at);
          if (outcome === 'ok') ok += 1;
          else if (outcome === 'busy') busy += 1;
          else
            cell.failures.push(
              `${strategy.name} at ${fill * 100} % with ${callers} callers answered full with room left`,
            );
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const after = bench.meter.snapshot();
    await run.close();
    took.sort((a, b) => a - b);
    ctx.log(
      `blocks ${mode} ${strategy.name} ${fill * 100}% ${callers} callers: ${ok} claims, ${round(ok / seconds, 1)}/s`,
    );
    return {
      mode,
      strategy: strategy.name,
      fullPercent: fill * 100,
      callers,
      claims: ok,
      busy,
      claimsPerSecond: round(ok / seconds, 1),
      claimMsP50: round(took[Math.floor(took.length / 2)] ?? Number.NaN, 1),
      // The cell's claims/s is its claims over the time the last one ended: the slowest claim sets it.
      claimMsMax: round(took.at(-1) ?? Number.NaN, 1),
      requestsPerClaim: round((after.requests - before.requests) / Math.max(1, ok), 2),
      requestsByKind: byKind(before.operations, after.operations, ok),
      failedConditions: after.failedConditions - before.failedConditions,
      throttled: after.throttled - before.throttled,
    };
  } finally {
    await bench.close();
  }
}

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
    // meets in the service; deployed: limited, plus a modelled round trip per request; raw: DynamoDB Local as it is.
    // Quick runs the raw mode only.
    const strategies = [leaseStrategy('blocks'), leaseStrategy('addresses'), parentDocument];
    // Engine warm-up, unmeasured: each strategy's empty cell with 8 callers first, so the JVM's code is warm before the
    // first measured cell whatever the mode order.
    if (!ctx.quick)
      for (const strategy of strategies)
        await measureCell({ ctx, mode: Mode.Raw, strategy, fill: 0, callers: 8, claims: claimsPerCell, failures: [] });
    for (const mode of ctx.quick ? [Mode.Raw] : [Mode.Deployed, Mode.Limited, Mode.Raw])
      for (const fill of ctx.quick ? [0] : [0, 0.5, 0.9])
        for (const callers of [1, 32])
          for (const strategy of strategies)
            rows.push(await measureCell({ ctx, mode, strategy, fill, callers, claims: claimsPerCell, failures }));
    return {
      name: 'blocks',
      title: this.title,
      status: failures.length ? 'failed' : 'ok',
      failures,
      notes: [
        `Each cell: a fresh table, the pool pre-filled to the share shown through the same code, then ${claimsPerCell} claims (at most half of those free, so a cell stays near its fill level) by the callers at once. lease-blocks: a block pool of /${BLOCK_PREFIX} blocks over a /16 (${BLOCKS} blocks, Calico's default); lease-addresses: an address pool of a /22 (${ADDRESSES} addresses); parent-document: go-ipam's design (scripts/lib/designs.ts): its parent document (every child handed out, as go-ipam's JSON) read consistently and rewritten under its version, then the child's own document written. Callers are warm: before the measured claims, each container answers one preview (dryRun), which fills its caches and writes nothing.`,
        'deployed: each measured request first waits a modelled round trip to DynamoDB (5 ms a read, 7 ms a single-item write, 15 ms a transaction; assumed, not measured), which DynamoDB Local on the same host lacks. It is where the designs differ by construction: a parent document takes one claim per contended read-and-write round, per-block leases one per caller.',
        "requestsPerClaim counts every DynamoDB request of the measured client (reads, transactions, retries) over the claims answered; the stream function's requests are not counted. requestsByKind splits it by request (Tx: TransactWriteItems; Get: GetItem, after each commit the range-generation check; BatchGet: consistent reads of free positions, freed counters and seals; Query: the occupancy summary; Update: seals of a band read used up).",
        bandNote(),
      ],
      parameters: { claimsPerCell, blocks: BLOCKS },
      rows,
      seconds: round((performance.now() - t0) / 1000, 1),
      charts: [],
    };
  },
};
