/**
 * Fills a range over HTTP against the local stack, as many clients of a deployed stage would: a benchmark figure,
 * not a test (the end-to-end fill goal in BENCHMARKS.md).
 *
 *   npm run bench:http -- [--prefix 20] [--callers 32]
 *
 * Starts its own local stack with the stream poller (serverless-offline gives each concurrent request its own
 * container, so every caller meets cold and warm containers as deployed; the stream function keeps the occupancy
 * summary from DynamoDB Local's stream), creates a pool with one 10.80.0.0/<prefix> range, and lets `callers`
 * clients claim dynamic addresses until each is told RangeFull. A 503 is retried after a short pause, as a client
 * would, and counted. It checks that every host address was handed out exactly once, and reports the rate of each
 * tenth of the fill: the last tenth (the range nearly full) against the median tenth. Writes
 * bench/results/http-fill.json, which the full benchmark report (BENCHMARKS.md) shows.
 *
 * `--tally` puts a counting proxy (bench/lib/dynamo-tally.ts) between the functions and DynamoDB Local and adds, per
 * tenth of the fill (and for the RangeFull answers after it), what each allocation cost in requests, read units,
 * collisions, seal reads and bulk lease reads: figures that do not move with the machine's load.
 */
import { writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { capacity, lowerBandSize, parseCidr } from '../shared/core/ip/cidr.ts';
import { startLocalStack } from '../scripts/local-stack.ts';
import { startTallyProxy, type TallyProxy } from './lib/dynamo-tally.ts';
import { cpuSeconds } from './lib/proc-cpu.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: {
    prefix: { type: 'string', default: '20' },
    callers: { type: 'string', default: '32' },
    out: { type: 'string' },
    tally: { type: 'boolean', default: false },
  },
});
const cidrText = `10.80.0.0/${Number(values.prefix)}`;
const callers = Number(values.callers);
const cidr = parseCidr(cidrText);
const size = Number(capacity(cidr));
/** Addresses in a tenth of the fill, and in the range's lower band (KEP-3070), taken last. */
const tenth = Math.floor(size / 10);
const lower = Number(lowerBandSize(cidr));

/** The phase a moment of the fill belongs to: before it, a tenth of it (by addresses handed out), or after it. */
function phaseOf(filling: boolean, allocated: number): string {
  if (!filling) return 'setup';
  if (allocated >= size) return 'after';
  const t = Math.min(9, Math.floor(allocated / tenth));
  // The last tenth in two: the upper band's tail, then the lower band (KEP-3070), taken once the upper is used up.
  if (t === 9) return allocated < size - lower ? 't9-upper' : 't9-lower';
  return `t${t}`;
}

