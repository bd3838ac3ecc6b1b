/**
 * `ipam-cni`: the CNI IPAM plugin's entry point (SPEC.md, "Execution Protocol"). The runtime (or a main plugin such
 * as bridge) runs it with CNI_COMMAND and the other CNI_* variables in the environment and the network
 * configuration on stdin; it answers a result (ADD, VERSION) or nothing (DEL, CHECK, STATUS, GC) on stdout and exits
 * 0, or prints the spec's error JSON on stdout and exits 1.
 *
 * The environment is checked as libcni's skel checks it: CNI_COMMAND always; CNI_CONTAINERID and CNI_IFNAME for ADD,
 * DEL and CHECK; CNI_NETNS for ADD and CHECK; CNI_PATH for every command but VERSION (code 4 naming what is missing).
 */
import { readFileSync } from 'node:fs';
import { CniCode, CniError, errorResult, toCniError } from './errors.ts';
import { LATEST_VERSION, SUPPORTED_VERSIONS } from './versions.ts';

export type Env = Readonly<Record<string, string | undefined>>;

export interface Outcome {
  readonly exitCode: 0 | 1;
  /** What goes to stdout: a result, an error document, or nothing. */
  readonly stdout: string;
}

// RENEW is this plugin's own (the node's renewer, docs/cni.md); the rest are the spec's.
const COMMANDS = ['ADD', 'DEL', 'CHECK', 'STATUS', 'GC', 'VERSION', 'RENEW'] as const;
type Command = (typeof COMMANDS)[number];
/** The commands that need the service (cni/service-commands.ts). */
export type ServiceCommand = Exclude<Command, 'VERSION'>;

/** Which variables each command needs (skel's table). */
const REQUIRED: Record<Command, readonly string[]> = {
  ADD: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_PATH'],
  CHECK: ['CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_PATH'],
  DEL: ['CNI_CONTAINERID', 'CNI_IFNAME', 'CNI_PATH'],
  STATUS: ['CNI_PATH'],
  GC: ['CNI_PATH'],
  VERSION: [],
  RENEW: [],
};

/** The cniVersion of an input that may not parse: for the error document's own cniVersion. */
function versionOf(stdin: string): string {
  try {
    const v = (JSON.parse(stdin) as { cniVersion?: unknown }).cniVersion;
    return typeof v === 'string' && (SUPPORTED_VERSIONS as readonly string[]).includes(v) ? v : LATEST_VERSION;
  } catch {
    return LATEST_VERSION;
  }
}

/** Runs one CNI call. Never throws: every failure becomes the spec's error document. */
export async function run(env: Env, stdin: string, node?: string): Promise<Outcome> {
  const command = env.CNI_COMMAND ?? '';
  const version = versionOf(stdin);
  try {
    if (!(COMMANDS as readonly string[]).includes(command)) {
      throw new CniError(
        CniCode.InvalidEnvironment,
        command ? `unknown CNI_COMMAND: ${command}` : 'required env variables [CNI_COMMAND] missing',
        '',
      );
    }
    const cmd = command as Command;
    const missing = REQUIRED[cmd].filter(
      (name) => env[name] === undefined || (name !== 'CNI_CONTAINERID' && env[name] === ''),
    );
    if (missing.length > 0)
      throw new CniError(CniCode.InvalidEnvironment, `required env variables [${missing.join(',')}] missing`, '');

    if (cmd === 'VERSION') {
      return { exitCode: 0, stdout: JSON.stringify({ cniVersion: version, supportedVersions: SUPPORTED_VERSIONS }) };
    }
    // Loaded only now: the config, the client and the commands are most of the plugin's code (cni/service-commands.ts).
    const { runServiceCommand } = await import('./service-commands.ts');
    return await runServiceCommand({ cmd, env, stdin, node, version });
  } catch (error) {
    // Refused before any config was read, so no log file is known yet: the error document is all there is.
    return { exitCode: 1, stdout: JSON.stringify(errorResult(toCniError(error, command || 'CNI'), version)) };
  }
}

/** The executable: stdin and the environment in, stdout and the exit code out. */
export async function main(): Promise<void> {
  let stdin = '';
  try {
    // VERSION may come with no stdin at all; a closed or empty stdin reads as ''.
    stdin = readFileSync(0, 'utf8');
  } catch {
    stdin = '';
  }
  const outcome = await run(process.env, stdin);
  if (outcome.stdout) process.stdout.write(`${outcome.stdout}\n`);
  process.exitCode = outcome.exitCode;
}
