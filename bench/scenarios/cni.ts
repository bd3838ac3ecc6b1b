import { execFile } from 'node:child_process';
import { percentile, round, type RunContext, type Scenario, type ScenarioResult } from '../lib/results.ts';
import { CniLab, type PluginRun } from '../../tests/support/cni.ts';
import { startTestStack } from '../../tests/support/local-stack.ts';
import { whyTierCannotRun } from '../../scripts/system-tiers.ts';

/** The goals: 100 parallel ADDs on one node in 10 s or less; the plugin process starts and exits in 150 ms. */
export const CNI_GOALS = { addsSeconds: 10, addsN: 100, versionMs: 150 } as const;

/** Milliseconds from spawn to exit of `file args`, stdin given. */
function timeProcess(file: string, args: readonly string[], env: NodeJS.ProcessEnv, stdin: string): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = execFile(file, args, { env }, (error) => (error ? reject(error) : resolve(performance.now() - started)));
    child.stdin?.end(stdin);
  });
}

/**
 * Pods attached in parallel through Debian's `bridge` into N network namespaces, N = 1, 16, 100, with this plugin as
 * the IPAM (against the local stack) and, in the same run, with the reference `host-local` (a file lock on the node,
 * no network: the floor). Per N: wall time of the N parallel bridge ADDs, per-ADD p50/p99, every address distinct.
 * Also the plugin's own start-to-exit time for VERSION, beside a bare `node -e 0`.
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
    if (why) return { name: 'cni', title: this.title, status: 'unavailable', unavailable: `needs network namespaces: ${why}`, failures: [], notes: [], parameters: {}, rows: [], seconds: 0, charts: [] };
    const sizes = ctx.quick ? [1, 4] : [1, 16, 100];
    const versionRuns = ctx.quick ? 3 : 30;
    const lab = new CniLab();
    const rows: Record<string, unknown>[] = [];
    const failures: string[] = [];
    const notes: string[] = [];
    await lab.build();
    const stack = await startTestStack({ inProcess: true, env: { DYNAMODB_REQUEST_TIMEOUT_MS: '30000' } });
    try {
      // VERSION start to exit, sequentially, beside a bare node.
      const env = lab.env('VERSION');
      const version: number[] = [];
      const bare: number[] = [];
      for (let i = 0; i < versionRuns; i++) {
        version.push(await timeProcess(lab.pluginPath, [], env, '{"cniVersion":"1.0.0"}'));
        bare.push(await timeProcess(process.execPath, ['-e', '0'], env, ''));
      }
      rows.push({ case: 'VERSION start to exit', plugin: 'ipam-cni', n: versionRuns, wallSeconds: '', p50Ms: round(percentile(version, 50), 0), p99Ms: round(percentile(version, 99), 0), minMs: round(Math.min(...version), 0), distinct: '', ratio: round(percentile(version, 50) / percentile(bare, 50), 2) });
      rows.push({ case: 'node -e 0 start to exit', plugin: 'node', n: versionRuns, wallSeconds: '', p50Ms: round(percentile(bare, 50), 0), p99Ms: round(percentile(bare, 99), 0), minMs: round(Math.min(...bare), 0), distinct: '', ratio: '' });
      ctx.log(`cni VERSION p50 ${round(percentile(version, 50), 0)} ms (bare node ${round(percentile(bare, 50), 0)} ms)`);

      for (const n of sizes) {
        const walls: Record<string, number> = {};
        for (const plugin of ['host-local', 'ipam-cni'] as const) {
          const namespaces = await Promise.all(Array.from({ length: n }, () => lab.netns()));
          const network = lab.network(`b${n}${plugin === 'host-local' ? 'h' : 'c'}`);
          const ipam =
            plugin === 'host-local'
              ? { type: 'host-local', subnet: '10.120.0.0/24', dataDir: `${lab.dir}/host-local-${network}` }
              : { type: 'ipam-cni', endpoint: stack.apiUrl, range: '10.121.0.0/24', stateDir: `${lab.dir}/state-${network}`, timeoutMs: 60_000 };
          const config = { cniVersion: '1.0.0', name: network, type: 'bridge', bridge: lab.bridgeName(), isGateway: false, ipam };
          const started = performance.now();
          const runs: PluginRun[] = await Promise.all(namespaces.map((ns) => lab.reference('bridge', 'ADD', config, { containerID: `${ns.name}-c`, netns: ns.path, timeoutMs: 300_000 })));
          const wall = (performance.now() - started) / 1000;
          walls[plugin] = wall;
          const failed = runs.filter((r) => r.code !== 0);
          const addresses = runs.filter((r) => r.code === 0).flatMap((r) => ((r.json?.ips ?? []) as { address: string }[]).map((ip) => ip.address));
          const distinct = new Set(addresses).size;
          if (failed.length > 0) failures.push(`${plugin}, N=${n}: ${failed.length} ADDs failed (first: ${failed[0]!.stdout.trim() || failed[0]!.stderr.trim()})`);
          if (distinct !== addresses.length || addresses.length !== n) failures.push(`${plugin}, N=${n}: ${addresses.length} addresses for ${n} ADDs, ${distinct} distinct`);
          const ms = runs.map((r) => r.ms);
          rows.push({ case: `${n} parallel bridge ADDs`, plugin, n, wallSeconds: round(wall, 2), p50Ms: round(percentile(ms, 50), 0), p99Ms: round(percentile(ms, 99), 0), minMs: round(Math.min(...ms), 0), distinct: `${distinct}/${n}`, ratio: plugin === 'ipam-cni' ? round(wall / walls['host-local']!, 1) : 1 });
          ctx.log(`cni ${plugin} N=${n}: ${round(wall, 2)} s, p50 ${round(percentile(ms, 50), 0)} ms, ${distinct}/${n} distinct`);
          for (const ns of namespaces) await lab.deleteNetns(ns.name);
        }
      }
      notes.push('ratio: the row\'s wall time (or, for VERSION, p50) over host-local\'s in the same N (or over a bare `node -e 0`). host-local is the node-local floor: a file lock and no network; ipam-cni makes one HTTP request per ADD to the local stack (serverless-offline and DynamoDB Local on the same 2 cores) after the first ADDs of a node checked the pool.');
      notes.push('The local stack ran its handlers in serverless-offline\'s own process (`--useInProcess`): one loaded handler serves concurrent requests, as warm Lambda instances would; with a worker per concurrent request, 64 parallel requests on this loaded machine took minutes of cold starts and hit the function timeout.');
      notes.push('DynamoDB requests of the local stack time out after 30 s instead of its 3 s, so a slow DynamoDB Local on the loaded machine shows as time, not as 503 NotReady.');
      notes.push('Each bridge ADD is one bridge process that runs the IPAM plugin as a child (a node process for ipam-cni, a Go binary for host-local); times are from spawning bridge to its exit, so they include bridge\'s own veth and namespace work, the same for both.');
    } finally {
      try {
        await lab.cleanup();
      } finally {
        await stack.stop();
      }
    }
    return { name: 'cni', title: this.title, status: failures.length ? 'failed' : 'ok', failures, notes, parameters: { sizes, versionRuns, goals: CNI_GOALS }, rows, seconds: round((performance.now() - t0) / 1000, 1), charts: [] };
  },
};
