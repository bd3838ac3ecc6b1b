/**
 * The plugin's node-side parts: its HTTP transport (node:http behind the client's fetch port) and the node's pool
 * check cache with its lock. A loopback server and a temporary folder; no network namespaces.
 */
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../../cli/api/http-client.ts';
import { ConnectionError, ProblemError } from '../../cli/errors.ts';
import { fileCache } from '../../cni/node-cache.ts';
import { nodeFetch } from '../../cni/transport.ts';

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return `http://127.0.0.1:${port}`;
}

describe('Transport: nodeFetch under HttpClient', () => {
  const seen: { method: string; url: string; body: string; type: string | undefined }[] = [];
  let origin = '';
  let release: (() => void) | undefined;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', body, type: req.headers['content-type'] });
      if (req.url === '/v1/slow') {
        release = () => res.end('{}');
        return;
      }
      if (req.url === '/v1/missing') {
        res
          .writeHead(404, { 'content-type': 'application/problem+json' })
          .end(
            JSON.stringify({ status: 404, code: 'PoolNotFound', title: 'Not Found', detail: 'pool p does not exist' }),
          );
        return;
      }
      res
        .writeHead(201, { 'content-type': 'application/json', 'x-answer': 'yes' })
        .end(JSON.stringify({ name: 'c1', echo: JSON.parse(body || 'null') }));
    });
  });

  beforeAll(async () => {
    origin = await listen(server);
  });
  afterAll(async () => {
    release?.();
    await new Promise((resolve) => server.close(resolve));
  });

  it('sends the method, path, query and JSON body, and answers status, headers and parsed body', async () => {
    const client = new HttpClient({ endpoint: new URL(origin), fetch: nodeFetch });
    const res = await client.request('POST', '/v1/pools/p/claims', {
      body: { name: 'c1', labels: { 'cni.ipam/node': 'n1' } },
      query: { limit: 2 },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ name: 'c1', echo: { name: 'c1', labels: { 'cni.ipam/node': 'n1' } } });
    expect(res.headers.get('X-Answer')).toBe('yes');
    expect(seen.at(-1)).toEqual({
      method: 'POST',
      url: '/v1/pools/p/claims?limit=2',
      body: '{"name":"c1","labels":{"cni.ipam/node":"n1"}}',
      type: 'application/json',
    });
  });

  it("turns a problem answer into the service's ProblemError", async () => {
    const client = new HttpClient({ endpoint: new URL(origin), fetch: nodeFetch });
    const error = await client.request('GET', '/v1/missing').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProblemError);
    expect(error).toMatchObject({ status: 404, code: 'PoolNotFound' });
  });

  it('fails as fetch does: a refused connection and a timeout are ConnectionErrors naming the reason', async () => {
    const closed = createServer();
    const closedOrigin = await listen(closed);
    await new Promise((resolve) => closed.close(resolve));
    const refused = await new HttpClient({ endpoint: new URL(closedOrigin), fetch: nodeFetch })
      .request('GET', '/v1/health')
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConnectionError);
    expect(refused).toMatchObject({ refused: true });
    const slow = await new HttpClient({ endpoint: new URL(origin), fetch: nodeFetch, timeoutMs: 100 })
      .request('GET', '/v1/slow')
      .catch((e: unknown) => e);
    expect(slow).toBeInstanceOf(ConnectionError);
    expect(String((slow as Error).message)).toContain('timed out');
  });
});

describe('Node cache: fileCache', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ipam-cni-cache-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('lets one caller check a pool while the others wait and take its answer from the cache', async () => {
    // Prepare: a check that stays open until released, so the others arrive while it holds the lock.
    const cache = fileCache(join(dir, 'a'), () => undefined, 10_000);
    let checks = 0;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started: () => void = () => undefined;
    const opened = new Promise<void>((resolve) => (started = resolve));
    const check = async () => {
      checks += 1;
      started();
      await gate;
      const prefixes = new Map([['10-0-0-0-24', 24]]);
      cache.write('k', prefixes);
      return prefixes;
    };
    const first = cache.exclusive('k', check, () => cache.read('k'));
    await opened;
    // Act: three more callers wait on the lock; then the first finishes.
    const waiting = [1, 2, 3].map(() => cache.exclusive('k', check, () => cache.read('k')));
    release();
    const answers = await Promise.all([first, ...waiting]);
    // Assess
    expect(checks).toBe(1);
    for (const answer of answers) expect([...answer]).toEqual([['10-0-0-0-24', 24]]);
  });

  it('takes over a lock left by a process that died (older than the timeout) and checks itself', async () => {
    // Prepare: a lock file from long ago and no cache.
    const folder = join(dir, 'b');
    const cache = fileCache(folder, () => undefined, 500);
    cache.write('other', new Map());
    writeFileSync(join(folder, 'pool-k.lock'), '');
    const old = new Date(Date.now() - 60_000);
    utimesSync(join(folder, 'pool-k.lock'), old, old);
    // Act
    const answer = await cache.exclusive(
      'k',
      () => Promise.resolve(new Map([['r', 64]])),
      () => cache.read('k'),
    );
    // Assess
    expect([...answer]).toEqual([['r', 64]]);
  });
});
