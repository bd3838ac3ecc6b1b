/**
 * npm run sim:compare -- [--quick] [--out FILE] [--only DESIGN[,DESIGN...]] [--join FILE]...
 *
 * The designs side by side at AWS's limits (compare.ts): every design at 0, 50 and 90 % full with 1, 10, 100 and
 * 1,000 containers. Writes sim/results/compare.json (the commit it ran on, the settings, one row a cell), the chart
 * and the table between the compare markers of SIMULATION.md. `--quick` runs a small grid on smaller pools (a /20 of
 * addresses, a /16 parent of /26 blocks; 0 and 90 % full; 1 and 10 containers) and writes only its JSON
 * (sim/results/compare-quick.json, or --out). Deterministic: the same commit and arguments write the same bytes.
 * Each cell has its own scheduler and seed, so the grid can run in parts (`--only` some designs, `--out` a file each,
 * in parallel) and `--join` the parts' files: compare.json and SIMULATION.md as one run on that commit writes them.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { lineChart } from '../scripts/lib/svg.ts';
import {
  COMPARE_QUOTAS,
  compareCell,
  DESIGNS,
  GEOMETRY,
  SHARDS,
  type CompareCell,
  type CompareRow,
  type Design,
  type Geometry,
} from './compare.ts';

const RESULTS = new URL('./results/', import.meta.url);
const DOC = new URL('../SIMULATION.md', import.meta.url);
const START = '<!-- compare:start -->';
const GOALS_START = '<!-- compare-goals:start -->';
/** What the table's figures are, above it. */
const ABOUT =
  "Per claim-and-release cycle (requests, write and read units of table and indexes, dollars a million cycles by sim/prices.ts); claims/s over the window (1 s at 100 and 1,000 containers after 1.5 s of warm-up, 2 s at 10, 4 s at 1); a /16 of addresses, a /12 parent in /26 blocks (go-ipam's document of it is ~340-390 KB at 90 %, near DynamoDB's 400 KB item limit); a table warmed to the default 40,000-unit quota (40 partitions a scope), `LEASE_INDEX_SHARDS` 64.";
const GOALS_END = '<!-- compare-goals:end -->';
const END = '<!-- compare:end -->';

export const QUICK_GEOMETRY: Geometry = { addresses: '10.0.0.0/20', parent: '10.0.0.0/16', blockPrefix: 26 };

function windowFor(containers: number): { warmupMs: number; windowMs: number } {
  if (containers >= 100) return { warmupMs: 1500, windowMs: 1000 };
  if (containers >= 10) return { warmupMs: 1000, windowMs: 2000 };
  return { warmupMs: 1000, windowMs: 4000 };
}

/** The grid's cells, in the order they run. */
export function compareGrid(quick: boolean, only?: string): CompareCell[] {
  const cells: CompareCell[] = [];
  for (const design of Object.keys(DESIGNS) as Design[]) {
    if (only && !only.split(',').includes(design)) continue;
    for (const fullPercent of quick ? [0, 90] : [0, 50, 90])
      for (const containers of quick ? [1, 10] : [1, 10, 100, 1000])
        cells.push({
          design,
          fullPercent,
          containers,
          seed: 1,
          ...(quick ? { warmupMs: 1000, windowMs: 1000, geometry: QUICK_GEOMETRY } : windowFor(containers)),
        });
  }
  return cells;
}

const round = (n: number): number => Number(n.toFixed(3));

