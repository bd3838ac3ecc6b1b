/** The run's printout: fixed-width lines of integers and fixed decimals, so one seed prints the same bytes. */
import type { Outcome } from './world.ts';

/** The p-th percentile (0-100) of sorted values; 0 when there are none. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const fixed = (n: number, digits = 1): string => n.toFixed(digits);

/** `quick`: the run used the quick form of its scenario, so the replay command asks for it too. */
export function formatOutcome(o: Outcome, options: { quick?: boolean; plant?: string; replay?: string } = {}): string {
  const lines: string[] = [];
  const sorted = [...o.latencies].sort((a, b) => a - b);
  lines.push(`seed ${o.seed} scenario ${o.scenario}: ${fixed(o.virtualMs / 1000)} s virtual, ${o.steps} steps`);
  lines.push(
    `answers: ${Object.entries(o.answers)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
  );
  lines.push(
    `allocations ${o.allocations}; request latency p50 ${fixed(percentile(sorted, 50))} ms, p99 ${fixed(percentile(sorted, 99))} ms`,
  );
  for (const [role, s] of [...o.spend.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
    lines.push(
      `  ${role.padEnd(10)} requests ${s.requests} throttled ${s.throttled} conflicts ${s.conflicts} failedConditions ${s.failedConditions} RCU ${fixed(s.readUnits)} WCU ${fixed(s.writeUnits)} index WCU ${fixed(s.indexWriteUnits)}`,
    );
  }
  lines.push(
    `faults: ${
      Object.entries(o.faults)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => `${k}=${v}`)
        .join(' ') || 'none'
    }`,
  );
  lines.push(
    `reconciler runs ${o.reconcilerRuns}; stream records ${o.streamRecords} in ${o.mirrorBatches} batches; invariant checks ${o.checks}`,
  );
  lines.push(
    `client ledger: ${o.told} claim answers; projections' largest lag behind the leases ${o.maxProjectionLagMs} ms`,
  );
  if (o.tree) lines.push(`pool tree: ${o.tree}`);
  if (o.openLoop) {
    const l = o.openLoop;
    const from = l.bySecond.flatMap((x) => x.latencies).sort((a, b) => a - b);
    const steadyFrom = Math.floor(l.bySecond.length / 2);
    const steady = l.bySecond.slice(steadyFrom);
    const steadyLatencies = steady.flatMap((x) => x.latencies).sort((a, b) => a - b);
    const sum = (f: (x: (typeof steady)[number]) => number): number => steady.reduce((acc, x) => acc + f(x), 0);
    lines.push(
      `open loop per second (arrived/allocated/refused): ${l.bySecond.map((x) => `${x.arrived}/${x.allocated}/${x.refused}`).join(' ')}`,
    );
    lines.push(
      `open loop, arrivals of seconds ${steadyFrom}-${l.bySecond.length}: ${fixed(sum((x) => x.allocated) / Math.max(1, steady.length))} allocated/s of ${fixed(sum((x) => x.arrived) / Math.max(1, steady.length))} arrived/s, ${sum((x) => x.refused)} refused; from arrival p50 ${fixed(percentile(steadyLatencies, 50))} ms, p99 ${fixed(percentile(steadyLatencies, 99))} ms`,
    );
    lines.push(
      `open loop: ${l.arrived} arrived, ${l.allocated} allocated (${fixed((l.allocated * 1000) / l.windowMs)}/s), ${l.refused} refused, ${l.rangeFull} RangeFull, ${l.other} other; from arrival p50 ${fixed(percentile(from, 50))} ms, p99 ${fixed(percentile(from, 99))} ms`,
    );
  }
  const refused = Object.entries(o.refused).sort(([a], [b]) => (a < b ? -1 : 1));
  if (refused.length) lines.push(`refused before a container: ${refused.map(([k, v]) => `${k}=${v}`).join(' ')}`);
  if (o.throttledBy.length) lines.push(`throttled by: ${o.throttledBy.map(([k, v]) => `${k}=${v}`).join(' ')}`);
  for (const note of o.notes) lines.push(`note: ${note}`);
  if (o.violation) {
    lines.push(`INVARIANT BROKEN: ${o.violation.invariant}: ${o.violation.detail}`);
    lines.push(
      `replay: ${options.replay ?? `npm run sim -- --seed ${o.seed} ${options.plant ? `--plant ${options.plant}` : `--scenario ${o.scenario}`}${options.quick ? ' --quick' : ''}`}`,
    );
    lines.push('trace (lines naming what broke):');
    for (const line of o.trace) lines.push(`  ${line}`);
  } else lines.push('all invariants held');
  return lines.join('\n');
}
