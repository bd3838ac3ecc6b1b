/**
 * `npm run bench [-- --quick] [--only a,b] [--strategies x,y] [--out dir]`: runs the allocation strategies side by side on one
 * DynamoDB Local, writes <out>/<scenario>.json, SVG charts and BENCHMARKS.md, and exits non-zero when a correctness
 * check broke (an address held twice, wrong counts at exhaustion) or a scenario crashed.
 *
 * Full runs write to bench/results and BENCHMARKS.md (committed); quick runs to bench/results/quick (ignored), so
 * the test suite's quick run never overwrites the committed figures.
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { PickStrategy } from '../shared/core/allocator/lease-allocator.ts';
import { Engine } from './lib/harness.ts';
import { loadAverage, machineInfo } from './lib/machine.ts';
import {
  consoleMapGoal,
  evaluateGoals,
  httpFillGoal,
  renderReport,
  renderSummary,
  type ConsoleMapBench,
  type GoalRow,
  type HttpFill,
  type ReportInput,
} from './lib/report.ts';
import { round, type RunContext, type Scenario, type ScenarioResult } from './lib/results.ts';
import { blocksScenario } from './scenarios/blocks.ts';
import { cniScenario } from './scenarios/cni.ts';
import { coldStartScenario } from './scenarios/cold-start.ts';
import { dnsScenario } from './scenarios/dns.ts';
import { exhaustionScenario } from './scenarios/exhaustion.ts';
import { historyScenario } from './scenarios/history.ts';
import { mirrorCostScenario } from './scenarios/mirror-cost.ts';
import { modelCheckScenario } from './scenarios/model-check.ts';
import { occupancyCostScenario } from './scenarios/occupancy-cost.ts';
import { reconcilerCostScenario } from './scenarios/reconciler-cost.ts';
import { throughputScenario } from './scenarios/throughput.ts';
import { bitmapCasStrategy } from './strategies/bitmap-cas.ts';
import { globalLockStrategy } from './strategies/global-lock.ts';
import { leaseStrategy } from './strategies/lease.ts';
import type { Strategy } from './strategies/strategy.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** Every strategy of the comparison, in the order tables and charts show them. */
export const STRATEGIES: readonly Strategy[] = [
  leaseStrategy(PickStrategy.Hinted),
  leaseStrategy(PickStrategy.Blind),
  bitmapCasStrategy,
  globalLockStrategy(500),
  globalLockStrategy(10),
];

