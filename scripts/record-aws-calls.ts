/**
 * Regenerates tests/fixtures/aws-calls.jsonl: every distinct AWS call each function made over the e2e tier (the real
 * bundles under serverless-offline, which names each function), for the IAM check in tests/unit/template.test.ts.
 *
 *   npm run record:aws-calls          (about as long as the e2e tier: a few minutes)
 *
 * Why a committed fixture rather than a test that runs after the others: vitest gives no order between its projects,
 * and recording on every CI run would tie the unit tier to the e2e tier's duration. The unit test instead fails when
 * a bundle imports an SDK command the fixture has no call of, so a new call path asks for a new recording.
 *
 * The int tier is not recorded: its tests build the core in process, where no function name says whose role a call
 * would run under.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AwsCall } from '../shared/adapters/aws-call-log.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const FIXTURE = join(repoRoot, 'tests', 'fixtures', 'aws-calls.jsonl');
const FUNCTIONS = ['api', 'mirror', 'reconciler'] as const;

/** A key with its run-time ids (UUIDs, 16-hex event ids) replaced by `<uid>` and `<id>`. */
function anonymized(key: string): string {
  return key.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uid>').replace(/#-[0-9a-f]{16}$/, '#-<id>');
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
    // Ids drawn at run time (claim uids, event ids) in a key become placeholders, so a re-recording changes only
    // where a call path changed; IAM's LeadingKeys patterns match the placeholder as they match any id.
    const leadingKeys = rest.leadingKeys?.map(anonymized);
    out.add(JSON.stringify({ ...rest, ...(leadingKeys ? { leadingKeys } : {}), function: fn, ...(table !== undefined ? { table: 'Table' } : {}) }));
  }
  return [...out].sort();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = mkdtempSync(join(tmpdir(), 'ipam-aws-calls-'));
  const log = join(dir, 'calls.jsonl');
  try {
    const run = spawnSync(process.execPath, [join(repoRoot, 'node_modules', 'vitest', 'vitest.mjs'), 'run', '--project', 'e2e', ...process.argv.slice(2)], {
      cwd: repoRoot,
      stdio: 'inherit',
      env: { ...process.env, AWS_IPAM_CALL_LOG: log },
    });
    if (run.status !== 0) throw new Error(`the e2e tier failed (${run.status}): no fixture written`);
    const lines = normalize(existsSync(log) ? readFileSync(log, 'utf8').split('\n') : []);
    mkdirSync(dirname(FIXTURE), { recursive: true });
    writeFileSync(FIXTURE, `${lines.join('\n')}\n`);
    console.log(`${lines.length} distinct calls written to ${FIXTURE}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
