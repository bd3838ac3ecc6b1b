import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { capacity, parseCidr } from '../../shared/core/ip/cidr.ts';
import { streamShare } from '../lib/stream-feed.ts';
import {
  findDuplicates,
  Mode,
  warmAll,
  openBench,
  randomOffsets,
  runCallers,
  strategyContext,
} from '../lib/harness.ts';
import { round, type RunContext, type Scenario, type ScenarioResult } from '../lib/results.ts';
import { lineChart } from '../../scripts/lib/svg.ts';
import type { Caller, StrategyRun } from '../strategies/strategy.ts';

/**
 * Requests and capacity units per allocation as the range fills (0 % to 99.9 %), with 1 and 32 callers. At each
 * occupancy a fresh container makes one allocation (the cold cost: a lease container reads its hint first), then
 * warm containers make a fixed number of allocations, which are measured and taken back.
 */
export const occupancyCostScenario: Scenario = {
  name: 'occupancy-cost',
  title: 'Requests and capacity units per allocation vs. occupancy',
  async run(ctx: RunContext): Promise<ScenarioResult> {
    const t0 = performance.now();
    const cidr = ctx.quick ? '10.0.0.0/24' : '10.0.0.0/21';
    // Raw: the issue's sweep. Limited: both ends of it (the goals read raw rows; the per-key model refused nothing in
    // earlier full runs), to fit the run's time budget.
    const sweep = {
      [Mode.Raw]: ctx.quick ? [0, 0.99] : [0, 0.5, 0.9, 0.99, 0.999],
      [Mode.Limited]: ctx.quick ? [0.99] : [0, 0.99],
    };
    const occupancies = sweep[Mode.Raw];
    const callerCounts = ctx.quick ? [1, 4] : [1, 32];
    const perCaller = ctx.quick ? 2 : 4;
    // lease-blind near full needs hundreds of transactions per allocation: each point is time-bounded.
    const pointBoundMs = ctx.quick ? 2_000 : 8_000;
    const size = Number(capacity(parseCidr(cidr)));
    const rows: Record<string, unknown>[] = [];
    const failures: string[] = [];
    for (const mode of [Mode.Raw, Mode.Limited]) {
      for (const strategy of ctx.strategies) {
        const bench = await openBench(ctx.engine, `oc-${strategy.name}`, mode);
        let opened: StrategyRun | undefined;
        try {
          const run: StrategyRun = await strategy.open(strategyContext(bench, cidr));
          opened = run;
          const occupied = new Set<number>();
          const warmCallers: Caller[] = Array.from({ length: Math.max(...callerCounts) }, (_, i) => run.caller(i));
          for (const occupancy of sweep[mode]) {
            const add = randomOffsets(size, Math.floor(size * occupancy) - occupied.size, occupied);
            await run.prefill(add.map(BigInt));
            for (const o of add) occupied.add(o);
            const free = size - occupied.size;
            // The pre-fill changed the table at once: warm containers re-read their caches (unmeasured), as they would
            // have after their first collisions with the same change made by other writers. The cold row below shows that read's cost.
            await warmAll(warmCallers);
            // A cold container's first allocation.
            const cold = await runCallers({
              callers: [run.caller(1000)],
              meter: bench.meter,
              allocations: 1,
              namePrefix: `oc-${occupancy}-cold`,
              gate: bench.gate,
            });
            const taken = [...cold.allocated];
            const unanswered = [...cold.unanswered];
            for (const n of callerCounts) {
              const count = Math.max(1, Math.min(n * perCaller, Math.floor((free - taken.length) / 2)));
              const streamBefore = run.streamUsage?.();
              const measured = await runCallers({
                callers: warmCallers.slice(0, n),
                meter: bench.meter,
                allocations: count,
                until: performance.now() + pointBoundMs,
                namePrefix: `oc-${occupancy}-${n}`,
                gate: bench.gate,
              });
              taken.push(...measured.allocated);
              unanswered.push(...measured.unanswered);
              const a = Math.max(1, measured.allocated.length);
              rows.push({
                mode,
                strategy: strategy.name,
                occupancy,
                callers: n,
                allocations: measured.allocated.length,
                asked: count,
                requestsPerAllocation: round(measured.usage.requests / a, 3),
                writeUnitsPerAllocation: round(measured.usage.writeUnits / a, 3),
                indexWriteUnitsPerAllocation: round(measured.usage.indexWriteUnits / a, 3),
                readUnitsPerAllocation: round(measured.usage.readUnits / a, 3),
                ...streamShare(streamBefore, run.streamUsage?.(), a),
                itemsReadPerAllocation: round(measured.usage.itemsRead / a, 1),
                failedConditionsPerAllocation: round(measured.usage.failedConditions / a, 3),
                throttled: measured.usage.throttled,
                busyAnswers: measured.busyAnswers,
                engineErrors: measured.engineErrors,
                coldRequests: cold.usage.requests,
                coldReadUnits: round(cold.usage.readUnits, 1),
                operations: measured.usage.operations,
              });
              ctx.log(
                `occupancy-cost ${mode} ${strategy.name} occ=${occupancy} callers=${n}: ${round(measured.usage.requests / a, 2)} req/alloc, ${round(measured.usage.writeUnits / a, 2)}+${round(measured.usage.indexWriteUnits / a, 2)} WCU/alloc (cold: ${cold.usage.requests} req)`,
              );
            }
            const dup = findDuplicates(taken.map((t) => t.address));
            if (dup.length)
              failures.push(
                `${strategy.name} ${mode} occ ${occupancy}: addresses handed out twice: ${dup.slice(0, 5).join(', ')}`,
              );
            const inspection = await run.inspect();
            const held = findDuplicates(inspection.held.map((h) => h.address));
            if (held.length)
              failures.push(
                `${strategy.name} ${mode} occ ${occupancy}: store holds addresses twice: ${held.slice(0, 5).join(', ')}`,
              );
            failures.push(...inspection.problems.slice(0, 5).map((p) => `${strategy.name} ${mode}: ${p}`));
            await run.undo(taken, unanswered);
          }
        } finally {
          await opened?.close?.();
          await bench.close();
        }
      }
    }
    const charts: { file: string; title: string }[] = [];
    const xTicks = occupancies.map((o) => `${round(o * 100, 1)} %`);
    for (const [metric, label] of [
      ['requestsPerAllocation', 'requests per allocation (log)'],
      ['writeUnitsPerAllocation', 'table write units per allocation (log)'],
    ] as const) {
      for (const n of callerCounts) {
        const file = `occupancy-${metric}-${n}.svg`;
        const title = `${label.replace(' (log)', '')}, ${n} caller${n > 1 ? 's' : ''} (raw)`;
        const series = ctx.strategies.map((s) => ({
          name: s.name,
          points: occupancies.map(
            (o, i) =>
              [
                i,
                Number(
                  rows.find(
                    (r) => r.mode === Mode.Raw && r.strategy === s.name && r.occupancy === o && r.callers === n,
                  )?.[metric] ?? Number.NaN,
                ),
              ] as const,
          ),
        }));
        await writeFile(
          join(ctx.resultsDir, file),
          lineChart({ title, xLabel: `occupancy of ${cidr}`, yLabel: label, series, logY: true, xTicks }),
        );
        charts.push({ file, title });
      }
    }
    const notes = [
      `Warm callers refresh their caches after each pre-fill step (unmeasured); "coldRequests" is what a new container's first allocation costs, hint read included.`,
      `Limited mode runs ${sweep[Mode.Limited].map((o) => `${o * 100} %`).join(' and ')} full.`,
      `Range ${cidr} (${size} addresses); up to ${perCaller} allocations per caller per point (fewer near full: at most half the free addresses); each point bounded at ${pointBoundMs / 1000} s (allocations < asked means the bound ended it).`,
    ];
    return {
      name: 'occupancy-cost',
      title: this.title,
      status: failures.length ? 'failed' : 'ok',
      failures,
      notes,
      parameters: { cidr, sweep, callerCounts, perCaller, pointBoundMs },
      rows,
      seconds: round((performance.now() - t0) / 1000, 1),
      charts,
    };
  },
};
