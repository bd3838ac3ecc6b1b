import { readdirSync, readFileSync, statSync } from 'node:fs';
import { setPriority } from 'node:os';
import type { LocalStack } from '../../scripts/local-stack.ts';
import { cpuSeconds, groupCpuSeconds, groupStats } from '../lib/proc-cpu.ts';
import { percentile, round, type RunContext, type Scenario, type ScenarioResult } from '../lib/results.ts';
import { CniLab, type PluginRun } from '../../tests/support/cni.ts';
import { startTestStack } from '../../tests/support/local-stack.ts';
import { CNI_BIN_DIR, whyTierCannotRun } from '../../scripts/system-tiers.ts';
import { PodmanLab } from '../../tests/support/podman.ts';
import { buildEmptyProgram, CNI_STARTUP_GOAL_RATIO, measureStartup } from './cni-startup.ts';

/**
 * The goals: 100 parallel ADDs on one node in 10 s or less and within 2.5x host-local's time; the executable's
 * VERSION start to exit within 1.2x an empty program's built by the same toolchain (cni-startup.ts).
 */
export const CNI_GOALS = {
  addsSeconds: 10,
  addsN: 100,
  addsRatio: 2.5,
  startupRatio: CNI_STARTUP_GOAL_RATIO,
} as const;

/** Containers each runtime run starts at once under Podman (ipam-cni's network, then host-local's); 2 with --quick. */
export const PODMAN_CONTAINERS = 8;

/**
 * The figures before the plugin's speed-up (`npm run bench -- --only cni` on 2026-11-25 16:07 UTC, the machine idle:
 * load average 1.5 at start; `commit` names the checkout), shown beside each run's own.
 */
export const CNI_BEFORE = {
  commit: '7a32cae',
  at: '2026-11-25 16:07 UTC',
  load: 1.5,
  text: '100 ADDs 16.46 s (p50 12.8 s, p99 16.3 s per ADD), host-local 1.09 s (15.1x); 16 ADDs 2.76 s (host-local 0.23 s); 1 ADD 1.05 s; VERSION p50 61 ms',
} as const;

/**
 * DynamoDB Local's JVM here: the client compiler only and the serial collector. A JVM started for a run of a minute
 * spends much of its CPU compiling with C2 and in parallel GC threads; on 2 cores shared with 100 bridge and plugin
 * processes that CPU is taken from the ADDs. Measured with 100 parallel claim requests straight to a fresh stack
 * (three rounds each, twice, load average 15-17): DynamoDB Local used 0.65-1.57 CPU-s per 100 claims with these
 * options, 1.76-3.47 without. DynamoDB, which it stands in for, uses none of the node's CPU.
 */
export const CNI_STACK_JVM_OPTIONS = ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC'] as const;

/**
 * The nice value of every thread of DynamoDB Local and serverless-offline (threads they start later inherit it).
 * Root only, as the tier is. @returns false when the system refused it
 */
function setStackNice(stack: LocalStack, nice: number): boolean {
  try {
    for (const pid of [stack.pids.dynamodb, ...groupStats(stack.pids.offline).keys()]) {
      for (const tid of readdirSync(`/proc/${pid}/task`)) setPriority(Number(tid), nice);
    }
    return true;
  } catch {
    return false;
  }
}

/** The nice value the second 100-ADD run gives the local stack: the service first, as a remote one would be. */
export const STACK_FIRST_NICE = -10;

/** CPU seconds of the parts sharing the machine: the bridge and plugin processes (reaped children), the stack, this process. */
function cpuNow(stack: LocalStack): Record<'plugins' | 'dynamodb' | 'offline' | 'bench', number> {
  return {
    plugins: cpuSeconds('self', true),
    dynamodb: cpuSeconds(stack.pids.dynamodb),
    offline: groupCpuSeconds(stack.pids.offline),
    bench: cpuSeconds('self'),
  };
}

/** One plugin process's moments (ms after the bridges were spawned), from its debug log lines. */
interface PluginTrace {
  start?: number;
  parsed?: number;
  poolKnown?: number;
  /** Set when it checked the pool or waited for another process's check. */
  poolWaitMs?: number;
  claimMs?: number;
  done?: number;
}

