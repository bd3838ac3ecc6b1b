/**
 * `npx tsx bench/claim-check-cost.ts [--allocations 200] [--ranges 1] [--occupancy 0]`: what one dynamic allocation
 * costs through createClaim (the `lease` strategy: warm containers, the shipped code path) on its own DynamoDB Local,
 * metered as the benchmarks meter (bench/lib/meter.ts): requests, read and write units, and requests by operation.
 * The post-commit consistent read of the pool view was one Query per allocation, so the
 * figure before it (a checkout without it) and after it differ by that Query; the check is now one GetItem of a copy
 * of the pool's range generation (docs/architecture.md has the three). `--ranges` adds IPv6 ranges to the pool (the
 * Query reads every item of the pool's partition); `--occupancy` pre-fills the measured range.
 */
import type { StrategyRun } from './strategies/strategy.ts';
import { parseArgs } from 'node:util';
import { PickStrategy } from '../shared/core/allocator/lease-allocator.ts';
import { capacity, parseCidr } from '../shared/core/ip/cidr.ts';
import { createRange } from '../shared/core/use-cases/ranges.ts';
import { buildContainer } from '../shared/adapters/composition.ts';
import { Engine, Mode, openBench, randomOffsets, runCallers, strategyContext, warmAll } from './lib/harness.ts';
import { benchConfig, leaseStrategy } from './strategies/lease.ts';

const CIDR = '10.0.0.0/20';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      allocations: { type: 'string', default: '200' },
      ranges: { type: 'string', default: '1' },
      occupancy: { type: 'string', default: '0' },
    },
  });
  const allocations = Number(values.allocations);
  const ranges = Number(values.ranges);
  const occupancy = Number(values.occupancy);
  const engine = await Engine.start();
  try {
    const bench = await openBench(engine, 'claim-check', Mode.Raw);
    let opened: StrategyRun | undefined;
    try {
      const ctx = strategyContext(bench, CIDR);
      const run = await leaseStrategy(PickStrategy.Hinted).open(ctx);
      opened = run;
      // Further ranges of the other family: they make the pool's partition bigger and serve no IPv4 claim.
      const setup = buildContainer(benchConfig(ctx.tableName), { client: ctx.setupClient });
      for (let i = 1; i < ranges; i += 1)
        await createRange(setup.deps, { pool: ctx.pool, cidr: `fd00:${i.toString(16)}::/112` });
      const size = Number(capacity(parseCidr(CIDR)));
      if (occupancy > 0) await run.prefill(randomOffsets(size, Math.floor(size * occupancy)).map(BigInt));
      for (const callers of [1, 4]) {
        const warm = Array.from({ length: callers }, (_, i) => run.caller(i));
        await warmAll(warm);
        // One unmeasured allocation each, so every container holds its pool view and hint as a warm one does.
        const first = await runCallers({
          callers: warm,
          meter: bench.meter,
          allocations: callers,
          namePrefix: `w${callers}`,
        });
        const measured = await runCallers({
          callers: warm,
          meter: bench.meter,
          allocations,
          namePrefix: `m${callers}`,
        });
        const a = Math.max(1, measured.allocated.length);
        const per = (n: number) => Math.round((n / a) * 1000) / 1000;
        const ops = Object.fromEntries(Object.entries(measured.usage.operations).map(([op, n]) => [op, per(n)]));
        console.log(
          JSON.stringify({
            callers,
            ranges,
            occupancy,
            allocations: measured.allocated.length,
            busy: measured.busyAnswers,
            requestsPerAllocation: per(measured.usage.requests),
            readUnitsPerAllocation: per(measured.usage.readUnits),
            itemsReadPerAllocation: per(measured.usage.itemsRead),
            writeUnitsPerAllocation: per(measured.usage.writeUnits),
            indexWriteUnitsPerAllocation: per(measured.usage.indexWriteUnits),
            failedConditionsPerAllocation: per(measured.usage.failedConditions),
            operationsPerAllocation: ops,
          }),
        );
        await run.undo([...first.allocated, ...measured.allocated], [...first.unanswered, ...measured.unanswered]);
      }
    } finally {
      // Stops the stream function the lease strategy runs (its requests are on a meter of their own).
      await opened?.close?.();
      await bench.close();
    }
  } finally {
    await engine.stop();
  }
}

await main();