async function main(): Promise<number> {
  console.log('starting a local stack (with the stream poller)...');
  let filling = false;
  const got: { address: string; at: number; start: number }[] = [];
  /** 503 answers and RangeFull answers per phase. */
  const answers = new Map<string, { notReady: number; rangeFull: number }>();
  /** HTTP requests per phase (the phase at their start): how many, and the milliseconds callers waited for answers. */
  const http = new Map<string, { requests: number; ms: number }>();
  const count = (what: 'notReady' | 'rangeFull') => {
    const phase = phaseOf(filling, got.length);
    const entry = answers.get(phase) ?? { notReady: 0, rangeFull: 0 };
    answers.set(phase, entry);
    entry[what] += 1;
  };
  const proxy: TallyProxy | undefined = values.tally
    ? await startTallyProxy(() => phaseOf(filling, got.length))
    : undefined;
  const stack = await startLocalStack({
    log: () => undefined,
    ...(proxy
      ? { functionsEndpoint: { endpoint: proxy.endpoint, onDynamo: (endpoint: string) => (proxy.target = endpoint) } }
      : {}),
  });
  try {
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${stack.apiUrl}${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, body: (await res.json().catch(() => ({}))) as Record<string, unknown> };
    };
    if ((await call('POST', '/v1/pools', { name: 'http-fill' })).status !== 201)
      throw new Error('could not create the pool');
    if ((await call('POST', '/v1/pools/http-fill/ranges', { cidr: cidrText })).status !== 201)
      throw new Error('could not create the range');
    /** When each RangeFull answer arrived: one that came before a later request still got an address was false. */
    const refusedAt: number[] = [];
    const statuses = new Map<number, number>();
    // With --tally, CPU seconds of the parts (DynamoDB Local; serverless-offline, whose functions run in worker threads
    // of its process; this process: the callers, the console server, the stream poller and the proxy), charged every
    // 100 ms to the phase being filled; without it, no sampling in the process being measured.
    const cpuNow = () => ({
      dynamodb: cpuSeconds(stack.pids.dynamodb),
      functions: cpuSeconds(stack.pids.offline),
      bench: cpuSeconds('self'),
    });
    const cpu = new Map<string, { dynamodb: number; functions: number; bench: number }>();
    let cpuBefore = cpuNow();
    const cpuTick = () => {
      const now = cpuNow();
      const phase = phaseOf(filling, got.length);
      const entry = cpu.get(phase) ?? { dynamodb: 0, functions: 0, bench: 0 };
      cpu.set(phase, entry);
      for (const part of ['dynamodb', 'functions', 'bench'] as const) entry[part] += now[part] - cpuBefore[part];
      cpuBefore = now;
    };
    const sampler = proxy ? setInterval(cpuTick, 100) : undefined;
    const started = performance.now();
    filling = true;
    await Promise.all(
      Array.from({ length: callers }, async (_, c) => {
        for (let n = 0; ; n += 1) {
          const start = performance.now() - started;
          const phase = phaseOf(filling, got.length);
          const res = await call('POST', '/v1/pools/http-fill/claims', {
            name: `c${c}-${n}`,
            owner: { kind: 'Pod', name: `caller-${c}`, uid: `caller-${c}` },
          });
          const waited = http.get(phase) ?? { requests: 0, ms: 0 };
          http.set(phase, waited);
          waited.requests += 1;
          waited.ms += performance.now() - started - start;
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (res.status === 201) {
            got.push({
              address: (res.body.addresses as { address: string }[])[0]!.address,
              at: performance.now() - started,
              start,
            });
            continue;
          }
          if (res.status === 409 && res.body.code === 'RangeFull') {
            count('rangeFull');
            refusedAt.push(performance.now() - started);
            return;
          }
          if (res.status === 503) {
            // A client's retry of a busy answer: the same name again after a pause.
            count('notReady');
            n -= 1;
            await new Promise((r) => setTimeout(r, 50 + Math.random() * 100));
            continue;
          }
          throw new Error(`caller ${c}: ${res.status} ${JSON.stringify(res.body)}`);
        }
      }),
    );
    if (sampler) {
      cpuTick();
      clearInterval(sampler);
    }
    const seconds = (performance.now() - started) / 1000;
    const distinct = new Set(got.map((g) => g.address)).size;
    got.sort((a, b) => a.at - b.at);
    const rates: number[] = [];
    for (let t = 0; t < 10; t += 1) {
      const from = got[t * tenth]?.at ?? 0;
      const to = got[Math.min(got.length - 1, (t + 1) * tenth - 1)]?.at ?? from;
      rates.push(Math.round((tenth / Math.max(0.001, (to - from) / 1000)) * 10) / 10);
    }
    const median = [...rates].sort((a, b) => a - b)[5]!;
    // The last tenth's two phases: from the first address of each to its last, in seconds.
    const span = (from: number, to: number) =>
      Math.round(((got[Math.min(got.length - 1, to)]?.at ?? 0) - (got[from]?.at ?? 0)) / 10) / 100;
    const lastTenthSeconds = { upperTail: span(9 * tenth, size - lower - 1), lowerBand: span(size - lower, size - 1) };
    // A fill releases nothing: an address handed out by a request that started after a RangeFull arrived was free
    // during the whole refused request.
    const lastStart = Math.max(...got.map((g) => g.start));
    const falseRangeFull = refusedAt.filter((at) => at < lastStart).length;
    const last = rates[9]!;
    const result = {
      cidr: cidrText,
      size,
      callers,
      seconds: Math.round(seconds * 10) / 10,
      allocated: got.length,
      distinct,
      statuses: Object.fromEntries(statuses),
      tenthRates: rates,
      lastTenthVsMedian: Math.round((last / median) * 100) / 100,
      falseRangeFull,
      lastTenthSeconds,
      ...(proxy ? { perPhase: perPhase(proxy, got.length, answers, http, cpu) } : {}),
      met: {
        everyAddressOnce: got.length === size && distinct === size,
        no503: !statuses.has(503),
        lastTenth: last >= median / 2,
        noFalseRangeFull: falseRangeFull === 0,
      },
      machine: `${cpus().length} cores, load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
      at: new Date().toISOString(),
    };
    console.log(JSON.stringify(result, null, 2));
    const out = values.out ?? join(repoRoot, 'bench', 'results', 'http-fill.json');
    await writeFile(out, `${JSON.stringify(result, null, 2)}\n`);
    console.log(`wrote ${out}`);
    return result.met.everyAddressOnce ? 0 : 1;
  } finally {
    await stack.stop();
    await proxy?.close();
  }
}

/**
 * Per phase, per allocation handed out in it: DynamoDB requests and read units of the functions (the stream
 * function's apart), and the kinds of request (dynamo-tally.ts) with their refusals and keys.
 */
function perPhase(
  proxy: TallyProxy,
  allocated: number,
  answers: ReadonlyMap<string, { notReady: number; rangeFull: number }>,
  http: ReadonlyMap<string, { requests: number; ms: number }>,
  cpu: ReadonlyMap<string, Record<'dynamodb' | 'functions' | 'bench', number>>,
) {
  const allocationsIn = (phase: string): number => {
    if (phase === 'setup' || phase === 'after') return 0;
    if (phase === 't9-upper') return Math.min(allocated, size - lower) - 9 * tenth;
    if (phase === 't9-lower') return Math.min(allocated, size) - (size - lower);
    const t = Number(phase.slice(1));
    return Math.min(allocated, (t + 1) * tenth) - t * tenth;
  };
  const round = (n: number) => Math.round(n * 100) / 100;
  return Object.fromEntries(
    [...proxy.phases.entries()].map(([phase, tally]) => {
      const n = allocationsIn(phase);
      const mirror = tally.kinds.mirror?.requests ?? 0;
      const per = (x: number) => (n > 0 ? round(x / n) : x);
      return [
        phase,
        {
          allocations: n,
          ...answers.get(phase),
          httpRequests: http.get(phase)?.requests ?? 0,
          // What callers waited for answers, per allocation (32 callers wait at once: the phase's seconds x callers).
          callerMsPerAllocation: per(Math.round(http.get(phase)?.ms ?? 0)),
          requestsPerAllocation: per(tally.requests - mirror),
          // CPU milliseconds per allocation of each part (sampled every 100 ms: the phases' edges blur by that).
          cpuMsPerAllocation: Object.fromEntries(
            Object.entries(cpu.get(phase) ?? {}).map(([part, s]) => [part, per(Math.round(s * 1000))]),
          ),
          readUnitsPerAllocation: per(tally.readUnits),
          collisions: tally.kinds.commit?.refused ?? 0,
          kinds: Object.fromEntries(
            Object.entries(tally.kinds)
              .sort(([a], [b]) => a.localeCompare(b))
              .map(([kind, k]) => [kind, { ...k, ms: Math.round(k.ms) }]),
          ),
        },
      ];
    }),
  );
}

process.exitCode = await main().catch((error: unknown) => {
  console.error(error);
  return 1;
});