/** Reads the plugin's debug timing lines (cni/main.ts) into one trace per process. */
export function pluginTraces(log: string, spawnedAtEpochMs: number): PluginTrace[] {
  const traces = new Map<string, PluginTrace>();
  for (const line of log.split('\n')) {
    const m = /^(\S+) debug (\d+) \S+ \S+ timing: (.*)$/.exec(line);
    if (!m) continue;
    const at = Date.parse(m[1]!) - spawnedAtEpochMs;
    const message = m[3]!;
    const trace = traces.get(m[2]!) ?? {};
    traces.set(m[2]!, trace);
    const since = /\(\+(\d+) ms\)$/.exec(message);
    if (message.startsWith('config parsed') && since) {
      trace.parsed = at;
      trace.start = at - Number(since[1]);
    } else if (message.includes('known to this node')) trace.poolKnown = at;
    else if (message.includes('checked or waited for in')) {
      trace.poolKnown = at;
      trace.poolWaitMs = Number(/in (\d+) ms/.exec(message)?.[1]);
    } else if (/^POST \S+\/claims \S+ in \d+ ms/.test(message))
      trace.claimMs = Number(/in (\d+) ms/.exec(message)?.[1]);
    else if (message.startsWith('done')) trace.done = at;
  }
  return [...traces.values()];
}

/** "p50 X, p90 Y" of the defined values, in seconds or milliseconds. */
function spread(values: readonly (number | undefined)[], unit: 's' | 'ms'): string {
  const defined = values.filter((v): v is number => v !== undefined && Number.isFinite(v));
  if (defined.length === 0) return 'n/a';
  const show = (v: number) => (unit === 's' ? `${round(v / 1000, 2)} s` : `${round(v, 0)} ms`);
  return `p50 ${show(percentile(defined, 50))}, p90 ${show(percentile(defined, 90))}`;
}

/**
 * Pods attached in parallel through Debian's `bridge` into N network namespaces, N = 1, 16, 100, with this plugin as
 * the IPAM (against the local stack) and, in the same run, with the reference `host-local` (a file lock on the node,
 * no network: the floor). Per N: wall time of the N parallel bridge ADDs, per-ADD p50/p99, every address distinct.
 * Also the plugin's start-up beside an empty program built by its toolchain and beside host-local, and its CPU per
 * ADD beside host-local's (cni-startup.ts).
 *
 * The local stack runs its handlers in serverless-offline's process (inProcess): with a worker per concurrent
 * request, N parallel ADDs would pay N cold starts of the bundle on these 2 cores, which a deployed API Gateway and
 * Lambda (warm, and scaled across machines) do not.
 * Each N starts with a fresh node state folder, so the first ADDs also check (and create) the pool.
 */
