import { runReconciler } from '../../shared/adapters/reconcile-runner.ts';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildContainer } from '../../shared/adapters/composition.ts';
import { claimToItem, leaseToItem } from '../../shared/adapters/dynamodb/codec.ts';
import { formatAddress } from '../../shared/core/ip/address.ts';
import { hostAt, parseCidr } from '../../shared/core/ip/cidr.ts';
import { IpFamilyPolicy, type Claim, type Lease } from '../../shared/core/model.ts';
import { createPool } from '../../shared/core/use-cases/pools.ts';
import { createRange } from '../../shared/core/use-cases/ranges.ts';
import { Meter } from '../lib/bench-client.ts';
import { Mode, openBench, strategyContext } from '../lib/harness.ts';
import { round, type RunContext, type Scenario, type ScenarioResult } from '../lib/results.ts';
import { batchWrite, putRequest } from '../lib/storage.ts';
import { lineChart } from '../../scripts/lib/svg.ts';
import { benchConfig } from '../strategies/lease.ts';

/**
 * The scheduled reconciler's cost as the table grows: 1k/10k/100k held claims (each with its lease) plus a fixed
 * number of claims expired beyond the grace, one run of the reconciler's entry point (the scheduled function's
 * `runReconciler`) on a metered client, counting items read. The table grows in place between sizes (seeded with
 * BatchWriteItem in parallel); fresh expired claims are added before each run and must be gone after it.
 */
