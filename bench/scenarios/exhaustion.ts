import { capacity, parseCidr } from '../../shared/core/ip/cidr.ts';
import {
  findDuplicates,
  Mode,
  openBench,
  randomOffsets,
  runCallers,
  strategyContext,
  type Bench,
} from '../lib/harness.ts';
import { round, type RunContext, type Scenario, type ScenarioResult } from '../lib/results.ts';
import type { Caller, StrategyRun } from '../strategies/strategy.ts';

/** One call on a full range: what it answered and what it cost. */
async function probe(
  bench: Bench,
  caller: Caller,
  name: string,
  boundMs: number,
): Promise<{ answer: string; requests: number; readUnits: number; operations: Readonly<Record<string, number>> }> {
  const r = await runCallers({
    callers: [caller],
    meter: bench.meter,
    allocations: 1,
    untilFull: true,
    until: performance.now() + boundMs,
    namePrefix: name,
    gate: bench.gate,
  });
  const answer = r.allocated.length
    ? 'allocated'
    : r.fullAnswers
      ? 'RangeFull'
      : r.timedOut
        ? `no answer within ${boundMs / 1000} s`
        : 'busy';
  return { answer, requests: r.usage.requests, readUnits: round(r.usage.readUnits, 1), operations: r.usage.operations };
}

/**
 * Fills a range to exhaustion with 32 callers: every strategy must hand out exactly the free addresses, none twice,
 * then answer RangeFull. Then one more call from a warm container, the same call again at once (a client's retry),
 * and one from a cold container, counting the requests each RangeFull answer took.
 */
