/**
 * Which system test tiers this machine can run, and why not where it cannot. vitest.config.ts includes a tier's
 * project only when it can run, and prints one line for each tier that does not; under CI (CI=true) a tier that
 * cannot run fails the run instead, because CI must run every tier (scripts/setup-system.sh installs their packages).
 *
 * - net: the CNI plugin under the reference plugins in real network namespaces (tests/net): Linux, root,
 *   /usr/lib/cni/bridge and host-local, `ip` and `ping`.
 * - browser: the console in Debian's chromium (tests/browser): /usr/bin/chromium.
 * - runtime: the CNI plugin under a real container runtime, Podman with its CNI backend and runc (tests/runtime):
 *   what net needs, and podman, runc and busybox-static's /bin/busybox (the image is built from it).
 * - dns: the RFC 2136 target against a real BIND 9 (tests/dns): named, tsig-keygen, dig and nsupdate (bind9 and
 *   bind9-dnsutils).
 */
import { accessSync, constants } from 'node:fs';
import { execFileSync } from 'node:child_process';

export type SystemTier = 'net' | 'browser' | 'runtime' | 'dns';

export const CNI_BIN_DIR = '/usr/lib/cni';
export const CHROMIUM_PATH = '/usr/bin/chromium';

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Why `tier` cannot run here, or undefined when it can. */
export function whyTierCannotRun(tier: SystemTier): string | undefined {
  if (tier === 'dns') {
    const tools = ['named', 'tsig-keygen', 'dig', 'nsupdate'].filter((t) => !onPath(t));
    return tools.length > 0
      ? `${tools.join(', ')} not on PATH (bind9, bind9-dnsutils: npm run setup:system)`
      : undefined;
  }
  if (tier === 'runtime') {
    const net = whyTierCannotRun('net');
    if (net !== undefined) return net;
    const tools = ['podman', 'runc'].filter((t) => !onPath(t));
    if (tools.length > 0) return `${tools.join(', ')} not on PATH (npm run setup:system)`;
    if (!executable('/bin/busybox')) return '/bin/busybox missing (busybox-static; npm run setup:system)';
    return undefined;
  }
  if (tier === 'net') {
    if (process.platform !== 'linux') return `not Linux (${process.platform})`;
    if (process.getuid?.() !== 0) return 'not root (network namespaces need it)';
    const missing = [`${CNI_BIN_DIR}/bridge`, `${CNI_BIN_DIR}/host-local`].filter((p) => !executable(p));
    if (missing.length > 0) return `${missing.join(', ')} missing (npm run setup:system)`;
    const tools = ['ip', 'ping'].filter((t) => !onPath(t));
    if (tools.length > 0) return `${tools.join(', ')} not on PATH (npm run setup:system)`;
    return undefined;
  }
  if (!executable(CHROMIUM_PATH)) return `${CHROMIUM_PATH} missing (npm run setup:system)`;
  return undefined;
}

/**
 * The tiers to include. Prints one line per tier left out; throws under CI, where every tier must run.
 */
export function runnableTiers(tiers: readonly SystemTier[], env: NodeJS.ProcessEnv = process.env): SystemTier[] {
  const runnable: SystemTier[] = [];
  for (const tier of tiers) {
    const why = whyTierCannotRun(tier);
    if (why === undefined) {
      runnable.push(tier);
      continue;
    }
    if (env.CI === 'true') throw new Error(`The ${tier} test tier cannot run under CI: ${why}.`);
    process.stdout.write(`The ${tier} test tier did not run: ${why}.\n`);
  }
  return runnable;
}
