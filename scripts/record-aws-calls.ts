/**
 * Regenerates tests/fixtures/aws-calls.jsonl: every distinct AWS call each function made over the int and e2e tiers,
 * for the IAM check in tests/unit/template.test.ts. The e2e tier runs the real bundles under serverless-offline, which
 * names each function; the int tier builds them in process, and runs the API's handler, the stream function's
 * projections and the reconciler each in its function's scope (tests/support/int-functions.ts), so its calls are
 * recorded as `ipam-int-api`, `ipam-int-mirror` and `ipam-int-reconciler`; a test's own setup is in no scope and is
 * dropped.
 *
 *   npm run record:aws-calls                          (both tiers: about as long as the two together)
 *   npm run record:aws-calls -- --project int --add   (one tier, its calls added to the fixture's)
 *
 * Why a committed fixture rather than a test that runs after the others: vitest gives no order between its projects,
 * and recording on every CI run would tie the unit tier to the other tiers' duration. A new call path therefore needs a
 * new recording (the unit test says which function has none).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AwsCall } from '../shared/adapters/aws-call-log.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const FIXTURE = join(repoRoot, 'tests', 'fixtures', 'aws-calls.jsonl');
const FUNCTIONS = ['api', 'mirror', 'reconciler', 'claimResource'] as const;

/**
 * A partition key as the roles' `dynamodb:LeadingKeys` patterns read it: its kind (the text before the first `#`) and
 * a placeholder for the rest (pool, address, ids). The roles' patterns are all of the form `KIND#*` (template.test
 * checks it), so the placeholder is allowed or refused exactly as every key of its kind; without it, the int tier's
 * pools and addresses would make the fixture tens of thousands of lines, one per key.
 */
function anonymized(key: string): string {
  const kind = key.indexOf('#');
  return kind < 0 ? key : `${key.slice(0, kind)}#<key>`;
}

/** The recorded lines as the fixture keeps them: function by its key in serverless.yml, table by its role (the one table). */
export function normalize(lines: readonly string[]): string[] {
  const out = new Set<string>();
  for (const line of lines) {
    if (line.trim() === '') continue;
    const call = JSON.parse(line) as AwsCall;
    const fn = FUNCTIONS.find((key) => call.function.endsWith(`-${key}`));
    if (fn === undefined) continue;
    const { table, ...rest } = call;
    // Keys become their kind, so a re-recording changes only where a call path changed.
    const leadingKeys = rest.leadingKeys ? [...new Set(rest.leadingKeys.map(anonymized))].sort() : undefined;
    out.add(
      JSON.stringify({
        ...rest,
        ...(leadingKeys ? { leadingKeys } : {}),
        function: fn,
        ...(table !== undefined ? { table: 'Table' } : {}),
      }),
    );
  }
  return [...out].sort();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = mkdtempSync(join(tmpdir(), 'ipam-aws-calls-'));
  const log = join(dir, 'calls.jsonl');
  try {
    const args = process.argv.slice(2).filter((a) => a !== '--add');
    const tiers = args.includes('--project') ? [] : ['--project', 'int', '--project', 'e2e'];
    const run = spawnSync(
      process.execPath,
      [join(repoRoot, 'node_modules', 'vitest', 'vitest.mjs'), 'run', ...tiers, ...args],
      {
        cwd: repoRoot,
        stdio: 'inherit',
        env: { ...process.env, AWS_IPAM_CALL_LOG: log },
      },
    );
    if (run.status !== 0) throw new Error(`the tests failed (${run.status}): no fixture written`);
    const kept =
      process.argv.includes('--add') && existsSync(FIXTURE)
        ? readFileSync(FIXTURE, 'utf8')
            .split('\n')
            .map((l) =>
              l.trim() === ''
                ? l
                : JSON.stringify({
                    ...(JSON.parse(l) as AwsCall),
                    function: `fixture-${(JSON.parse(l) as AwsCall).function}`,
                  }),
            )
        : [];
    const lines = normalize([...kept, ...(existsSync(log) ? readFileSync(log, 'utf8').split('\n') : [])]);
    mkdirSync(dirname(FIXTURE), { recursive: true });
    writeFileSync(FIXTURE, `${lines.join('\n')}\n`);
    console.log(`${lines.length} distinct calls written to ${FIXTURE}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
