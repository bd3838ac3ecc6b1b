import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { FUNCTION_BUILD } from '../lib/function-build.ts';
import { percentile, round, type RunContext, type Scenario, type ScenarioResult } from '../lib/results.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The bundle limit of the issue. */
export const BUNDLE_LIMIT_BYTES = 300 * 1024;

/**
 * Each function's bundle as serverless.yml builds it (esbuild: bundle, minify, ESM, node22, the createRequire
 * banner, `@aws-sdk/*` external as the runtime provides it), its size, and its module init time: a fresh `node` process importing the bundle,
 * timed from inside (process start-up excluded), the median of several runs.
 */
export const coldStartScenario: Scenario = {
  name: 'cold-start',
  title: 'Cold start',
  async run(ctx: RunContext): Promise<ScenarioResult> {
    const t0 = performance.now();
    const runs = ctx.quick ? 1 : 7;
    // Inside the repository, so the external `@aws-sdk/*` resolves from node_modules as it does from the runtime's SDK.
    await mkdir(join(ROOT, '.esbuild'), { recursive: true });
    const dir = await mkdtemp(join(ROOT, '.esbuild', 'bench-bundles-'));
    const rows: Record<string, unknown>[] = [];
    const failures: string[] = [];
    try {
      const entries = (await readdir(join(ROOT, 'functions'))).filter((f) => f.endsWith('.ts')).sort();
      for (const entry of entries) {
        const outfile = join(dir, `${basename(entry, '.ts')}.mjs`);
        await build({ ...FUNCTION_BUILD, entryPoints: [join(ROOT, 'functions', entry)], outfile });
        const bytes = (await stat(outfile)).size;
        const times: number[] = [];
        for (let i = 0; i < runs; i += 1) {
          const script = `const t = performance.now(); await import(${JSON.stringify(pathToFileURL(outfile).href)}); console.log(performance.now() - t);`;
          const out = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
            encoding: 'utf8',
            // A deployed function's environment (no LOCAL_STACK): the cursor key is required there (shared/config.ts).
            env: {
              PATH: process.env.PATH ?? '',
              TABLE_NAME: 'ipam-bench',
              AWS_REGION: 'us-east-1',
              CURSOR_SECRET: 'bench-cold-start-cursor-secret',
              AWS_NODEJS_CONNECTION_REUSE_ENABLED: '1',
            },
          });
          const ms = Number(out.stdout.trim().split('\n').pop());
          if (out.status !== 0 || !Number.isFinite(ms))
            failures.push(`${entry}: the bundle did not load: ${out.stderr.split('\n').slice(0, 3).join(' ')}`);
          else times.push(ms);
        }
        rows.push({
          function: basename(entry, '.ts'),
          bytes,
          kilobytes: round(bytes / 1024, 1),
          withinLimit: bytes <= BUNDLE_LIMIT_BYTES,
          initMsMedian: round(percentile(times, 50), 1),
          initMsMax: round(Math.max(...times), 1),
          runs,
        });
        ctx.log(`cold-start ${entry}: ${round(bytes / 1024, 1)} KB, init ${round(percentile(times, 50), 1)} ms`);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const notes = [
      'Bundles built with the esbuild settings of serverless.yml (custom.esbuild, `@aws-sdk/*` left to the runtime); init time (loading the runtime SDK included) = importing the bundle in a fresh node process (median), no handler call.',
    ];
    return {
      name: 'cold-start',
      title: 'Cold start',
      status: failures.length ? 'failed' : 'ok',
      failures,
      notes,
      parameters: { runs, limitBytes: BUNDLE_LIMIT_BYTES },
      rows,
      seconds: round((performance.now() - t0) / 1000, 1),
      charts: [],
    };
  },
};