/** The commit the run is on (`-dirty` when the tree has changes), so a saved grid says what it measured. */
function commit(): string {
  try {
    return execFileSync('git', ['describe', '--always', '--dirty', '--abbrev=12'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

/** The two rate goals, read off the rows: at 90 % full and 1,000 containers. */
export function compareGoals(rows: readonly CompareRow[]) {
  const at = (design: Design) => rows.find((r) => r.design === design && r.fullPercent === 90 && r.containers === 1000);
  const goal = (what: string, a: Design, b: Design, target: number) => {
    const [x, y] = [at(a), at(b)];
    const ratio = x && y ? x.perSecond / Math.max(y.perSecond, 1e-9) : Number.NaN;
    return {
      goal: what,
      ratio,
      met: Number.isFinite(ratio) ? ratio >= target : undefined,
      figure:
        x && y
          ? `${f(ratio, 1)}x (${f(x.perSecond, 0)}/s vs ${f(y.perSecond, 1)}/s)`
          : 'not measured: its cells did not run',
      limits: x && y ? `${a}: ${x.firstLimit}; ${b}: ${y.firstLimit}` : '',
    };
  };
  return [
    goal(
      'block claims >= 5x the parent-document design (90 % full, 1,000 containers)',
      'block-lease',
      'parent-document',
      5,
    ),
    goal('lease >= 50x bitmap-cas (90 % full, 1,000 containers)', 'lease', 'bitmap-cas', 50),
  ];
}

const f = (n: number, d = 1): string =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d }) : '-';

const verdict = (met: boolean | undefined): string => (met === undefined ? 'not measured' : met ? 'met' : 'not met');

/**
 * The runner's goals table (top of SIMULATION.md): the two rate goals and the first limit each design meets at 90 %
 * full and 1,000 containers, what is not met first, then what is not measured.
 */
export function goalsTable(rows: readonly CompareRow[]): string {
  const goals = compareGoals(rows).map((g) => ({
    goal: `at AWS's limits: ${g.goal} (\`npm run sim:compare\`)`,
    figure: g.limits ? `${g.figure}; ${g.limits}` : g.figure,
    met: g.met,
  }));
  const limits = (Object.keys(DESIGNS) as Design[]).map((design) => {
    const r = rows.find((x) => x.design === design && x.fullPercent === 90 && x.containers === 1000);
    return {
      goal: `the first limit ${design} meets (90 % full, 1,000 containers), named`,
      figure: r
        ? `${f(r.perSecond, r.perSecond < 10 ? 1 : 0)}/s: ${r.firstLimit}`
        : 'the cell did not run in the session',
      met: r ? true : undefined,
    };
  });
  const order = (met: boolean | undefined) => (met === false ? 0 : met === undefined ? 1 : 2);
  const lines = ['| Goal | Figure | Met |', '|---|---|---|'];
  for (const g of [...goals, ...limits].sort((a, b) => order(a.met) - order(b.met)))
    lines.push(`| ${g.goal} | ${g.figure} | ${g.met === false ? '**not met**' : verdict(g.met)} |`);
  return lines.join('\n');
}

export function compareTable(rows: readonly CompareRow[]): string {
  const lines = [
    '| design | unit | full | containers | claims/s | p99 ms | requests | WCU | RCU | $/M cycles | first limit |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows)
    lines.push(
      `| ${r.design} | ${r.unit} | ${r.fullPercent} % | ${r.containers} | ${f(r.perSecond, r.perSecond < 10 ? 1 : 0)} | ${f(r.p99Ms)} | ${f(r.requestsPerClaim, 2)} | ${f(r.writeUnitsPerClaim, 2)} | ${f(r.readUnitsPerClaim, 2)} | ${f(r.usdPerMillionClaims, 2)} | ${r.firstLimit} |`,
    );
  return lines.join('\n');
}

function chart(rows: readonly CompareRow[], fullPercent: number): string {
  return lineChart({
    title: `claims/s at AWS's limits, ${fullPercent} % full (simulated)`,
    xLabel: 'containers',
    yLabel: 'claims/s',
    logX: true,
    logY: true,
    series: (Object.keys(DESIGNS) as Design[]).map((design) => ({
      name: design,
      points: rows
        .filter((r) => r.design === design && r.fullPercent === fullPercent)
        .map((r) => [r.containers, Math.max(r.perSecond, 0.1)] as const),
    })),
  });
}

function publish(rows: readonly CompareRow[], saved: string): void {
  for (const full of [0, 90]) writeFileSync(new URL(`compare-${full}.svg`, RESULTS), chart(rows, full));
  const doc = readFileSync(DOC, 'utf8');
  const at = doc.indexOf(START);
  const to = doc.indexOf(END);
  if (at < 0 || to < 0) throw new Error('SIMULATION.md has no compare markers');
  const goals = compareGoals(rows)
    .map((g) => `- ${g.goal}: ${g.figure}, ${verdict(g.met)} (first limits: ${g.limits})`)
    .join('\n');
  const body = `${doc.slice(0, at + START.length)}\n${ABOUT} ${saved}\n\n${goals}\n\n${compareTable(rows)}\n${doc.slice(to)}`;
  const top = body.indexOf(GOALS_START);
  const topEnd = body.indexOf(GOALS_END);
  if (top < 0 || topEnd < 0) throw new Error('SIMULATION.md has no compare-goals markers');
  writeFileSync(DOC, `${body.slice(0, top + GOALS_START.length)}\n${goalsTable(rows)}\n${body.slice(topEnd)}`);
}

interface Saved {
  readonly commit: string;
  readonly quick: boolean;
  readonly rows: (CompareRow & { readonly commit?: string })[];
}

/** The same JSON (and stdout bytes) for rows of one grid, whichever way they were run. */
function written(rows: readonly CompareRow[], ranOn: string, quick: boolean, extra: object = {}): string {
  const out = {
    commit: ranOn,
    quick,
    ...extra,
    geometry: quick ? QUICK_GEOMETRY : GEOMETRY,
    quotas: COMPARE_QUOTAS,
    leaseIndexShards: SHARDS,
    goals: compareGoals(rows).map((g) => ({ ...g, ratio: round(g.ratio) })),
    rows,
  };
  return `${JSON.stringify(out, (_k, v: unknown) => (typeof v === 'number' ? round(v) : v), 2)}\n`;
}

const cellKey = (c: { design: string; fullPercent: number; containers: number }) =>
  `${c.design}:${c.fullPercent}:${c.containers}`;

/**
 * Joins the parts' rows in the grid's order; a later part's row of a cell replaces an earlier one's. Parts of
 * several commits: each row names its commit, and the grid is marked partial with the cells no part has.
 */
function join(files: readonly string[]): void {
  const parts = files.map((file) => JSON.parse(readFileSync(file, 'utf8')) as Saved);
  if (parts.some((p) => p.quick)) throw new Error('a quick grid among the parts');
  const commits = [...new Set(parts.map((p) => p.commit))];
  const byCell = new Map(
    parts.flatMap((p) =>
      p.rows.map((r) => [cellKey(r), commits.length > 1 ? { ...r, commit: r.commit ?? p.commit } : r]),
    ),
  );
  const grid = compareGrid(false);
  const rows = grid.flatMap((c) => byCell.get(cellKey(c)) ?? []);
  if (rows.length !== byCell.size) throw new Error('rows of cells outside the grid');
  const missing = grid
    .filter((c) => !byCell.has(cellKey(c)))
    .map((c) => `${c.design} ${c.fullPercent}% x${c.containers}`);
  const ranOn = commits.join(' and ');
  const extra = missing.length ? { partial: true, missingCells: missing } : {};
  writeFileSync(new URL('compare.json', RESULTS), written(rows, ranOn, false, extra));
  const partial = missing.length
    ? ` **Partial**: ${rows.length} of ${grid.length} cells, the rest did not run in the session on this shared machine (${missing.length} missing, listed in the JSON)${commits.length > 1 ? '; each row names its commit' : ''}.`
    : '';
  publish(rows, `Grid run on ${ranOn} ([sim/results/compare.json](sim/results/compare.json)).${partial}`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      out: { type: 'string' },
      only: { type: 'string' },
      // design:full:containers, repeatable: just those cells of the full grid (e.g. the goals' cells).
      case: { type: 'string', multiple: true },
      // The JSON files of runs of parts of the full grid, on one commit: joined in the grid's order.
      join: { type: 'string', multiple: true },
    },
  });
  if (values.join?.length) return join(values.join);
  const quick = values.quick;
  const ranOn = commit();
  const rows: CompareRow[] = [];
  const picked = (values.case ?? []).map((c) => c.split(':'));
  const cells = compareGrid(quick, values.only).filter(
    (c) =>
      !picked.length ||
      picked.some(([d, p, n]) => c.design === d && c.fullPercent === Number(p) && c.containers === Number(n)),
  );
  for (const cell of cells) {
    const started = performance.now();
    const row = await compareCell(cell);
    rows.push(row);
    // Wall time on stderr: stdout and the files stay the same bytes for the same commit and arguments.
    process.stdout.write(
      `${row.design} ${row.fullPercent}% x${row.containers}: ${f(row.perSecond, 1)}/s p99 ${f(row.p99Ms)} ms, ${f(row.requestsPerClaim, 2)} req, ${f(row.writeUnitsPerClaim, 2)} WCU, ${f(row.readUnitsPerClaim, 2)} RCU, $${f(row.usdPerMillionClaims, 2)}/M; ${row.firstLimit}\n`,
    );
    process.stderr.write(`  (${((performance.now() - started) / 1000).toFixed(1)} s wall)\n`);
  }
  const json = written(rows, ranOn, quick);
  mkdirSync(RESULTS, { recursive: true });
  const file = values.out ?? new URL(quick ? 'compare-quick.json' : 'compare.json', RESULTS).pathname;
  writeFileSync(file, json);
  if (!quick && !values.only && !values.out && !picked.length)
    publish(rows, `Grid run on ${ranOn} ([sim/results/compare.json](sim/results/compare.json)).`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
