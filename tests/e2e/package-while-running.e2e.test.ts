import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalStack } from '../../scripts/local-stack.ts';
import { callApi, startTestStack } from '../support/local-stack.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** `npm run package` as a user runs it beside `npm start`: the default work folder, output to a temporary folder. */
function packageAsUsersDo(outDir: string): Promise<{ code: number | null; output: string }> {
  const osls = join(dirname(createRequire(import.meta.url).resolve('osls/package.json')), 'bin', 'serverless.js');
  const env: NodeJS.ProcessEnv = { ...process.env };
  // The shell of a user who runs `npm run package`: none of the local stack's or the template test's settings.
  delete env.ESBUILD_WORK_FOLDER;
  delete env.DYNAMODB_ENDPOINT;
  return new Promise((resolveRun) => {
    const child = spawn(process.execPath, [osls, 'package', '--stage', 'dev', '--package', outDir], {
      cwd: repoRoot,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('close', (code) => resolveRun({ code, output }));
  });
}

describe('Local stack: packaging while it runs, and a handler that cannot load', () => {
  let stack: LocalStack;
  let outDir: string;

  beforeAll(async () => {
    stack = await startTestStack();
    outDir = mkdtempSync(join(tmpdir(), 'ipam-package-'));
  });

  afterAll(async () => {
    await stack?.stop();
    if (outDir) rmSync(outDir, { recursive: true, force: true });
  });

  it('keeps serving after `serverless package` finished beside it', { timeout: 240_000 }, async () => {
    // Prepare
    expect((await callApi(stack, 'POST', '/v1/pools', { name: 'before' })).status).toBe(201);
    // Act
    const packaged = await packageAsUsersDo(outDir);
    // Assess: packaging worked, and cleaned up only its own folder.
    expect({ code: packaged.code, tail: packaged.code === 0 ? '' : packaged.output.slice(-2000) }).toEqual({
      code: 0,
      tail: '',
    });
    expect(existsSync(join(outDir, 'api.zip'))).toBe(true);
    const health = await callApi(stack, 'GET', '/v1/health');
    expect({ status: health.status, errorMessage: (health.body as { errorMessage?: string }).errorMessage }).toEqual({
      status: 200,
      errorMessage: undefined,
    });
    const pools = await callApi(stack, 'GET', '/v1/pools');
    expect(pools.status).toBe(200);
    expect((pools.body as { items: { name: string }[] }).items.map((p) => p.name)).toContain('before');
    expect(existsSync(stack.buildFolder)).toBe(true);
    expect(existsSync(join(repoRoot, '.esbuild', 'package'))).toBe(false);
  });

  it('answers 500 Internal Server Error, as API Gateway does, while the handler cannot load', async () => {
    // Prepare: the bundles disappear from under the running server (as a stray clean-up of .esbuild would do).
    const aside = `${stack.buildFolder}.aside`;
    renameSync(stack.buildFolder, aside);
    try {
      // Act
      const health = await callApi(stack, 'GET', '/v1/health');
      const create = await callApi(stack, 'POST', '/v1/pools', { name: 'lost' });
      // Assess: a server error with API Gateway's body, never a 200 carrying the Lambda error object.
      for (const answer of [health, create]) {
        expect({ status: answer.status, body: answer.body }).toEqual({
          status: 500,
          body: { message: 'Internal Server Error' },
        });
      }
      expect(stack.logTail()).toMatch(/Cannot find module/);
    } finally {
      renameSync(aside, stack.buildFolder);
    }
    // And it recovers once the bundles are back.
    expect((await callApi(stack, 'GET', '/v1/health')).status).toBe(200);
  });
});
