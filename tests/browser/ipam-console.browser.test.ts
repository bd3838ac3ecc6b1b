import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalStack } from '../../scripts/local-stack.ts';
import { launchBrowser, pageErrors, seriousA11yViolations } from '../support/browser.ts';
import { callApi, startTestStack } from '../support/local-stack.ts';

/**
 * `ipam console` against the local stack, through a test endpoint that checks each request's SigV4 signature (with
 * the credentials the CLI was given) before passing it on: the page's calls arrive signed, the browser never holds
 * a credential, and the console refuses requests with a foreign Host or Origin or without the run's token.
 */
const bin = fileURLToPath(new URL('../../cli/bin/ipam.js', import.meta.url));
const credentials = {
  accessKeyId: 'AKIDCONSOLETEST',
  secretAccessKey: 'console-test-secret',
  sessionToken: 'console-test-session',
};
const region = 'eu-west-3';

interface Seen {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly signatureValid: boolean;
}

let stack: LocalStack;
let browser: Browser;
let page: Page;
let endpoint: Server;
let cli: ChildProcess;
let consoleUrl: URL;
const seen: Seen[] = [];

/** Recomputes the request's signature as API Gateway would and says whether the one sent matches. */
async function signatureValid(method: string, url: URL, headers: IncomingHttpHeaders, body: string): Promise<boolean> {
  const authorization = headers.authorization;
  const amzDate = headers['x-amz-date'];
  if (typeof authorization !== 'string' || typeof amzDate !== 'string') return false;
  const signedNames = /SignedHeaders=([^,]+)/.exec(authorization)?.[1]?.split(';') ?? [];
  const signed: Record<string, string> = {};
  for (const name of signedNames) signed[name] = String(headers[name] ?? '');
  const query: Record<string, string> = {};
  for (const [key, value] of url.searchParams) query[key] = value;
  const signer = new SignatureV4({ credentials, region, service: 'execute-api', sha256: Sha256, applyChecksum: false });
  const date = new Date(amzDate.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/, '$1-$2-$3T$4:$5:$6Z'));
  const again = await signer.sign(
    {
      method,
      protocol: 'http:',
      hostname: url.hostname,
      port: Number(url.port),
      path: url.pathname,
      query,
      headers: signed,
      ...(body ? { body } : {}),
    },
    { signingDate: date },
  );
  return again.headers.authorization === authorization;
}

/** The test endpoint: records and checks each request, then forwards it to the local stack. */
function startEndpoint(): Promise<Server> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const url = new URL(req.url ?? '/', `http://${req.headers.host}`);
      void signatureValid(req.method ?? 'GET', url, req.headers, body).then((valid) => {
        seen.push({ method: req.method ?? 'GET', path: url.pathname, headers: req.headers, signatureValid: valid });
        const upstream = new URL(stack.apiUrl);
        const headers: Record<string, string> = {};
        for (const name of ['accept', 'content-type', 'if-match'])
          if (typeof req.headers[name] === 'string') headers[name] = req.headers[name];
        const forward = request(
          { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          },
        );
        forward.end(body || undefined);
      });
    });
  });
  return new Promise((resolveListen) => server.listen(0, '127.0.0.1', () => resolveListen(server)));
}

/** Starts `ipam console` as a user would and reads the URL it prints. */
function startCli(endpointUrl: string): Promise<{ child: ChildProcess; url: URL }> {
  const child = spawn(process.execPath, [bin, '--endpoint', endpointUrl, '--region', region, 'console', '--sign'], {
    env: {
      ...process.env,
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      AWS_SESSION_TOKEN: credentials.sessionToken,
      AWS_PROFILE: '',
      AWS_CONFIG_FILE: '/nonexistent',
      AWS_SHARED_CREDENTIALS_FILE: '/nonexistent',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolveUrl, reject) => {
    let out = '';
    let err = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const match = /(http:\/\/127\.0\.0\.1:\d+\/console\/\?token=[\w-]+)/.exec(out);
      if (match) resolveUrl({ child, url: new URL(match[1]!) });
    });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    child.once('exit', (code) =>
      reject(new Error(`ipam console exited (${code}) before printing its URL:\n${out}\n${err}`)),
    );
  });
}