export const cniScenario: Scenario = {
  name: 'cni',
  title: 'CNI plugin: parallel pod attach through bridge',
  async run(ctx: RunContext): Promise<ScenarioResult> {
    const t0 = performance.now();
    const why = whyTierCannotRun('net');
    if (why)
      return {
        name: 'cni',
        title: this.title,
        status: 'unavailable',
        unavailable: `needs network namespaces: ${why}`,
        failures: [],
        notes: [],
        parameters: {},
        rows: [],
        seconds: 0,
        charts: [],
      };
    const sizes = ctx.quick ? [1, 4] : [1, 16, 100];
    const lab = new CniLab();
    const rows: Record<string, unknown>[] = [];
    const failures: string[] = [];
    const notes: string[] = [
      `Before issue 21's speed-up (main at ${CNI_BEFORE.commit}, ${CNI_BEFORE.at}, load average ${CNI_BEFORE.load} at start, the same command): ${CNI_BEFORE.text}.`,
    ];
    let breakdown: Record<string, unknown> | undefined;
    let executableBytes: number | undefined;
    let startupParameters: Record<string, unknown> = {};
    // The empty program builds while the plugin builds and the stack starts (the stack mostly waits for its JVM).
    const empty = buildEmptyProgram(lab.dir);
    empty.catch(() => undefined);
    await lab.build();
    const stack = await startTestStack({
      inProcess: true,
      dynamoJvmOptions: CNI_STACK_JVM_OPTIONS,
      env: { DYNAMODB_REQUEST_TIMEOUT_MS: '30000' },
    });
    try {
      try {
        const startup = await measureStartup({ ctx, lab, apiUrl: stack.apiUrl, empty });
        rows.push(...startup.rows);
        notes.push(...startup.notes);
        startupParameters = startup.parameters;
      } catch (error) {
        failures.push(`start-up: ${(error as Error).message}`);
      }
      const exe = statSync(lab.pluginPath).size;
      notes.push(
        `The executable (dist/cni/ipam-cni: bun build --compile --bytecode of the esbuild bundle) is ${round(exe / 1024 / 1024, 1)} MiB (${exe} bytes); the bundle it was compiled from, ${round(statSync(lab.scriptPath).size / 1024, 0)} KiB; host-local, ${round(statSync(`${CNI_BIN_DIR}/host-local`).size / 1024 / 1024, 1)} MiB.`,
      );
      executableBytes = exe;

      for (const n of sizes) {
        const walls: Record<string, number> = {};
        // At the largest N a third run: the local stack's threads at nice -10, so the node's own processes (the pod
        // start storm) no longer delay the service's answers, as they cannot delay a remote service's.
        const variants = [
          { plugin: 'host-local' as const },
          { plugin: 'ipam-cni' as const },
          ...(n === Math.max(...sizes) ? [{ plugin: 'ipam-cni' as const, stackFirst: true }] : []),
        ];
        for (const variant of variants) {
          const { plugin } = variant;
          const stackFirst = 'stackFirst' in variant;
          if (stackFirst && !setStackNice(stack, STACK_FIRST_NICE)) {
            notes.push(
              `The run with the local stack first did not run: setting its nice value to ${STACK_FIRST_NICE} was refused (needs root).`,
            );
            continue;
          }
          const namespaces = await Promise.all(Array.from({ length: n }, () => lab.netns()));
          const network = lab.network(`b${n}${plugin === 'host-local' ? 'h' : stackFirst ? 'p' : 'c'}`);
          const logFile = `${lab.dir}/log-${network}`;
          const ipam =
            plugin === 'host-local'
              ? { type: 'host-local', subnet: '10.120.0.0/24', dataDir: `${lab.dir}/host-local-${network}` }
              : {
                  type: 'ipam-cni',
                  endpoint: stack.apiUrl,
                  range: '10.121.0.0/24',
                  stateDir: `${lab.dir}/state-${network}`,
                  timeoutMs: 60_000,
                  logFile,
                  logLevel: 'debug',
                };
          const config = {
            cniVersion: '1.0.0',
            name: network,
            type: 'bridge',
            bridge: lab.bridgeName(),
            isGateway: false,
            ipam,
          };
          const cpuBefore = cpuNow(stack);
          const spawnedAt = Date.now();
          const started = performance.now();
          const runs: PluginRun[] = await Promise.all(
            namespaces.map((ns) =>
              lab.reference('bridge', 'ADD', config, {
                containerID: `${ns.name}-c`,
                netns: ns.path,
                timeoutMs: 300_000,
              }),
            ),
          );
          const wall = (performance.now() - started) / 1000;
          const cpuAfter = cpuNow(stack);
          if (stackFirst) setStackNice(stack, 0);
          const label = `${n} parallel bridge ADDs${stackFirst ? `, local stack at nice ${STACK_FIRST_NICE}` : ''}`;
          if (plugin === 'ipam-cni' && n === Math.max(...sizes)) {
            const cpu = (part: keyof typeof cpuAfter) => round(cpuAfter[part] - cpuBefore[part], 1);
            const traces = pluginTraces(readFileSync(logFile, 'utf8'), spawnedAt);
            const waited = traces.filter((t) => t.poolWaitMs !== undefined);
            breakdown = {
              ...breakdown,
              [stackFirst ? 'stackFirst' : 'goal']: {
                n,
                wallSeconds: round(wall, 2),
                cpuSeconds: {
                  plugins: cpu('plugins'),
                  dynamodb: cpu('dynamodb'),
                  offline: cpu('offline'),
                  bench: cpu('bench'),
                },
                pluginAndBridgeCpuMsPerAdd: round(((cpuAfter.plugins - cpuBefore.plugins) * 1000) / n, 0),
              },
            };
            notes.push(
              `Where the ${n} ADDs' ${round(wall, 1)} s went (ipam-cni, ${stackFirst ? `local stack at nice ${STACK_FIRST_NICE}` : "the goal's run"}; from each plugin's debug log, times after the bridges were spawned): ` +
                `plugin processes started ${spread(
                  traces.map((t) => t.start),
                  's',
                )}; process start to config parsed ${spread(
                  traces.map((t) => (t.parsed ?? NaN) - (t.start ?? NaN)),
                  'ms',
                )}; ` +
                `${waited.length} of ${traces.length} found no pool check on the node and checked it or waited for it (${spread(
                  waited.map((t) => t.poolWaitMs),
                  'ms',
                )}), the others read the node's cache; ` +
                `the claim request took ${spread(
                  traces.map((t) => t.claimMs),
                  'ms',
                )}; plugins done ${spread(
                  traces.map((t) => t.done),
                  's',
                )}; each bridge took ${spread(
                  runs.map((r) => r.ms),
                  's',
                )} from its spawn to its exit. ` +
                `CPU seconds in the window (2 cores x ${round(wall, 1)} s = ${round(2 * wall, 1)} available): bridge and plugin processes ${cpu('plugins')}, DynamoDB Local ${cpu('dynamodb')}, serverless-offline ${cpu('offline')}, the bench process (spawning, the console server's proxy, the stream poller) ${cpu('bench')}.`,
            );
          }
          if (!stackFirst) walls[plugin] = wall;
          const failed = runs.filter((r) => r.code !== 0);
          const addresses = runs
            .filter((r) => r.code === 0)
            .flatMap((r) => ((r.json?.ips ?? []) as { address: string }[]).map((ip) => ip.address));
          const distinct = new Set(addresses).size;
          if (failed.length > 0)
            failures.push(
              `${plugin}, ${label}: ${failed.length} ADDs failed (first: ${failed[0]!.stdout.trim() || failed[0]!.stderr.trim()})`,
            );
          if (distinct !== addresses.length || addresses.length !== n)
            failures.push(`${plugin}, ${label}: ${addresses.length} addresses for ${n} ADDs, ${distinct} distinct`);
          const ms = runs.map((r) => r.ms);
          rows.push({
            case: label,
            plugin,
            n,
            wallSeconds: round(wall, 2),
            p50Ms: round(percentile(ms, 50), 0),
            p99Ms: round(percentile(ms, 99), 0),
            minMs: round(Math.min(...ms), 0),
            distinct: `${distinct}/${n}`,
            ratio: plugin === 'ipam-cni' ? round(wall / walls['host-local']!, 1) : 1,
          });
          ctx.log(
            `cni ${plugin} ${label}: ${round(wall, 2)} s, p50 ${round(percentile(ms, 50), 0)} ms, ${distinct}/${n} distinct`,
          );
          for (const ns of namespaces) await lab.deleteNetns(ns.name);
        }
      }
      await podmanRows(ctx, lab, stack, rows, notes, failures);
      notes.push(
        `The row "local stack at nice ${STACK_FIRST_NICE}" repeats the largest N with every thread of DynamoDB Local and serverless-offline at nice ${STACK_FIRST_NICE}: same N, same bridge path, a fresh network and pool, the same work, run right after it (DynamoDB Local a little warmer). On this machine the service shares the 2 cores with the pods being started; a deployed one does not, so the node's start-up storm (a node process per ADD) cannot delay its answers. The goal is read from the row above it, where the stack runs at the default priority. In the instrumented runs, the pool's creation on the node's first ADD (one request, in flight alone while the other 99 wait) took 4.8-5.8 s of server time at the default priority (its DynamoDB Local transaction 3 s) and 0.57 s at nice -10.`,
      );
      notes.push(
        'The plugin runs with `logLevel: debug` and a log file here (one append per process at its exit): its timing lines are where the breakdown above comes from.',
      );
      notes.push(
        "ratio of the bridge rows: the row's wall time over host-local's in the same N. host-local is the node-local floor: a file lock and no network; ipam-cni makes one HTTP request per ADD to the local stack (serverless-offline and DynamoDB Local on the same 2 cores) once the node's first ADD checked the pool (GET, POST pool, POST range for a new pool; the others wait for it).",
      );
      notes.push(
        "The local stack ran its handlers in serverless-offline's own process (`--useInProcess`): one loaded handler serves concurrent requests, as warm Lambda instances would; with a worker per concurrent request, 64 parallel requests on this loaded machine took minutes of cold starts and hit the function timeout.",
      );
      notes.push(
        `DynamoDB Local runs with \`${CNI_STACK_JVM_OPTIONS.join(' ')}\` here (client JIT compiler only, serial GC): it stands in for DynamoDB, which uses none of the node's CPU, and a JVM started for a one-minute run otherwise spends about twice the CPU per claim compiling and collecting (bench/scenarios/cni.ts).`,
      );
      notes.push(
        'DynamoDB requests of the local stack time out after 30 s instead of its 3 s, so a slow DynamoDB Local on the loaded machine shows as time, not as 503 NotReady.',
      );
      notes.push(
        "Each bridge ADD is one bridge process that runs the IPAM plugin as a child (the executable for ipam-cni, a Go binary for host-local); times are from spawning bridge to its exit, so they include bridge's own veth and namespace work, the same for both.",
      );
    } finally {
      try {
        await lab.cleanup();
      } finally {
        await stack.stop();
      }
    }
    return {
      name: 'cni',
      title: this.title,
      status: failures.length ? 'failed' : 'ok',
      failures,
      notes,
      parameters: {
        sizes,
        ...startupParameters,
        goals: CNI_GOALS,
        before: CNI_BEFORE,
        ...(executableBytes ? { executableBytes } : {}),
        ...(breakdown ? { breakdown } : {}),
      },
      rows,
      seconds: round((performance.now() - t0) / 1000, 1),
      charts: [],
    };
  },
};

