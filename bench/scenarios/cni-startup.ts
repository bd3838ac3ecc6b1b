/**
 * The CNI plugin's start-up beside its toolchain's floor and beside host-local (part of the cni scenario, one run):
 * - VERSION start to exit of the plugin, of an empty program built by exactly the plugin's toolchain
 *   (bench/cni/empty-main.ts through buildWithCniToolchain: the same esbuild options and `bun build` flags) and of
 *   host-local, interleaved call by call after warm-up rounds. VERSION needs no network, so the figure is start-up
 *   alone; the goal is the plugin's p50 within CNI_STARTUP_GOAL_RATIO of the empty program's.
 * - CPU per ADD of the plugin process (called directly, as bridge delegates to it, against the local stack, the
 *   node's pool check done by a warm-up ADD) beside host-local's ADD in a scratch data folder (it only writes files
 *   there, so it needs no namespace), interleaved the same way. Reported, no goal.
 * CPU is the reaped children's user+system time of this process (/proc/self/stat, 10 ms ticks) across the calls of a
 * form, divided by their count: the calls run one at a time, so each call's child is the only one reaped meanwhile.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildWithCniToolchain } from '../../scripts/build-cni.ts';
import { CNI_BIN_DIR } from '../../scripts/system-tiers.ts';
import type { CniLab, PluginRun } from '../../tests/support/cni.ts';
import { runWithStdin } from '../../tests/support/cni.ts';
import { cpuSeconds } from '../lib/proc-cpu.ts';
import { percentile, round, type RunContext } from '../lib/results.ts';

/** The goal: the plugin's VERSION p50 at most this many times the empty program's (the toolchain's floor). */
export const CNI_STARTUP_GOAL_RATIO = 1.2;

const EMPTY_MAIN = fileURLToPath(new URL('../cni/empty-main.ts', import.meta.url));

/** One form's calls: wall milliseconds of each, and CPU seconds of all. */
interface Calls {
  readonly ms: number[];
  cpuSeconds: number;
}

/** A form to call: its label and one call (which must succeed). */
interface Form {
  readonly plugin: string;
  call(index: number): Promise<PluginRun>;
}

/** Calls every form once a round, in order, `warmup` rounds unrecorded then `runs` recorded. */
async function interleave(forms: readonly Form[], warmup: number, runs: number): Promise<Calls[]> {
  const calls = forms.map((): Calls => ({ ms: [], cpuSeconds: 0 }));
  for (let index = 0; index < warmup + runs; index++) {
    for (const [f, form] of forms.entries()) {
      const before = cpuSeconds('self', true);
      const result = await form.call(index);
      const cpu = cpuSeconds('self', true) - before;
      if (result.code !== 0)
        throw new Error(`${form.plugin}: exit ${result.code}: ${result.stdout.trim() || result.stderr.trim()}`);
      if (index < warmup) continue;
      calls[f]!.ms.push(result.ms);
      calls[f]!.cpuSeconds += cpu;
    }
  }
  return calls;
}

function row(kase: string, plugin: string, calls: Calls, floorP50: number): Record<string, unknown> {
  const n = calls.ms.length;
  return {
    case: kase,
    plugin,
    n,
    p50Ms: round(percentile(calls.ms, 50), 1),
    p95Ms: round(percentile(calls.ms, 95), 1),
    minMs: round(Math.min(...calls.ms), 1),
    ratio: round(percentile(calls.ms, 50) / floorP50, 2),
    cpuMsPerCall: round((calls.cpuSeconds * 1000) / n, 1),
  };
}

/** The empty program, built into `dir`/empty by the plugin's toolchain. Answers its executable's path and size. */
export async function buildEmptyProgram(dir: string): Promise<{ path: string; bytes: number }> {
  return buildWithCniToolchain({ entry: EMPTY_MAIN, outDir: join(dir, 'empty'), name: 'empty-main' });
}

export interface StartupOptions {
  readonly ctx: RunContext;
  readonly lab: CniLab;
  /** The local stack's API URL: the plugin's ADDs claim there. */
  readonly apiUrl: string;
  /** buildEmptyProgram's answer (the scenario starts the build beside the local stack's start-up). */
  readonly empty: Promise<{ path: string; bytes: number }>;
}

