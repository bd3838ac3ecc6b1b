import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { createDynamoClient } from '../../shared/adapters/dynamodb/client.ts';
import { freePort } from '../../scripts/dynamodb-local.ts';
import type { LocalStack, LocalStackState } from '../../scripts/local-stack.ts';
import { callApi, isAlive, startTestStack } from '../support/local-stack.ts';
import { rcodeOf, udpQuery } from '../support/dns-query.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const scheduleEvent: unknown = JSON.parse(readFileSync(join(repoRoot, 'events/schedule.json'), 'utf8'));

describe('Local stack: startLocalStack()', () => {
  let stack: LocalStack;

  beforeAll(async () => {
    stack = await startTestStack();
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('serves GET /v1/health through serverless-offline on loopback', async () => {
    // Act
    const health = await callApi(stack, 'GET', '/v1/health');
    // Assess
    expect(new URL(stack.apiUrl).hostname).toBe('127.0.0.1');
    expect(health.status).toBe(200);
    expect(health.headers.get('content-type')).toMatch(/^application\/json/);
  });

  it('refuses writes a web page of another origin could send, through the local stack (issue 33, item 8)', async () => {
    // Act: form-like text/plain POSTs (no CORS preflight in a browser) as a browser sends them from another origin
    const page = (headers: Record<string, string>) =>
      fetch(`${stack.apiUrl}/v1/pools`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', ...headers },
        body: JSON.stringify({ name: 'forged' }),
      });
    const crossSite = await page({ 'sec-fetch-site': 'cross-site' });
    const otherOrigin = await page({ origin: 'https://evil.example' });
    // Assess: both refused, nothing created; curl's own form-typed POST (no browser headers) is taken
    expect([crossSite.status, otherOrigin.status]).toEqual([403, 403]);
    expect((await callApi(stack, 'GET', '/v1/pools/forged')).status).toBe(404);
    expect(
      (
        await fetch(`${stack.apiUrl}/v1/pools`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: JSON.stringify({ name: 'curl-made' }),
        })
      ).status,
    ).toBe(201);
  });

  it('lets no page of another origin read its answers (no CORS grant to it; black-box run)', async () => {
    // Act: a cross-origin read as a browser sends it, and its preflight
    const read = await fetch(`${stack.apiUrl}/v1/pools`, { headers: { origin: 'https://evil.example' } });
    const preflight = await fetch(`${stack.apiUrl}/v1/pools`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    // Assess: neither names that origin, nor allows credentials (a browser then withholds the answer from the page)
    for (const res of [read, preflight]) {
      expect(res.headers.get('access-control-allow-origin')).not.toBe('https://evil.example');
      expect(res.headers.get('access-control-allow-origin')).not.toBe('*');
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    }
  });

  it("hands the function a decoded path, as API Gateway's HTTP API does: a percent-encoded name names the decoded one (issue 33)", async () => {
    // Prepare
    expect((await callApi(stack, 'POST', '/v1/pools', { name: 'pe' })).status).toBe(201);
    // Act
    const encoded = await callApi(stack, 'GET', '/v1/pools/p%65');
    // Assess: the HTTP API decodes rawPath before the function runs (docs/deploy.md, "Names in paths"), and so does
    // the local stack; per-pool authority therefore rests on the pool's `access` and on IAM Allow statements
    expect(encoded.status).toBe(200);
    expect((encoded.body as { name: string }).name).toBe('pe');
  });

  it('answers its own edges: an unknown path 404 and a wrong method 405 with Allow as problem documents, JSON ending in a newline', async () => {
    // Prepare
    expect((await callApi(stack, 'POST', '/v1/pools', { name: 'edges' })).status).toBe(201);
    const send = (method: string, path: string) =>
      fetch(`${stack.apiUrl}${path}`, { method, signal: AbortSignal.timeout(30_000) });
    // Act
    const nothing = await send('GET', '/v1/nothing');
    const put = await send('PUT', '/v1/pools/edges');
    const read = await send('GET', '/v1/pools/edges');
    const [nothingText, putText, readText] = await Promise.all([nothing.text(), put.text(), read.text()]);
    // Assess: the function's answers (serverless-offline's own route list is never shown)
    expect([nothing.status, nothing.headers.get('content-type')]).toEqual([404, 'application/problem+json']);
    expect(JSON.parse(nothingText)).toMatchObject({ code: 'NotFound' });
    expect([put.status, put.headers.get('allow')]).toEqual([405, 'GET, DELETE']);
    expect(JSON.parse(putText)).toMatchObject({ code: 'MethodNotAllowed' });
    for (const text of [nothingText, putText, readText]) expect(text.endsWith('}\n')).toBe(true);
  });

  it('runs its functions with LOCAL_STACK=true (from --param, not the shell): the principal header names the caller', async () => {
    // Act: a pool created by a principal the header names
    const pool = `e2e-principal-${process.pid}`;
    const created = await fetch(`${stack.apiUrl}/v1/pools`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-ipam-principal': 'arn:aws:iam::123456789012:role/e2e-admin' },
      body: JSON.stringify({ name: pool }),
      signal: AbortSignal.timeout(30_000),
    });
    // Assess: outside the local stack the header is refused with 400 (shared/adapters/http/request.ts)
    expect({ status: created.status, body: (await created.text()).slice(0, 200) }).toMatchObject({ status: 201 });
  });

  it('delivers a table write to the mirror function through the stream poller', async () => {
    // Prepare
    const client = createDynamoClient({ endpoint: stack.endpoint });
    const before = stack.poller!.stats().recordsDelivered;
    // Act: an item no handler owns, written behind the API's back.
    await client.send(
      new PutItemCommand({
        TableName: stack.tableName,
        Item: { PK: { S: 'E2E#probe' }, SK: { S: 'PROBE' }, entity: { S: 'e2e-probe' } },
      }),
    );
    client.destroy();
    // Assess
    await vi.waitFor(() => expect(stack.poller!.stats().recordsDelivered).toBeGreaterThan(before), {
      timeout: 30_000,
      interval: 100,
    });
    expect(stack.poller!.failures()).toEqual([]);
  });

  it('answers DNS for a claim in a pool with dns (the local target by default), and NXDOMAIN after its release', async () => {
    // Prepare: a pool with a zone and no target, as the README's tour makes it.
    const created = await callApi(stack, 'POST', '/v1/pools', {
      name: 'dns-pods',
      dns: { zone: 'e2e.example.internal' },
    });
    expect(created.status).toBe(201);
    expect((await callApi(stack, 'POST', '/v1/pools/dns-pods/ranges', { cidr: '10.77.0.0/24' })).status).toBe(201);
    const port = stack.dns!.port;
    const ask = () => udpQuery(port, { name: 'web-0.e2e.example.internal', type: 'A' });
    // Act
    const claim = await callApi(stack, 'POST', '/v1/pools/dns-pods/claims', {
      name: 'web-0',
      owner: { kind: 'Pod', name: 'web-0', uid: 'e2e-dns' },
    });
    expect(claim.status).toBe(201);
    const address = (claim.body as { addresses: { address: string }[] }).addresses[0]!.address;
    // Assess: the stream function published it; polled, since the poller delivers when it next reads the stream.
    await vi.waitFor(
      async () => expect((await ask()).answers?.map((a) => (a as { data: unknown }).data)).toEqual([address]),
      { timeout: 30_000, interval: 200 },
    );
    // Act: release
    expect((await callApi(stack, 'DELETE', '/v1/pools/dns-pods/claims/web-0')).status).toBeLessThan(300);
    // Assess
    await vi.waitFor(async () => expect(rcodeOf(await ask())).toBe('NXDOMAIN'), { timeout: 30_000, interval: 200 });
  });

  it("runs the reconciler through serverless-offline's Lambda API", async () => {
    // Act
    const run = stack.invoke('reconciler', scheduleEvent).then(
      () => 'ran',
      (error: Error) => error.message,
    );
    // Assess
    await expect(run).resolves.toBe('ran');
  });

  it('stops DynamoDB Local and serverless-offline with their whole process group', async () => {
    // Prepare
    const { dynamodb, offline } = stack.pids;
    expect([isAlive(dynamodb), isAlive(offline)]).toEqual([true, true]);
    // Act
    await stack.stop();
    // Assess
    expect({ java: isAlive(dynamodb), offline: isAlive(offline), offlineGroup: isAlive(-offline) }).toEqual({
      java: false,
      offline: false,
      offlineGroup: false,
    });
    await expect(fetch(`${stack.apiUrl}/v1/health`, { signal: AbortSignal.timeout(2000) })).rejects.toThrow();
  });
});