/** Every scenario; the mirror and cold start run before the others read their figures in the goals table. */
export const SCENARIOS: readonly Scenario[] = [
  coldStartScenario,
  mirrorCostScenario,
  throughputScenario,
  occupancyCostScenario,
  exhaustionScenario,
  reconcilerCostScenario,
  cniScenario,
  historyScenario,
  blocksScenario,
  modelCheckScenario,
  dnsScenario,
];

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      only: { type: 'string' },
      strategies: { type: 'string' },
      out: { type: 'string' },
      'report-only': { type: 'boolean', default: false },
    },
    allowPositionals: false,
  });
  const quick = values.quick === true;
  const resultsDir = resolve(values.out ?? join(ROOT, quick ? 'bench/results/quick' : 'bench/results'));
  const reportPath = values.out
    ? join(resultsDir, 'BENCHMARKS.md')
    : join(ROOT, quick ? 'bench/results/quick/BENCHMARKS.md' : 'BENCHMARKS.md');
  const only = values.only ? new Set(values.only.split(',').map((s) => s.trim())) : undefined;
  const scenarios = SCENARIOS.filter((s) => !only || only.has(s.name));
  if (only)
    for (const name of only)
      if (!SCENARIOS.some((s) => s.name === name))
        throw new Error(`unknown scenario ${name}; known: ${SCENARIOS.map((s) => s.name).join(', ')}`);
  await mkdir(resultsDir, { recursive: true });
  const resultsLink = relative(dirname(reportPath), resultsDir) ? `${relative(dirname(reportPath), resultsDir)}/` : '';
  if (values['report-only']) return renderOnly(resultsDir, reportPath, resultsLink);

  const started = performance.now();
  const startedAt = new Date().toISOString();
  const load = { start: loadAverage(), end: 0, max: loadAverage() };
  let scenarioLoad = { ...load };
  const sampler = setInterval(() => {
    const now = loadAverage();
    load.max = Math.max(load.max, now);
    scenarioLoad.max = Math.max(scenarioLoad.max, now);
  }, 5000);
  const log = (message: string) => console.log(`[bench ${round((performance.now() - started) / 1000, 0)}s] ${message}`);
  // --strategies narrows a run to some strategies (for trying a change); reports compare whatever ran.
  const picked = values.strategies ? new Set(values.strategies.split(',').map((s) => s.trim())) : undefined;
  if (picked)
    for (const name of picked)
      if (!STRATEGIES.some((s) => s.name === name))
        throw new Error(`unknown strategy ${name}; known: ${STRATEGIES.map((s) => s.name).join(', ')}`);
  const availability = await Promise.all(
    STRATEGIES.filter((s) => !picked || picked.has(s.name)).map(async (s) => ({
      strategy: s,
      unavailable: await s.unavailable(),
    })),
  );
  for (const a of availability) if (a.unavailable) log(`strategy ${a.strategy.name}: ${a.unavailable}`);
  const strategies = availability.filter((a) => !a.unavailable).map((a) => a.strategy);

  const engine = await Engine.start();
  const results: ScenarioResult[] = [];
  let crashed = false;
  try {
    const ctx: RunContext = { engine, quick, strategies, resultsDir, log };
    for (const scenario of scenarios) {
      log(`scenario ${scenario.name}`);
      scenarioLoad = { start: loadAverage(), end: 0, max: loadAverage() };
      let result: ScenarioResult;
      try {
        result = await scenario.run(ctx);
      } catch (error) {
        crashed = true;
        const message =
          error instanceof Error ? `${error.name}: ${error.message}\n${error.stack ?? ''}` : String(error);
        console.error(`scenario ${scenario.name} crashed: ${message}`);
        result = {
          name: scenario.name,
          title: scenario.title,
          status: 'failed',
          failures: [`crashed: ${message.split('\n')[0]}`],
          notes: [],
          parameters: {},
          rows: [],
          seconds: 0,
          charts: [],
        };
      }
      scenarioLoad.end = loadAverage();
      result = { ...result, load: { ...scenarioLoad, max: Math.max(scenarioLoad.max, scenarioLoad.end) } };
      results.push(result);
      await writeFile(
        join(resultsDir, `${result.name}.json`),
        `${JSON.stringify({ ...result, quick, startedAt }, null, 2)}\n`,
      );
      for (const f of result.failures) console.error(`FAILED ${scenario.name}: ${f}`);
    }
  } finally {
    await engine.stop();
    clearInterval(sampler);
  }
  load.end = loadAverage();
  // An --only run rebuilds the whole report: this run's scenarios beside the other scenarios' last result files.
  const reported = only ? await resultsOnFile(resultsDir, results) : results;
  const goals = [
    ...evaluateGoals(reported),
    httpFillGoal(await readHttpFill(resultsDir)),
    consoleMapGoal(await readConsoleMap(resultsDir)),
  ];
  const seconds = (performance.now() - started) / 1000;
  const reportInput: ReportInput = {
    results: reported,
    machine: machineInfo(),
    quick,
    seconds,
    load,
    startedAt,
    resultsLink,
    notes: await writtenNotes(),
    strategies: availability.map((a) => ({
      name: a.strategy.name,
      description: a.strategy.description,
      ...(a.unavailable ? { unavailable: a.unavailable } : {}),
    })),
  };
  await writeReports(reportPath, reportInput, goals);
  const { results: _results, notes: _notes, ...runInfo } = reportInput;
  await writeFile(join(resultsDir, 'run.json'), `${JSON.stringify(runInfo, null, 2)}\n`);
  await writeFile(join(resultsDir, 'goals.json'), `${JSON.stringify(goals, null, 2)}\n`);
  for (const g of goals)
    log(`goal [${g.met === undefined ? 'n/a' : g.met ? 'met' : 'not met'}] ${g.scenario}: ${g.goal} -> ${g.measured}`);
  const failed = crashed || results.some((r) => r.failures.length > 0);
  log(`done in ${round(seconds, 0)} s; report ${reportPath}; ${failed ? 'FAILED' : 'all correctness checks passed'}`);
  return failed ? 1 : 0;
}