/** A raw request to the console with the given headers (fetch would not let a test set Host). */
function raw(
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: string; headers: IncomingHttpHeaders }> {
  return new Promise((resolveAnswer, reject) => {
    const req = request({ host: '127.0.0.1', port: consoleUrl.port, path, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c));
      res.on('end', () => resolveAnswer({ status: res.statusCode ?? 0, body, headers: res.headers }));
    });
    req.once('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  [stack, browser, endpoint] = await Promise.all([startTestStack(), launchBrowser(), startEndpoint()]);
  expect((await callApi(stack, 'POST', '/v1/pools', { name: 'edge' })).status).toBe(201);
  expect((await callApi(stack, 'POST', '/v1/pools/edge/ranges', { cidr: '192.168.8.0/24' })).status).toBe(201);
  const started = await startCli(`http://127.0.0.1:${(endpoint.address() as AddressInfo).port}`);
  cli = started.child;
  consoleUrl = started.url;
  page = await browser.newPage();
});

afterAll(async () => {
  cli?.kill('SIGTERM');
  await browser?.close();
  await new Promise((r) => (endpoint ? endpoint.close(r) : r(undefined)));
  await stack?.stop();
});

describe('ipam console', () => {
  it('serves the console behind the printed URL and signs every API call it forwards', async () => {
    const errors = pageErrors(page);
    const browserAuthorization: string[] = [];
    page.on('request', (r) => {
      const value = r.headers().authorization;
      if (value !== undefined) browserAuthorization.push(value);
    });
    await page.goto(consoleUrl.href);
    // The token goes into a cookie and out of the address bar.
    expect(page.url()).toBe(`${consoleUrl.origin}/console/`);
    await page.locator('main h1', { hasText: 'Pools' }).waitFor();
    await page.locator('main table', { hasText: 'edge' }).waitFor();

    // An action through it: a claim made from the page, its body under the signature too.
    await page.getByRole('link', { name: 'edge' }).click();
    await page.locator('main h1', { hasText: 'Pool edge' }).waitFor();
    await page.getByLabel('Claim name').fill('gw');
    await page.getByLabel('Owner').fill('Node/gw/n-1');
    await page.getByRole('button', { name: 'Claim', exact: true }).click();
    await page.locator('main h1', { hasText: 'Claim gw' }).waitFor();
    expect((await callApi(stack, 'GET', '/v1/pools/edge/claims/gw')).status).toBe(200);
    expect(await seriousA11yViolations(page)).toEqual([]);

    expect(seen.length).toBeGreaterThan(3);
    expect(seen.some((s) => s.method === 'POST' && s.path === '/v1/pools/edge/claims')).toBe(true);
    for (const request of seen) {
      expect(request.headers.authorization).toMatch(
        new RegExp(`^AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/\\d{8}/${region}/execute-api/aws4_request`),
      );
      expect(request.headers['x-amz-security-token']).toBe(credentials.sessionToken);
      expect(request.signatureValid).toBe(true);
      // Nothing of the browser's own goes upstream.
      expect(request.headers.cookie).toBeUndefined();
      expect(request.headers.origin).toBeUndefined();
    }
    // The browser itself never sent (or held) a signature.
    expect(browserAuthorization).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('refuses a foreign Host, a foreign Origin and a request without the token, and forwards none of them', async () => {
    const cookie = (await page.context().cookies(consoleUrl.origin)).map((c) => `${c.name}=${c.value}`).join('; ');
    expect(cookie).toMatch(/^ipam_console_\d+=/);
    const before = seen.length;

    const ok = await raw('/v1/pools', { host: consoleUrl.host, cookie });
    expect(ok.status).toBe(200);
    expect(seen.length).toBe(before + 1);

    // DNS rebinding: a name that resolves to 127.0.0.1 still carries its own Host.
    const rebound = await raw('/v1/pools', { host: `attacker.example:${consoleUrl.port}`, cookie });
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.body)).toMatchObject({ code: 'ForeignHost' });
    const page2 = await raw('/console/', { host: `attacker.example:${consoleUrl.port}`, cookie });
    expect(page2.status).toBe(403);

    const crossOrigin = await raw('/v1/pools', { host: consoleUrl.host, cookie, origin: 'http://127.0.0.1:9' });
    expect(crossOrigin.status).toBe(403);
    expect(JSON.parse(crossOrigin.body)).toMatchObject({ code: 'ForeignOrigin' });

    const noToken = await raw('/v1/pools', { host: consoleUrl.host });
    expect(noToken.status).toBe(403);
    expect(JSON.parse(noToken.body)).toMatchObject({ code: 'TokenRequired' });
    const wrongToken = await raw('/console/?token=not-the-token', { host: consoleUrl.host });
    expect(wrongToken.status).toBe(403);

    expect(seen.length).toBe(before + 1);
  });
});
