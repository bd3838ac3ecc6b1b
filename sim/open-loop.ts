/**
 * npm run sim:open-loop -- [--case NAME ...] [--seconds S] [--rate R] [--seed N]
 *
 * The open-loop projection: allocations arrive as a Poisson process at a target rate on a /16 (each released after
 * an exponential hold of 2 s), through API Gateway's and Lambda's limits, on a table with AWS's quotas and ramps
 * (quotas.ts); latency counts from arrival to answer, retries included; a refused request is counted as refused.
 * The stream function (8 shards) and the reconciler run throughout, with every invariant of the simulator on.
 * Deterministic (seeded): the same case prints the same bytes.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { DEPLOYED_MAPPING } from '../aws-emulation/stream-delivery.ts';
import { formatOutcome } from './report.ts';
import { AWS_DEFAULTS, warmed, type Quotas } from './quotas.ts';
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

/**
 * The moonshot's pools. They share no item (every key of a pool holds its name), only the table's partitions and
 * quotas, API Gateway's and Lambda's account limits and the stream's shards: one pool on 1/POOLS of each of those
 * meets, partition for partition, the load each of the table's partitions meets from all POOLS pools (keys spread by
 * hash), and each of its own keys keeps a whole partition's limit, as in the full table. What the sample cannot show:
 * two pools' hot keys landing on one partition, and the one Lambda function's scaling seen by all pools at once (the
 * sample gets 1/POOLS of it).
 */
export const MOONSHOT_POOLS = 100;

/** A table's quotas and partitions cut to a 1/n share. */
function share(q: Quotas, n: number): Quotas {
  const partitions = typeof q.partitions === 'number' ? Math.max(1, Math.round(q.partitions / n)) : q.partitions;
  return {
    ...q,
    tableReadUnits: q.tableReadUnits / n,
    tableWriteUnits: q.tableWriteUnits / n,
    startReadUnits: q.startReadUnits / n,
    startWriteUnits: q.startWriteUnits / n,
    partitions,
  };
}

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
  // The moonshot: 100,000 claims/s across POOLS pools at a large account's raised quotas, run as a sample (see
  // MOONSHOT_POOLS): one pool simulated in full at its share of the load, on its share of every shared limit.
  moonshot: {
    what: `one of ${MOONSHOT_POOLS} pools sampled, each offered 1/${MOONSHOT_POOLS} of 100,000/s, on 1/${MOONSHOT_POOLS} of the raised shared limits: table and index quotas 1,200,000 units (warmed: 12 of 1,200 partitions), API Gateway 250,000 rps, Lambda 20,000 concurrent with 8,000 provisioned and the fixed scaling rate of 1,000 per 10 s; 12 stream shards; LEASE_INDEX_SHARDS 16 a pool`,
    rate: 100_000 / MOONSHOT_POOLS,
    scenario: {
      ...base,
      quotas: share(
        { ...warmed(AWS_DEFAULTS, 1_200_000, 1_200_000), tableReadUnits: 1_200_000, tableWriteUnits: 1_200_000 },
        MOONSHOT_POOLS,
      ),
      apiGateway: { rps: 250_000 / MOONSHOT_POOLS, burst: 125_000 / MOONSHOT_POOLS },
      maxContainers: 20_000 / MOONSHOT_POOLS,
      lambdaScalePer10s: 1000 / MOONSHOT_POOLS,
      lambdaProvisioned: 8000 / MOONSHOT_POOLS,
      streamShards: 1200 / MOONSHOT_POOLS,
      indexShards: 16,
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
      // Also write each case's report to this file (the moonshot's sim/results/moonshot.txt).
      save: { type: 'string' },
    },
  });
  // The moonshot runs only when asked for (npm run sim:moonshot).
  for (const name of values.case ?? Object.keys(CASES).filter((n) => n !== 'moonshot')) {
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
    const report = `case ${name} (${c.what}): ${rate}/s offered for ${seconds} s, ${settings}\n${formatOutcome(outcome, { replay: `npm run sim:open-loop -- ${process.argv.slice(2).join(' ')}` })}\n`;
    process.stdout.write(`${report}wall ${((performance.now() - started) / 1000).toFixed(0)} s\n\n`);
    if (values.save) writeFileSync(values.save, report);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