/** Re-renders BENCHMARKS.md and goals.json from a finished run's files (after a change to the report's wording). */
async function renderOnly(resultsDir: string, reportPath: string, resultsLink: string): Promise<number> {
  const run = JSON.parse(await readFile(join(resultsDir, 'run.json'), 'utf8')) as Omit<
    ReportInput,
    'results' | 'resultsLink'
  >;
  const results = await resultsOnFile(resultsDir, []);
  const goals = [
    ...evaluateGoals(results),
    httpFillGoal(await readHttpFill(resultsDir)),
    consoleMapGoal(await readConsoleMap(resultsDir)),
  ];
  await writeReports(reportPath, { ...run, results, resultsLink, notes: await writtenNotes() }, goals);
  await writeFile(join(resultsDir, 'goals.json'), `${JSON.stringify(goals, null, 2)}\n`);
  console.log(`report ${reportPath} re-rendered from ${resultsDir}`);
  return results.some((r) => r.failures.length > 0) ? 1 : 0;
}

/**
 * BENCHMARKS.md, the results page (renderSummary), and BENCHMARKS-archive.md beside it with every table and note
 * (renderReport).
 */
async function writeReports(reportPath: string, input: ReportInput, goals: readonly GoalRow[]): Promise<void> {
  const archivePath = reportPath.replace(/\.md$/, '-archive.md');
  const archiveName = archivePath.slice(archivePath.lastIndexOf('/') + 1);
  const full = renderReport(input, goals).split('\n');
  const archive = [
    '# Benchmarks archive: every table and note',
    '',
    'The results page is [BENCHMARKS.md](BENCHMARKS.md).',
    '',
    ...full.slice(2),
  ].join('\n');
  await writeFile(archivePath, archive);
  await writeFile(reportPath, renderSummary(input, goals, archiveName));
}

/** bench/notes/*.md in name order: analyses written by hand that the report carries as they are. */
async function writtenNotes(): Promise<string[]> {
  const dir = join(ROOT, 'bench/notes');
  const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith('.md')).sort();
  return Promise.all(names.map((n) => readFile(join(dir, n), 'utf8')));
}

/** Every scenario's result, in report order: `fresh` where given, else its last result file in `resultsDir`. */
async function resultsOnFile(resultsDir: string, fresh: readonly ScenarioResult[]): Promise<ScenarioResult[]> {
  const results: ScenarioResult[] = [];
  for (const scenario of SCENARIOS) {
    const ran = fresh.find((r) => r.name === scenario.name);
    if (ran) {
      results.push(ran);
      continue;
    }
    const text = await readFile(join(resultsDir, `${scenario.name}.json`), 'utf8').catch(() => undefined);
    results.push(
      text
        ? (JSON.parse(text) as ScenarioResult)
        : {
            name: scenario.name,
            title: scenario.title,
            status: 'unavailable',
            unavailable:
              'not measured in this report: no full-run result file (its last full run was stopped before the scenario ended, for the session time limit)',
            failures: [],
            notes: [],
            parameters: {},
            rows: [],
            seconds: 0,
            charts: [],
          },
    );
  }
  return results;
}

process.exitCode = await main().catch((error: unknown) => {
  console.error(error);
  return 1;
});

/** The last `npm run bench:http` result beside this run's files, if any. */
async function readHttpFill(resultsDir: string): Promise<HttpFill | undefined> {
  try {
    return JSON.parse(await readFile(join(resultsDir, 'http-fill.json'), 'utf8')) as HttpFill;
  } catch {
    return undefined;
  }
}

/** The last `npm run bench:console` result beside this run's files, if any. */
async function readConsoleMap(resultsDir: string): Promise<ConsoleMapBench | undefined> {
  try {
    return JSON.parse(await readFile(join(resultsDir, 'console-map.json'), 'utf8')) as ConsoleMapBench;
  } catch {
    return undefined;
  }
}
