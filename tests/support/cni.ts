/**
 * A lab for the CNI plugin under the reference plugins (tests/net, bench/scenarios/cni): builds the plugin into a
 * temporary folder, runs it or Debian's bridge/host-local the way a runtime does (CNI_* in the environment, the
 * network config on stdin), and makes network namespaces and bridges with names unique to the run, every one of
 * which `cleanup()` removes (call it in afterAll, also after a failure).
 */
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCni } from '../../scripts/build-cni.ts';
import { CNI_BIN_DIR } from '../../scripts/system-tiers.ts';

export interface PluginRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** stdout parsed, when it is JSON. */
  readonly json: Record<string, unknown> | undefined;
  readonly ms: number;
}

export interface CallOptions {
  readonly containerID?: string;
  readonly netns?: string;
  readonly ifname?: string;
  readonly args?: string;
  /** Leave these variables out of the environment. */
  readonly unset?: readonly string[];
  /** Kill the process after this long (default 60 s). */
  readonly timeoutMs?: number;
  /** More environment (AWS credentials for a signed call). */
  readonly extraEnv?: Readonly<Record<string, string>>;
}

/** Runs an executable with a stdin and an environment; resolves with its exit code and output, never rejects. */
export function runWithStdin(
  file: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  stdin: string,
  timeoutMs = 60_000,
): Promise<PluginRun> {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(file, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({
        code: -1,
        stdout,
        stderr: `${stderr}${String(error)}`,
        json: undefined,
        ms: performance.now() - started,
      });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      let json: Record<string, unknown> | undefined;
      try {
        json = stdout.trim() ? (JSON.parse(stdout) as Record<string, unknown>) : undefined;
      } catch {
        json = undefined;
      }
      resolve({ code: code ?? -1, stdout, stderr, json, ms: performance.now() - started });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(stdin);
  });
}

/** Runs a command; rejects with its output when it fails. */
export function sh(file: string, args: readonly string[], timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: timeoutMs }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(' ')}: ${error.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

export class CniLab {
  /** Four random hex characters: every namespace, bridge and network of this lab carries them. */
  readonly id = randomBytes(2).toString('hex');
  readonly dir = mkdtempSync(join(tmpdir(), 'ipam-cni-'));
  /** The self-contained executable (build-cni.ts), and the node script it was compiled from. */
  readonly pluginPath = join(this.dir, 'ipam-cni');
  readonly scriptPath = join(this.dir, 'ipam-cni.cjs');
  /**
   * The PATH every call gets: an empty folder, so nothing the plugin or bridge runs can find `node` (a node has
   * none); the plugin must run on what it carries.
   */
  readonly searchPath = join(this.dir, 'no-node-bin');
  private readonly namespaces = new Set<string>();
  private readonly bridges = new Set<string>();
  private nsCount = 0;
  private brCount = 0;

  async build(): Promise<void> {
    mkdirSync(this.searchPath, { recursive: true });
    await buildCni(this.dir);
  }

  /** The environment of a call: CNI_PATH finds this lab's plugin first, then the reference plugins. */
  env(command: string, options: CallOptions = {}): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {
      PATH: this.searchPath,
      CNI_COMMAND: command,
      CNI_CONTAINERID: options.containerID ?? `c${this.id}`,
      CNI_NETNS: options.netns ?? '',
      CNI_IFNAME: options.ifname ?? 'eth0',
      CNI_PATH: `${this.dir}:${CNI_BIN_DIR}`,
      ...(options.args !== undefined ? { CNI_ARGS: options.args } : {}),
      ...options.extraEnv,
    };
    for (const name of options.unset ?? []) delete env[name];
    return env;
  }

  /** Runs this lab's plugin directly, as a main plugin would delegate to it. */
  plugin(command: string, config: unknown, options: CallOptions = {}): Promise<PluginRun> {
    return runWithStdin(this.pluginPath, [], this.env(command, options), JSON.stringify(config), options.timeoutMs);
  }

  /** Runs a reference plugin (bridge, host-local) from /usr/lib/cni. */
  reference(type: string, command: string, config: unknown, options: CallOptions = {}): Promise<PluginRun> {
    return runWithStdin(
      join(CNI_BIN_DIR, type),
      [],
      this.env(command, options),
      JSON.stringify(config),
      options.timeoutMs,
    );
  }

  /** A new network namespace; answers its name and path. */
  async netns(): Promise<{ name: string; path: string }> {
    const name = `ipc${this.id}n${this.nsCount++}`;
    this.namespaces.add(name);
    await sh('ip', ['netns', 'add', name]);
    return { name, path: `/var/run/netns/${name}` };
  }

  async deleteNetns(name: string): Promise<void> {
    await sh('ip', ['netns', 'del', name]);
    this.namespaces.delete(name);
  }

  /** A bridge name unique to the run (bridge ADD creates it; cleanup deletes it). At most 15 characters. */
  bridgeName(): string {
    const name = `ipb${this.id}${this.brCount++}`;
    this.bridges.add(name);
    return name;
  }

  /** A network name unique to the run, also a valid pool name. */
  network(label: string): string {
    return `${label}-${this.id}`;
  }

  /** The addresses of `ifname` inside a namespace, as address/prefix (link-local IPv6 left out). */
  async addresses(netns: string, ifname = 'eth0'): Promise<string[]> {
    const out = await sh('ip', ['-n', netns, '-j', 'addr', 'show', 'dev', ifname]);
    const links = JSON.parse(out) as { addr_info: { local: string; prefixlen: number; scope: string }[] }[];
    return links.flatMap((l) => l.addr_info.filter((a) => a.scope !== 'link').map((a) => `${a.local}/${a.prefixlen}`));
  }

  /** Pings `address` from inside `netns` until it answers or `timeoutMs` passes (neighbour discovery takes a moment). */
  async ping(netns: string, address: string, timeoutMs = 15_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    const ping = address.includes(':') ? ['ping', '-6'] : ['ping'];
    while (Date.now() < deadline) {
      try {
        await sh('ip', ['netns', 'exec', netns, ...ping, '-c', '1', '-W', '1', address]);
        return true;
      } catch {
        // Not yet: try again until the deadline.
      }
    }
    return false;
  }

  /** Removes every namespace and bridge this lab made, and its folder; collects failures and reports them at once. */
  async cleanup(): Promise<void> {
    const failures: string[] = [];
    for (const name of [...this.namespaces]) {
      try {
        await sh('ip', ['netns', 'del', name]);
        this.namespaces.delete(name);
      } catch (error) {
        failures.push(String(error));
      }
    }
    for (const name of [...this.bridges]) {
      try {
        // bridge ADD may never have made it: only an existing link is deleted.
        const exists = await sh('ip', ['-j', 'link', 'show']).then((out) =>
          (JSON.parse(out) as { ifname: string }[]).some((l) => l.ifname === name),
        );
        if (exists) await sh('ip', ['link', 'del', name]);
        this.bridges.delete(name);
      } catch (error) {
        failures.push(String(error));
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
    if (failures.length > 0) throw new Error(`cleanup left things behind:\n${failures.join('\n')}`);
  }
}
