/**
 * npm run sim:projection -- [--quick] [--only lease|bitmap-cas|global-lock] [--case strategy,cidr,full,containers[,shards[,windowMs]] ...]
 *
 * Runs the projection grid (projection.ts), writes sim/results/projection.json and the charts, and regenerates the
 * table between the projection markers of SIMULATION-archive.md. Deterministic (seeded); the wall time of each case is
 * reported beside it and is the only figure that changes between runs. The grid is what a 2-core machine simulates
 * in about half an hour: big container counts are measured over a shorter window, and cases whose pre-fill or reads
 * would take the model hours (a /12 or a /64 filled) are left out and say so in SIMULATION-archive.md.
 *
 * `--case` (repeatable) runs just those cells, with the grid's windows and seed, and prints them as the grid does
 * (and their hottest partitions); e.g. `--case lease,10.0.0.0/16,0.9,1000` or `--case lease,fd00::/64,0,100,32`.
 * A longer window than the grid's (`--case lease,10.0.0.0/16,0,1000,32,4000`) shows a sustained rate: the grid's
 * 0.5 s window at 1,000 containers still draws on the partitions' 1 s of burst.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { lineChart } from '../scripts/lib/svg.ts';
import { projectCase, type ProjectionCase, type ProjectionRow, type StrategyName } from './projection.ts';

const RESULTS = new URL('./results/', import.meta.url);
const DOC = new URL('../SIMULATION-archive.md', import.meta.url);
const START = '<!-- projection:start -->';
const END = '<!-- projection:end -->';

function windowFor(containers: number): { warmupMs: number; windowMs: number } {
  if (containers >= 1000) return { warmupMs: 1500, windowMs: 500 };
  if (containers >= 100) return { warmupMs: 1500, windowMs: 1000 };
  return { warmupMs: 1500, windowMs: 3000 };
}

/**
 * The grid: every strategy on a /24 and a /16 at 1-1,000 containers; lease also at 4,096 containers, on a /12 and a
 * /64. Left out (hours of model time here): lease on a /16 50-99 % full beyond 100 containers, and a /12 or /64
 * pre-filled; every one of those pays for its hint reads in proportion to the leases held (see SIMULATION-archive.md).
 */
export function grid(quick: boolean): ProjectionCase[] {
  const out: ProjectionCase[] = [];
  const add = (strategy: StrategyName, containers: number, cidr: string, occupancy: number, shards?: number) =>
    out.push({
      strategy,
      containers,
      cidr,
      occupancy,
      seed: 1,
      ...windowFor(containers),
      ...(shards ? { shards } : {}),
    });
  if (quick) {
    for (const strategy of ['lease', 'bitmap-cas', 'global-lock'] as const)
      for (const n of [1, 10]) add(strategy, n, '10.0.0.0/24', 0.5);
    return out;
  }
  for (const occupancy of [0, 0.5, 0.9, 0.99]) for (const n of [1, 10, 100]) add('lease', n, '10.0.0.0/24', occupancy);
  for (const n of [1, 10, 100, 1000, 4096]) add('lease', n, '10.0.0.0/16', 0);
  // The listing index's shards cap lease (each allocation and release writes an entry in one of them): 32 shards.
  for (const n of [1000, 4096]) add('lease', n, '10.0.0.0/16', 0, 32);
  add('lease', 1000, '10.0.0.0/16', 0.9, 32);
  for (const n of [1, 10, 100]) add('lease', n, '10.0.0.0/16', 0.5);
  for (const n of [1, 10, 100]) add('lease', n, '10.0.0.0/16', 0.9);
  for (const n of [1, 10]) add('lease', n, '10.0.0.0/16', 0.99);
  for (const n of [1, 100, 1000]) add('lease', n, '10.0.0.0/12', 0);
  for (const n of [1, 100, 1000]) add('lease', n, 'fd00::/64', 0);
  for (const strategy of ['bitmap-cas', 'global-lock'] as const) {
    for (const occupancy of [0, 0.9]) {
      for (const n of [1, 10, 100]) add(strategy, n, '10.0.0.0/24', occupancy);
      for (const n of [1, 10, 100, 1000]) add(strategy, n, '10.0.0.0/16', occupancy);
    }
  }
  return out;
}

/** One `--case`: strategy,cidr,full,containers[,shards[,windowMs]], full as a fraction (0.9). */
function parseCase(text: string): ProjectionCase {
  const [strategy, cidr, full, containers, shards, window] = text.split(',');
  if (
    !strategy ||
    !['lease', 'bitmap-cas', 'global-lock'].includes(strategy) ||
    !cidr ||
    full === undefined ||
    containers === undefined
  ) {
    throw new Error(`--case ${JSON.stringify(text)}: expected strategy,cidr,full,containers[,shards[,windowMs]]`);
  }
  const n = Number(containers);
  return {
    strategy: strategy as StrategyName,
    containers: n,
    cidr,
    occupancy: Number(full),
    seed: 1,
    ...windowFor(n),
    ...(shards ? { shards: Number(shards) } : {}),
    ...(window ? { windowMs: Number(window) } : {}),
  };
}