/** Rows and notes of the start-up measurement (module comment); throws when a call fails. */
export async function measureStartup(
  options: StartupOptions,
): Promise<{ rows: Record<string, unknown>[]; notes: string[]; parameters: Record<string, unknown> }> {
  const { ctx, lab, apiUrl } = options;
  const empty = await options.empty;
  // Quick (the test suite's run): enough to keep the measurement working, not to read figures from.
  const warmup = ctx.quick ? 1 : 3;
  const versionRuns = ctx.quick ? 5 : 40;
  const addRuns = ctx.quick ? 3 : 20;
  const started = performance.now();
  const hostLocal = join(CNI_BIN_DIR, 'host-local');
  const versionStdin = '{"cniVersion":"1.0.0"}';
  const version = (file: string) => () => runWithStdin(file, [], lab.env('VERSION'), versionStdin);
  const versionCalls = await interleave(
    [
      { plugin: 'ipam-cni', call: version(lab.pluginPath) },
      { plugin: 'empty program', call: version(empty.path) },
      { plugin: 'host-local', call: version(hostLocal) },
    ],
    warmup,
    versionRuns,
  );
  const emptyP50 = percentile(versionCalls[1]!.ms, 50);
  const rows = [
    row('start-up: VERSION start to exit', 'ipam-cni', versionCalls[0]!, emptyP50),
    row('start-up: VERSION start to exit', 'empty program', versionCalls[1]!, emptyP50),
    row('start-up: VERSION start to exit', 'host-local', versionCalls[2]!, emptyP50),
  ];
  ctx.log(
    `cni start-up VERSION p50: ipam-cni ${String(rows[0]!.p50Ms)} ms, empty program ${String(rows[1]!.p50Ms)} ms (${String(rows[0]!.ratio)}x), host-local ${String(rows[2]!.p50Ms)} ms`,
  );

  // ADD: the plugin against the local stack, host-local in a scratch data folder; a container id per call.
  const scratch = mkdtempSync(join(tmpdir(), 'cni-startup-host-local-'));
  try {
    const network = lab.network('su');
    const netns = `/var/run/netns/${network}-none`;
    const pluginConfig = {
      cniVersion: '1.0.0',
      name: network,
      type: 'bridge',
      ipam: { type: 'ipam-cni', endpoint: apiUrl, range: '10.124.0.0/20', stateDir: join(lab.dir, `state-${network}`) },
    };
    const hostLocalConfig = {
      cniVersion: '1.0.0',
      name: network,
      type: 'bridge',
      ipam: { type: 'host-local', subnet: '10.125.0.0/20', dataDir: scratch },
    };
    const add = (file: string, config: unknown) => (index: number) =>
      runWithStdin(file, [], lab.env('ADD', { containerID: `${network}-${index}`, netns }), JSON.stringify(config));
    const addCalls = await interleave(
      [
        { plugin: 'ipam-cni', call: add(lab.pluginPath, pluginConfig) },
        { plugin: 'host-local', call: add(hostLocal, hostLocalConfig) },
      ],
      warmup,
      addRuns,
    );
    const hostLocalP50 = percentile(addCalls[1]!.ms, 50);
    rows.push(
      row('CPU per ADD (no namespace)', 'ipam-cni', addCalls[0]!, hostLocalP50),
      row('CPU per ADD (no namespace)', 'host-local', addCalls[1]!, hostLocalP50),
    );
    ctx.log(
      `cni CPU per ADD: ipam-cni ${String(rows[3]!.cpuMsPerCall)} ms, host-local ${String(rows[4]!.cpuMsPerCall)} ms`,
    );
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const notes = [
    `Start-up (rows "start-up: ..."): CNI_COMMAND=VERSION start to exit (spawn to the child's close, stdin and stdout piped), no network involved: the plugin, an empty program built by exactly the plugin's toolchain (bench/cni/empty-main.ts: reads stdin, prints a VERSION result; esbuild with the plugin's options, then \`bun build --compile --minify --bytecode\`; ${round(empty.bytes / 1024 / 1024, 1)} MiB) and host-local, called in turn (${warmup} warm-up rounds, then ${versionRuns}); ratio: the p50 over the empty program's p50. The goal: ipam-cni <= ${CNI_STARTUP_GOAL_RATIO}x.`,
    `CPU per ADD (rows "CPU per ADD ..."): the IPAM plugin called directly with ADD, as bridge delegates to it, without a namespace (an IPAM plugin never enters it): ipam-cni claims from the local stack (its first warm-up ADD checked and created the pool), host-local writes its files in a scratch folder (removed after); ${warmup} warm-up rounds, then ${addRuns} each, interleaved. cpuMsPerCall: the plugin process's user+system CPU (reaped children's, 10 ms ticks summed over the calls); ratio: the p50 wall time over host-local's (ipam-cni's includes its HTTP request to the local stack on the same 2 cores).`,
  ];
  const seconds = round((performance.now() - started) / 1000, 1);
  ctx.log(`cni start-up measured in ${seconds} s`);
  return { rows, notes, parameters: { startup: { warmup, versionRuns, addRuns, emptyBytes: empty.bytes, seconds } } };
}