/**
 * Containers per second under Podman (CNI backend, runc, vfs; tests/support/podman.ts): PODMAN_CONTAINERS started at
 * once on a bridge network whose IPAM is ipam-cni, then on one whose IPAM is host-local, each set removed after.
 * Only where the runtime tier can run; otherwise one note says why.
 */
async function podmanRows(
  ctx: RunContext,
  lab: CniLab,
  stack: LocalStack,
  rows: Record<string, unknown>[],
  notes: string[],
  failures: string[],
): Promise<void> {
  const count = ctx.quick ? 2 : PODMAN_CONTAINERS;
  const why = whyTierCannotRun('runtime');
  if (why) {
    notes.push(`Podman containers per second not measured: ${why}.`);
    return;
  }
  const podman = new PodmanLab(lab.dir);
  try {
    await podman.importImage();
    const walls: Record<string, number> = {};
    for (const plugin of ['host-local', 'ipam-cni'] as const) {
      const network = lab.network(`pm${plugin === 'host-local' ? 'h' : 'c'}`);
      const ipam =
        plugin === 'host-local'
          ? { type: 'host-local', subnet: '10.122.0.0/24', dataDir: `${lab.dir}/podman-host-local` }
          : {
              type: 'ipam-cni',
              endpoint: stack.apiUrl,
              range: '10.123.0.0/24',
              stateDir: `${lab.dir}/podman-state`,
              timeoutMs: 60_000,
            };
      podman.network(network, [{ type: 'bridge', bridge: lab.bridgeName(), isGateway: false, ipam }]);
      const names = Array.from({ length: count }, (_, i) => `${network}-${i}`);
      const started = performance.now();
      const each = await Promise.all(
        names.map(async (name) => {
          const t = performance.now();
          await podman.start(name, network);
          return performance.now() - t;
        }),
      );
      const wall = (performance.now() - started) / 1000;
      walls[plugin] = wall;
      const addresses = await Promise.all(names.map((name) => podman.address(name)));
      const distinct = new Set(addresses.filter(Boolean)).size;
      if (distinct !== count)
        failures.push(`Podman, ${plugin}: ${distinct} distinct addresses for ${count} containers`);
      rows.push({
        case: `Podman: ${count} containers started at once`,
        plugin,
        n: count,
        wallSeconds: round(wall, 2),
        p50Ms: round(percentile(each, 50), 0),
        p99Ms: round(percentile(each, 99), 0),
        minMs: round(Math.min(...each), 0),
        distinct: `${distinct}/${count}`,
        ratio: plugin === 'ipam-cni' ? round(wall / walls['host-local']!, 1) : 1,
        containersPerSecond: round(count / wall, 2),
      });
      ctx.log(`cni podman ${plugin}: ${count} containers in ${round(wall, 2)} s`);
      await podman.podman(['rm', '-f', '-t', '1', ...names], 180_000);
    }
    notes.push(
      `Podman 4.3 (CNI backend, runc, vfs storage, a busybox image): ${count} \`podman run -d\` at once per IPAM, from the first spawn to the last exit; each includes the container's storage copy, runc and bridge, the same for both.`,
    );
  } finally {
    await podman.cleanup();
  }
}