const f = (n: number, d = 1): string => (Number.isFinite(n) ? n.toFixed(d) : '-');

function table(rows: readonly ProjectionRow[]): string {
  const lines = [
    '| strategy | range | full | containers | index shards | allocations/s | p50 ms | p99 ms | requests/alloc | RCU/alloc | WCU/alloc (table+index) | throttled | busy | RangeFull |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.strategy} | ${r.cidr} | ${Math.round(r.occupancy * 100)} % | ${r.containers} | ${r.strategy === 'global-lock' ? '-' : (r.shards ?? 8)} | ${f(r.perSecond, 0)} | ${f(r.p50Ms)} | ${f(r.p99Ms)} | ${f(r.requestsPerAllocation, 2)} | ${f(r.readUnitsPerAllocation, 2)} | ${f(r.writeUnitsPerAllocation, 2)} | ${r.throttled} | ${r.busyAnswers} | ${r.fullAnswers} |`,
    );
  }
  return lines.join('\n');
}

function charts(rows: readonly ProjectionRow[]): Record<string, string> {
  const series = (cidr: string, occupancy: number) =>
    (['lease', 'bitmap-cas', 'global-lock'] as const).map((strategy) => ({
      name: `${strategy} ${cidr} ${Math.round(occupancy * 100)} %`,
      points: rows
        .filter((r) => r.strategy === strategy && !r.shards && r.cidr === cidr && r.occupancy === occupancy)
        .map((r) => [r.containers, Math.max(r.perSecond, 0.1)] as const),
    }));
  const out: Record<string, string> = {};
  for (const occupancy of [0, 0.9]) {
    out[`projection-16-${Math.round(occupancy * 100)}.svg`] = lineChart({
      title: `allocations/s on a /16, ${Math.round(occupancy * 100)} % full`,
      xLabel: 'containers',
      yLabel: 'allocations/s',
      series: series('10.0.0.0/16', occupancy),
      logX: true,
      logY: true,
    });
  }
  return out;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      only: { type: 'string' },
      write: { type: 'string' },
      case: { type: 'string', multiple: true },
    },
  });
  const picked = (values.case ?? []).map(parseCase);
  const cases = picked.length ? picked : grid(values.quick).filter((c) => !values.only || c.strategy === values.only);
  const rows: ProjectionRow[] = [];
  if (values.write) {
    // Regenerate the document from saved rows (e.g. rows of several --only runs joined).
    rows.push(...(JSON.parse(readFileSync(values.write, 'utf8')) as ProjectionRow[]));
    return publish(rows);
  }
  for (const c of cases) {
    const row = await projectCase(c);
    rows.push(row);
    process.stdout.write(
      `${row.strategy}${row.shards ? ` (${row.shards} shards)` : ''} ${row.cidr} ${Math.round(row.occupancy * 100)}% x${row.containers}: ${f(row.perSecond, 0)}/s p50 ${f(row.p50Ms)} p99 ${f(row.p99Ms)} req ${f(row.requestsPerAllocation, 2)} RCU ${f(row.readUnitsPerAllocation, 2)} WCU ${f(row.writeUnitsPerAllocation, 2)} throttled ${row.throttled} busy ${row.busyAnswers} full ${row.fullAnswers} (${f(row.wallMs / 1000)} s wall)\n`,
    );
    if (picked.length)
      process.stdout.write(
        `  window ${row.windowMs} ms; hottest: ${(row.hottest ?? []).map(([k, n]) => `${k} ${n}`).join(', ') || '-'}\n`,
      );
  }
  if (values.quick || picked.length) return;
  if (values.only) {
    mkdirSync(RESULTS, { recursive: true });
    writeFileSync(new URL(`projection-${values.only}.json`, RESULTS), `${JSON.stringify(rows, null, 2)}\n`);
    return;
  }
  publish(rows);
}

function publish(rows: readonly ProjectionRow[]): void {
  mkdirSync(RESULTS, { recursive: true });
  writeFileSync(
    new URL('projection.json', RESULTS),
    `${JSON.stringify(rows, (_k, v) => (typeof v === 'number' ? Number(v.toFixed(3)) : v), 2)}\n`,
  );
  for (const [name, svg] of Object.entries(charts(rows))) writeFileSync(new URL(name, RESULTS), svg);
  const doc = readFileSync(DOC, 'utf8');
  const at = doc.indexOf(START);
  const to = doc.indexOf(END);
  if (at < 0 || to < 0) throw new Error('SIMULATION-archive.md has no projection markers');
  writeFileSync(DOC, `${doc.slice(0, at + START.length)}\n${table(rows)}\n${doc.slice(to)}`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
