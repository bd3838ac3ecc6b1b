/**
 * Podman with its CNI network backend, confined to a folder of the run (tests/runtime, bench/scenarios/cni): its
 * containers.conf and storage.conf (CONTAINERS_CONF, CONTAINERS_STORAGE_CONF), its image store (vfs), its network
 * configs and its plugin folders (this run's plugin first, then Debian's reference plugins). The machine's own
 * Podman settings are not read or changed. The settings are the ones /work/shared/toolchain.md found to work on a
 * cgroup v1 VM: runc (crun refuses hybrid cgroups), cgroupfs, file events, ulimits within the VM's hard limits.
 * The image is busybox-static's /bin/busybox and its links, tarred and imported: no registry is reached.
 * `cleanup()` removes every container, the network configs and the folder.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CNI_BIN_DIR } from '../../scripts/system-tiers.ts';

export const BUSYBOX = '/bin/busybox';
export const IMAGE = 'localhost/ipam-busybox:test';

export class PodmanLab {
  readonly dir = mkdtempSync(join(tmpdir(), 'ipam-podman-'));
  readonly netDir = join(this.dir, 'net.d');
  private readonly env: NodeJS.ProcessEnv;

  /** `pluginDir`: where this run's ipam-cni is (CniLab.dir). */
  constructor(pluginDir: string) {
    mkdirSync(this.netDir);
    const conf = join(this.dir, 'containers.conf');
    writeFileSync(
      conf,
      [
        '[containers]',
        'default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]',
        '[engine]',
        'runtime = "runc"',
        'cgroup_manager = "cgroupfs"',
        'events_logger = "file"',
        `tmp_dir = "${join(this.dir, 'tmp')}"`,
        '[network]',
        'network_backend = "cni"',
        `cni_plugin_dirs = ["${pluginDir}", "${CNI_BIN_DIR}"]`,
        `network_config_dir = "${this.netDir}"`,
        '',
      ].join('\n'),
    );
    const storage = join(this.dir, 'storage.conf');
    writeFileSync(
      storage,
      [
        '[storage]',
        'driver = "vfs"',
        `runroot = "${join(this.dir, 'run')}"`,
        `graphroot = "${join(this.dir, 'root')}"`,
        '',
      ].join('\n'),
    );
    this.env = { ...process.env, CONTAINERS_CONF: conf, CONTAINERS_STORAGE_CONF: storage };
  }

  /** Runs podman; resolves with stdout, rejects with its stderr. */
  podman(args: readonly string[], timeoutMs = 120_000): Promise<string> {
    return new Promise((resolve, reject) => {
      execFile(
        'podman',
        args,
        { env: this.env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
        (error, stdout, stderr) => {
          if (error) reject(new Error(`podman ${args.join(' ')}: ${error.message}\n${stderr}`));
          else resolve(stdout);
        },
      );
    });
  }

  /** The busybox image, from busybox-static's binary and its links. */
  async importImage(): Promise<void> {
    const root = join(this.dir, 'image');
    mkdirSync(join(root, 'bin'), { recursive: true });
    copyFileSync(BUSYBOX, join(root, 'bin/busybox'));
    for (const tool of ['sh', 'ip', 'ping', 'sleep', 'cat']) symlinkSync('busybox', join(root, 'bin', tool));
    const tar = join(this.dir, 'image.tar');
    await new Promise<void>((resolve, reject) =>
      execFile('tar', ['-C', root, '-cf', tar, '.'], (error) => (error ? reject(error) : resolve())),
    );
    await this.podman(['import', tar, IMAGE]);
  }

  /** Writes a network config list that `podman run --network NAME` runs. */
  network(name: string, plugins: readonly unknown[], cniVersion = '1.0.0'): void {
    writeFileSync(join(this.netDir, `${name}.conflist`), JSON.stringify({ cniVersion, name, plugins }));
  }

  /** Starts a container that sleeps, on `network` (more `podman run` options in `extra`); answers its id. */
  async start(name: string, network: string, extra: readonly string[] = []): Promise<string> {
    return (
      await this.podman([
        'run',
        '-d',
        '--name',
        name,
        '--network',
        network,
        '--cap-add',
        'NET_RAW',
        ...extra,
        IMAGE,
        'sleep',
        '600',
      ])
    ).trim();
  }

  /** The IPv4 address/prefix of eth0 inside a container. */
  async address(name: string): Promise<string | undefined> {
    const out = await this.podman(['exec', name, 'ip', '-4', '-o', 'addr', 'show', 'dev', 'eth0']);
    return /inet (\S+)/.exec(out)?.[1];
  }

  /** Whether `address` answers a ping from inside a container (polled until `timeoutMs`: ARP takes a moment). */
  async ping(name: string, address: string, timeoutMs = 15_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      try {
        await this.podman(['exec', name, 'ping', '-c', '1', '-W', '1', address]);
        return true;
      } catch {
        // Not yet.
      }
    }
    return false;
  }

  /** Removes every container of this store (stop timeout 1 s: sleep ignores SIGTERM), then the folder. */
  async cleanup(): Promise<void> {
    try {
      await this.podman(['rm', '-a', '-f', '-t', '1'], 180_000);
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }
}