export const reconcilerCostScenario: Scenario = {
  name: 'reconciler-cost',
  title: 'Reconciler cost',
  async run(ctx: RunContext): Promise<ScenarioResult> {
    const t0 = performance.now();
    const sizes = ctx.quick ? [30, 300] : [1000, 10_000, 100_000];
    const expired = ctx.quick ? 5 : 50;
    const runsPerCell = ctx.quick ? 2 : 4;
    // Seeding a million claims and leases (2M items) through DynamoDB Local takes far longer than the run's budget
    // here: the sizes stop where the seeding budget ends, and the trend is what the goal reads.
    const seedBudget = (mode: Mode): number => (ctx.quick ? 30_000 : mode === Mode.Raw ? 300_000 : 30_000);
    const cidr = '10.0.0.0/14';
    // Each size runs with the shipped utilization-count budget (RECONCILE_COUNT_ITEMS) and with a tenth of it: a
    // table above the budget reads the budget, not the table, so the tenth shows at 10k -> 100k what the shipped budget
    // does at 100k -> 1M (not seeded here). The limited run keeps the shipped budget only.
    const shipped = benchConfig('x').reconciler.countItems;
    const budgets = (mode: Mode): number[] =>
      mode === Mode.Raw ? [shipped, Math.max(1, Math.round(ctx.quick ? 100 : shipped / 10))] : [shipped];
    const parsed = parseCidr(cidr);
    const rows: Record<string, unknown>[] = [];
    const failures: string[] = [];
    const notes: string[] = [];
    for (const mode of [Mode.Raw, Mode.Limited]) {
      const bench = await openBench(ctx.engine, 'reconcile', mode);
      try {
        const sctx = strategyContext(bench, cidr);
        const config = benchConfig(bench.tableName);
        const setup = buildContainer(config, { client: bench.setupClient });
        await createPool(setup.deps, { name: sctx.pool });
        const { range } = await createRange(setup.deps, { pool: sctx.pool, cidr });
        const meter = new Meter();
        const { deps } = buildContainer(config, { client: bench.extraClient(meter, 1) });
        let seeded = 0;
        let next = 0;
        let seedMs = 0;
        const owner = { kind: 'Pod', name: 'bench-owner', uid: 'bench-owner' };
        const items = (count: number, expiresAt: number | undefined, tag: string) =>
          Array.from({ length: count }, () => {
            const i = next;
            next += 1;
            const address = formatAddress({ family: parsed.family, value: hostAt(parsed, BigInt(i)) });
            const name = `${tag}-${i}`;
            const createdAt = new Date(Date.now() - 3_600_000).toISOString();
            const claim: Claim = {
              pool: sctx.pool,
              name,
              uid: name,
              spec: {
                owner,
                ipFamilyPolicy: IpFamilyPolicy.SingleStack,
                ipFamilies: [parsed.family],
                addresses: [],
                ...(expiresAt ? { ttlSeconds: 60 } : {}),
              },
              addresses: [{ address, family: parsed.family, range: range.name }],
              createdAt,
              version: 1,
              ...(expiresAt ? { expiresAt } : {}),
            };
            const lease: Lease = {
              pool: sctx.pool,
              address,
              family: parsed.family,
              range: range.name,
              claim: name,
              claimUid: name,
              owner,
              createdAt,
              ...(expiresAt ? { expiresAt } : {}),
            };
            return {
              claim,
              requests: [
                putRequest(claimToItem(claim, config.leaseIndexShards)),
                putRequest(leaseToItem(lease, config.leaseIndexShards)),
              ],
            };
          });
        for (const size of sizes) {
          // Skip a size whose seeding, at the rate seen so far, would overrun the budget.
          const estimateMs = seeded ? ((size - seeded) * seedMs) / seeded : 0;
          if (seedMs + estimateMs > seedBudget(mode)) {
            notes.push(
              `${mode}: ${size.toLocaleString('en-US')} claims not measured: seeding had used its ${seedBudget(mode) / 1000} s budget (the limited run gets a small one: the per-key model changes little for a background job)`,
            );
            continue;
          }
          const s0 = performance.now();
          await batchWrite(
            bench.setupClient,
            bench.tableName,
            items(size - seeded, undefined, 'held').flatMap((x) => x.requests),
            16,
          );
          seeded = size;
          seedMs += performance.now() - s0;
          for (const countItems of budgets(mode)) {
            // Several runs per cell: the sweep and the count rotate through the table, and a run that ends a rotation
            // reads less than one in the middle of it; the mean per run is the cost that repeats.
            const before = meter.snapshot();
            let seconds = 0;
            let released = 0;
            let complete = true;
            const repairs: Record<string, number> = {};
            for (let r = 0; r < runsPerCell; r += 1) {
              // Expired five minutes ago: past the 30 s grace, in the current or previous hour's expiry bucket.
              const gone = items(expired, Date.now() - 300_000, `exp${size}-${countItems}-${r}`);
              await batchWrite(
                bench.setupClient,
                bench.tableName,
                gone.flatMap((x) => x.requests),
                16,
              );
              const r0 = performance.now();
              const summary = await runReconciler(deps, { ...config.reconciler, countItems }, 600_000, {
                log: () => undefined,
              });
              seconds += (performance.now() - r0) / 1000;
              complete &&= summary.complete;
              for (const [k, v] of Object.entries(summary.repairs)) repairs[k] = (repairs[k] ?? 0) + v;
              let left = 0;
              for (const { claim } of gone) if (await setup.deps.claims.getClaim(sctx.pool, claim.name)) left += 1;
              if (left > 0)
                failures.push(`${mode} ${size} claims: ${left} of ${expired} expired claims still there after a run`);
              released += expired - left;
            }
            const after = meter.snapshot();
            const perRun = (n: number) => round(n / runsPerCell, 1);
            rows.push({
              mode,
              claims: size,
              countBudget: countItems,
              expired,
              itemsRead: perRun(after.itemsRead - before.itemsRead),
              requests: perRun(after.requests - before.requests),
              readUnits: perRun(after.readUnits - before.readUnits),
              writeUnits: perRun(after.writeUnits - before.writeUnits),
              released: perRun(released),
              runs: runsPerCell,
              seconds: round(seconds / runsPerCell, 2),
              complete,
              repairs,
              operations: Object.fromEntries(
                Object.entries(after.operations).map(([k, v]) => [k, perRun(v - (before.operations[k] ?? 0))]),
              ),
            });
            ctx.log(
              `reconciler ${mode} ${size} claims, count budget ${countItems}: ${perRun(after.itemsRead - before.itemsRead)} items read per run (${runsPerCell} runs), ${perRun(after.requests - before.requests)} requests, released ${released}/${expired * runsPerCell}`,
            );
          }
        }
      } finally {
        await bench.close();
      }
    }
    const file = 'reconciler-cost.svg';
    const title = 'Reconciler: items read per run vs claims in the table';
    await writeFile(
      join(ctx.resultsDir, file),
      lineChart({
        title,
        xLabel: 'claims (log)',
        yLabel: 'items read per run (log)',
        logX: true,
        logY: true,
        series: [...new Set(rows.map((r) => `${String(r.mode)}, budget ${String(r.countBudget)}`))].map((name) => ({
          name,
          points: rows
            .filter((r) => `${String(r.mode)}, budget ${String(r.countBudget)}` === name)
            .map((r) => [r.claims as number, r.itemsRead as number] as const),
        })),
      }),
    );
    notes.push(
      `Range ${cidr}; each size is the same table grown in place; ${expired} claims expired beyond the grace are added before each run, and every row is the mean of ${runsPerCell} consecutive runs.`,
    );
    return {
      name: 'reconciler-cost',
      title: 'Reconciler cost',
      status: failures.length ? 'failed' : 'ok',
      failures,
      notes,
      parameters: {
        sizes,
        expired,
        runsPerCell,
        cidr,
        countBudgets: { raw: budgets(Mode.Raw), limited: budgets(Mode.Limited) },
        seedBudgetMs: { raw: seedBudget(Mode.Raw), limited: seedBudget(Mode.Limited) },
      },
      rows,
      seconds: round((performance.now() - t0) / 1000, 1),
      charts: [{ file, title }],
    };
  },
};
