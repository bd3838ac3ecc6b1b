import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const scenarios = [
  'cold-start',
  'mirror-cost',
  'throughput',
  'occupancy-cost',
  'exhaustion',
  'reconciler-cost',
  'cni',
  'history',
  'model-check',
  'dns',
];

/** Runs `npm run bench -- --quick --out <dir>` in a child process; resolves with its exit code and output. */
function runQuickBench(out: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/run.ts', '--quick', '--out', out], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolveRun({ code, output }));
  });
}

// Keeps the harness working: the quick bench runs every scenario small. Timings are not asserted (the machine is
// shared); the run must pass its own correctness checks (exit 0) and write its files.
describe('Script: bench/run.ts --quick', () => {
  const out = mkdtempSync(join(tmpdir(), 'ipam-bench-quick-'));

  afterAll(() => {
    rmSync(out, { recursive: true, force: true });
  });

  it(
    'runs every scenario, exits 0 and writes the results, the report and the charts',
    { timeout: 600_000 },
    async () => {
      // Act
      const { code, output } = await runQuickBench(out);
      // Assess
      expect(code, output.slice(-4000)).toBe(0);
      for (const name of scenarios) {
        const result = JSON.parse(readFileSync(join(out, `${name}.json`), 'utf8')) as {
          name: string;
          status: string;
          quick: boolean;
        };
        expect(result).toMatchObject({ name, quick: true });
        // Every scenario's pieces have landed: one that cannot run is a failure, not a pass.
        expect(result.status).toBe('ok');
      }
      expect(readFileSync(join(out, 'BENCHMARKS.md'), 'utf8')).toMatch(/^# Benchmarks/);
      expect(JSON.parse(readFileSync(join(out, 'goals.json'), 'utf8'))).toEqual(
        expect.arrayContaining([expect.objectContaining({ scenario: 'throughput' })]),
      );
      expect(existsSync(join(out, 'throughput-raw-0.svg'))).toBe(true);
    },
  );
});
