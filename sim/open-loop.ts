/**
 * npm run sim:open-loop -- [--case NAME ...] [--seconds S] [--rate R] [--seed N]
 *
 * The open-loop projection: allocations arrive as a Poisson process at a target rate on a /16 (each released after
 * an exponential hold of 2 s), through API Gateway's and Lambda's limits, on a table with AWS's quotas and ramps
 * (quotas.ts); latency counts from arrival to answer, retries included; a refused request is counted as refused.
 * The stream function (8 shards) and the reconciler run throughout, with every invariant of the simulator on.
 * Deterministic (seeded): the same case prints the same bytes.
 */
import { parseArgs } from 'node:util';
import { DEPLOYED_MAPPING } from '../aws-emulation/stream-delivery.ts';
import { formatOutcome } from './report.ts';
import { AWS_DEFAULTS, warmed } from './quotas.ts';
import { SCENARIOS } from './scenarios.ts';
import { World, type Scenario } from './world.ts';

const base: Scenario = {
  ...SCENARIOS.calm!,
  name: 'open-loop',
  cidrs: ['10.0.0.0/16'],
  ipv6: undefined,
  legacy: false,
  clients: 0,
  maxContainers: 1000,
  checkEveryMs: 1000,
  streamShards: 8,
};

/** The capacity table's rows: default quotas on a fresh and a warmed table, and stated increases. */
export const CASES: Readonly<
  Record<string, { readonly what: string; readonly rate: number; readonly scenario: Scenario }>
> = {
  fresh: { what: 'default quotas, a new on-demand table', rate: 1000, scenario: { ...base, quotas: AWS_DEFAULTS } },
  // Offered at about 90 % of its quota-bound rate (SIMULATION.md, "Capacity"); 64 index shards (LEASE_INDEX_SHARDS is
  // the deployment's setting, not an AWS quota).
  warm: {
    what: 'default quotas, a table warmed to its table-level quota (40,000 read and write units), LEASE_INDEX_SHARDS 64',
    rate: 4200,
    scenario: { ...base, quotas: warmed(AWS_DEFAULTS, 40_000, 40_000), indexShards: 64 },
  },
  increased: {
    what: 'table and index quotas 150,000 units, warmed to it; API Gateway 25,000 rps; Lambda 3,000 concurrent; LEASE_INDEX_SHARDS 256',
    rate: 10_000,
    // A cycle costs about 10 table write units since the freed counters: 100,000 would cap it near 9,800/s.
    // 256 shards: on the warmed index's 150 partitions the fullest holds about 9 of the 512 listing keys
    // (docs/deploy.md's sizing table), ~700 write units a second at 10,000 cycles.
    scenario: {
      ...base,
      quotas: { ...warmed(AWS_DEFAULTS, 150_000, 150_000), tableReadUnits: 150_000, tableWriteUnits: 150_000 },
      apiGateway: { rps: 25_000, burst: 12_500 },
      maxContainers: 3000,
      indexShards: 256,
    },
  },
};

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      case: { type: 'string', multiple: true },
      seconds: { type: 'string' },
      rate: { type: 'string' },
      seed: { type: 'string' },
      shards: { type: 'string' },
      'latency-scale': { type: 'string' },
      progress: { type: 'boolean' },
      'batch-size': { type: 'string' },
    },
  });
  for (const name of values.case ?? Object.keys(CASES)) {
    const c = CASES[name];
    if (!c) throw new Error(`unknown case ${name}; known: ${Object.keys(CASES).join(', ')}`);
    const rate = values.rate !== undefined ? Number(values.rate) : c.rate;
    const seconds = values.seconds !== undefined ? Number(values.seconds) : 20;
    const shards = values.shards !== undefined ? Number(values.shards) : c.scenario.indexShards;
    const latencyScale = values['latency-scale'] !== undefined ? Number(values['latency-scale']) : undefined;
    const started = performance.now();
    const world = new World(Number(values.seed ?? 1), {
      ...c.scenario,
      durationMs: seconds * 1000,
      arrivals: { perSecond: rate, holdMs: 2000 },
      ...(shards !== undefined ? { indexShards: shards } : {}),
      ...(latencyScale !== undefined ? { latencyScale } : {}),
      ...(values['batch-size'] !== undefined
        ? { streamMapping: { ...DEPLOYED_MAPPING, batchSize: Number(values['batch-size']) } }
        : {}),
    });
    // Progress on stderr (wall time varies; stdout stays the same bytes for the same arguments).
    const timer = values.progress
      ? setInterval(
          () =>
            process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(0)} s wall] ${world.progress()}\n`),
          30_000,
        )
      : undefined;
    const outcome = await world.run();
    clearInterval(timer);
    const settings = `${shards ?? 8} index shards${latencyScale !== undefined ? `, latencies x${latencyScale}` : ''}${values['batch-size'] !== undefined ? `, stream batches of ${values['batch-size']}` : ''}`;
    process.stdout.write(
      `case ${name} (${c.what}): ${rate}/s offered for ${seconds} s, ${settings}\n${formatOutcome(outcome, { replay: `npm run sim:open-loop -- ${process.argv.slice(2).join(' ')}` })}\nwall ${((performance.now() - started) / 1000).toFixed(0)} s\n\n`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