describe('Local stack: the `npm start` command', () => {
  it('answers on --port and leaves no process behind after SIGTERM', { timeout: 180_000 }, async () => {
    // Prepare
    const port = await freePort();
    // A DNS port of its own: 5300, the default, may be a running stack's.
    const dnsPort = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'ipam-stack-'));
    const stateFile = join(dir, 'state.json');
    // tsx's loader in the stack's own process, not tsx's CLI: the CLI relays a signal to its child and SIGKILLs it
    // (exit 143, Java orphaned) when the child does not acknowledge within 30 ms, which a loaded machine misses.
    const child = spawn(
      process.execPath,
      [
        ...['--import', 'tsx', 'scripts/local-stack.ts', '--port', String(port), '--state-file', stateFile],
        ...['--dns-port', String(dnsPort)],
      ],
      {
        cwd: repoRoot,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      await vi.waitFor(() => expect(existsSync(stateFile), output).toBe(true), { timeout: 120_000, interval: 200 });
      const state = JSON.parse(readFileSync(stateFile, 'utf8')) as LocalStackState;
      expect(state.apiUrl).toBe(`http://127.0.0.1:${port}`);
      expect(state.dnsPort).toBe(dnsPort);
      const health = await fetch(`${state.apiUrl}/v1/health`);
      expect(health.status).toBe(200);
      expect(output).toContain(`HTTP API        http://127.0.0.1:${port}/v1/health`);
      // The line the README's tours and ipam need, no route lines for a Lambda API nothing serves on this port, and the
      // AWS SDK's 8-line Node version warning replaced by one line of the banner.
      expect(output).toContain(`export PORT=${port} IPAM_ENDPOINT=http://127.0.0.1:${port}\n`);
      expect(output).not.toMatch(/2015-03-31\/functions\/\S+\/invocations/);
      expect(output).not.toContain('NodeVersionSupportWarning');
      // Act
      child.kill('SIGTERM');
      const code = await exited;
      // Assess
      expect({ code, java: isAlive(state.pids.dynamodb), offlineGroup: isAlive(-state.pids.offline) }).toEqual({
        code: 0,
        java: false,
        offlineGroup: false,
      });
      expect(existsSync(stateFile)).toBe(false);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('stops what it started when SIGTERM arrives while it is still starting', { timeout: 180_000 }, async () => {
    // Prepare
    const dynamoPort = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'ipam-stack-'));
    // As above: tsx's loader, so the signal reaches the stack itself.
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'scripts/local-stack.ts',
        '--port',
        String(await freePort()),
        '--dynamodb-port',
        String(dynamoPort),
        '--dns-port',
        '0',
        '--state-file',
        join(dir, 'state.json'),
      ],
      {
        cwd: repoRoot,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const javaOnPort = () =>
      execFileSync('pgrep', ['-f', `DynamoDBLocal.jar -port ${dynamoPort} `])
        .toString()
        .trim();
    try {
      // serverless-offline is starting: DynamoDB Local runs, the stack is not ready yet.
      await vi.waitFor(() => expect(output).toContain('[offline]'), { timeout: 120_000, interval: 50 });
      expect(output).not.toContain('Local stack ready');
      expect(javaOnPort()).not.toBe('');
      // Act
      child.kill('SIGTERM');
      const code = await exited;
      // Assess
      expect(code).toBe(0);
      expect(() => javaOnPort()).toThrow();
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