export const exhaustionScenario: Scenario = {
  name: 'exhaustion',
  title: 'Exhaustion',
  async run(ctx: RunContext): Promise<ScenarioResult> {
    const t0 = performance.now();
    // The issue asks for a /22 and a /16 filled from empty. The /22 is filled from empty (bounded at 90 s: under 32
    // callers bitmap-cas races for one item and takes about a minute here). A /16 from empty is 65,534 allocations per
    // strategy, more than the run's budget, so the second case is the end game of a large range: a /20 pre-filled to
    // 99 % (41 free), which every strategy must take to the last address.
    const cases = ctx.quick
      ? [{ cidr: '10.0.0.0/28', prefill: 0, modes: [Mode.Raw, Mode.Limited], boundMs: 6_000 }]
      : [
          { cidr: '10.0.0.0/22', prefill: 0, modes: [Mode.Raw], boundMs: 90_000 },
          { cidr: '10.0.0.0/20', prefill: 0.99, modes: [Mode.Raw, Mode.Limited], boundMs: 30_000 },
        ];
    const callers = 32;
    const probeMs = ctx.quick ? 1_000 : 5_000;
    const rows: Record<string, unknown>[] = [];
    const failures: string[] = [];
    const notes: string[] = [];
    for (const { cidr, prefill, modes, boundMs } of cases) {
      const size = Number(capacity(parseCidr(cidr)));
      for (const mode of modes) {
        for (const strategy of ctx.strategies) {
          const bench = await openBench(ctx.engine, `ex-${strategy.name}`, mode);
          let opened: StrategyRun | undefined;
          try {
            const run: StrategyRun = await strategy.open(strategyContext(bench, cidr));
            opened = run;
            const prefilled = randomOffsets(size, Math.floor(size * prefill));
            await run.prefill(prefilled.map(BigInt));
            const free = size - prefilled.length;
            const pool = Array.from({ length: callers }, (_, i) => run.caller(i));
            const fill = await runCallers({
              callers: pool,
              meter: bench.meter,
              allocations: free,
              untilFull: true,
              until: performance.now() + boundMs,
              namePrefix: 'ex',
              gate: bench.gate,
            });
            const seconds = (fill.endedAt - fill.startedAt) / 1000;
            const exhaustedBefore = fill.allocated.length === free;
            const warm = await probe(bench, pool[0]!, 'ex-warm', probeMs);
            // The same container again at once: a client retrying a RangeFull answer.
            const retry = await probe(bench, pool[0]!, 'ex-retry', probeMs);
            const cold = await probe(bench, run.caller(callers), 'ex-cold', probeMs);
            // A probe's answer says when the fill had stopped short, so an 'allocated' is not read as a wrong answer.
            const asRecorded = (p: typeof warm) =>
              exhaustedBefore ? p : { ...p, answer: `${p.answer} (range was not full)` };
            const inspection = await run.inspect();
            const handedTwice = findDuplicates(fill.allocated.map((a) => a.address));
            const heldTwice = findDuplicates(inspection.held.map((h) => h.address));
            const label = `${strategy.name} ${mode} ${cidr}`;
            const exhausted = exhaustedBefore && inspection.held.length === size;
            if (handedTwice.length)
              failures.push(`${label}: addresses handed out twice: ${handedTwice.slice(0, 5).join(', ')}`);
            if (heldTwice.length)
              failures.push(`${label}: store holds addresses twice: ${heldTwice.slice(0, 5).join(', ')}`);
            if (fill.allocated.length > free)
              failures.push(`${label}: ${fill.allocated.length} successes for ${free} free addresses`);
            // A probe may only allocate when the fill stopped short (time bound): then it takes a free address.
            if (exhausted && [warm, retry, cold].some((p) => p.answer.startsWith('allocated')))
              failures.push(`${label}: allocated from a full range`);
            if (!exhausted && !fill.timedOut)
              failures.push(
                `${label}: callers stopped (RangeFull) with ${free - fill.allocated.length} addresses still free`,
              );
            if (inspection.held.length > size)
              failures.push(`${label}: the store holds ${inspection.held.length} addresses of ${size}`);
            // Not reaching the end within the bound is slowness, not a wrong answer: reported in the table, not failed.
            if (!exhausted && fill.timedOut)
              notes.push(
                `${label}: not exhausted within ${boundMs / 1000} s (${fill.allocated.length}/${free} free addresses taken, ${fill.busyAnswers} busy answers)`,
              );
            failures.push(...inspection.problems.slice(0, 5).map((p) => `${label}: ${p}`));
            rows.push({
              mode,
              strategy: strategy.name,
              cidr,
              size,
              prefilled: prefilled.length,
              free,
              successes: fill.allocated.length,
              held: inspection.held.length,
              duplicates: handedTwice.length + heldTwice.length,
              exhausted,
              timedOut: fill.timedOut,
              seconds: round(seconds, 1),
              perSecond: round(fill.allocated.length / seconds, 1),
              requestsPerAllocation: round(fill.usage.requests / Math.max(1, fill.allocated.length), 2),
              writeUnitsPerAllocation: round(fill.usage.writeUnits / Math.max(1, fill.allocated.length), 2),
              throttled: fill.usage.throttled,
              busyAnswers: fill.busyAnswers,
              engineErrors: fill.engineErrors,
              rangeFullAnswers: fill.fullAnswers,
              warmProbe: asRecorded(warm),
              retryProbe: asRecorded(retry),
              coldProbe: asRecorded(cold),
            });
            ctx.log(
              `exhaustion ${mode} ${strategy.name} ${cidr}: ${fill.allocated.length}/${free} in ${round(seconds, 1)} s, held ${inspection.held.length}/${size}, warm probe ${warm.answer} in ${warm.requests} req, retry ${retry.answer} in ${retry.requests} req, cold ${cold.answer} in ${cold.requests} req`,
            );
          } finally {
            await opened?.close?.();
            await bench.close();
          }
        }
      }
    }
    notes.push(
      `Cases: ${cases.map((c) => `${c.cidr} from ${c.prefill * 100} % (${c.modes.join(' and ')}, fill bounded at ${c.boundMs / 1000} s)`).join('; ')}; ${callers} callers; each probe bounded at ${probeMs / 1000} s.`,
    );
    return {
      name: 'exhaustion',
      title: 'Exhaustion',
      status: failures.length ? 'failed' : 'ok',
      failures,
      notes,
      parameters: { cases, callers, probeMs },
      rows,
      seconds: round((performance.now() - t0) / 1000, 1),
      charts: [],
    };
  },
};
