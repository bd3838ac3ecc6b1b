/**
 * The web console's HTTP server: it serves the page under /console/ and forwards every other request to the API.
 *
 * Two uses, one server:
 * - The local stack (scripts/local-stack.ts) puts it on the API's port in front of serverless-offline: the page is at
 *   /console/ and the API answers as before (requests and answers pass through unchanged).
 * - `ipam console` runs it on 127.0.0.1 in front of a deployed stage, the way `kubectl proxy` fronts a cluster: it
 *   signs each forwarded /v1 request with SigV4 from the user's credentials, which never reach the browser. Because
 *   any local page and any DNS name pointed at 127.0.0.1 can reach a loopback port, it then answers only requests
 *   whose Host (and Origin, when sent) is its own and that carry the per-run token: the printed URL has it as
 *   `?token=`, which the server trades for a SameSite=Strict, HttpOnly cookie and removes from the address bar.
 *
 * Hand-rolled on node:http rather than a proxy library: the forwarding that has to be ours (buffer the body, sign it,
 * pick the headers that go out) is most of the code, and a library would add a dependency for the remaining loop.
 */
import {
  createServer,
  request as httpRequest,
  Agent as HttpAgent,
  type IncomingMessage,
  type ServerResponse,
  type OutgoingHttpHeaders,
} from 'node:http';
import { request as httpsRequest, Agent as HttpsAgent } from 'node:https';
import { timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { RequestSigner } from '../api/sigv4.ts';
import { consoleAssets } from './assets.ts';

export interface ConsoleServerOptions {
  /** The API's base URL (a path prefix such as a stage is kept). */
  readonly upstream: URL;
  /** Default 127.0.0.1. */
  readonly host?: string;
  /** Default 0: a free port. */
  readonly port?: number;
  /** Signs each forwarded request (a deployed stage); absent for the local stack. */
  readonly signer?: RequestSigner;
  /**
   * The per-run token of `ipam console`. When set, the server answers only requests with its own Host and Origin and
   * the token (query or cookie), forwards only /v1 routes, and sends upstream only the headers the API reads.
   */
  readonly token?: string;
  /** Receives one line per refused request. */
  readonly log?: (line: string) => void;
}

export interface ConsoleServer {
  /** http://127.0.0.1:PORT */
  readonly origin: string;
  readonly port: number;
  /** The page's address; with the token when there is one. */
  readonly consoleUrl: string;
  close(): Promise<void>;
}

/** The largest request body forwarded (API bodies are a few hundred bytes). */
const MAX_BODY = 1 << 20;
/** Hop-by-hop headers (RFC 9110 7.6.1) are never forwarded, in either direction. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'proxy-authorization',
  'proxy-authenticate',
]);
/** The request headers the API reads; the only ones `ipam console` forwards (no cookies, no browser noise). */
const FORWARDED = ['accept', 'content-type', 'if-match', 'if-none-match'];
/** What the page may load and where it may connect: only this origin, no inline script. */
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
} as const;

/** Starts the server and resolves once it listens. */
export async function startConsoleServer(options: ConsoleServerOptions): Promise<ConsoleServer> {
  const host = options.host ?? '127.0.0.1';
  const upstream = options.upstream;
  const agent =
    upstream.protocol === 'https:' ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
  const strict = options.token !== undefined;
  let port = 0;
  const cookieName = () => `ipam_console_${port}`;

  const server = createServer((req, res) => {
    void handle(req, res).catch((error: unknown) => {
      if (!res.headersSent)
        sendProblem(
          res,
          502,
          'UpstreamUnavailable',
          'Bad Gateway',
          `the API at ${upstream.origin} did not answer: ${(error as Error).message}`,
        );
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://console.invalid');
    if (strict) {
      const refusal = refuse(req, url);
      if (refusal !== undefined) {
        options.log?.(`refused ${req.method} ${url.pathname}: ${refusal.detail}`);
        sendProblem(res, refusal.status, refusal.code, 'Forbidden', refusal.detail);
        return;
      }
      const token = url.searchParams.get('token');
      if (token !== null && (req.method === 'GET' || req.method === 'HEAD') && !url.pathname.startsWith('/v1/')) {
        // The token has done its job: keep it in a cookie and take it out of the address bar (and the history).
        url.searchParams.delete('token');
        res.writeHead(303, {
          location: url.pathname + url.search,
          'set-cookie': `${cookieName()}=${token}; Path=/; HttpOnly; SameSite=Strict`,
          'cache-control': 'no-store',
        });
        res.end();
        return;
      }
    }
    if (url.pathname === '/console' || url.pathname.startsWith('/console/')) {
      await serveConsole(req, res, url);
      return;
    }
    if (strict && !url.pathname.startsWith('/v1/')) {
      sendProblem(
        res,
        404,
        'NotFound',
        'Not Found',
        `${url.pathname} is not served here: the console is at /console/ and the API under /v1/.`,
      );
      return;
    }
    await forward(req, res);
  }

  /** Why a request is refused under `ipam console`, or undefined when it is ours. */
  function refuse(req: IncomingMessage, url: URL): { status: number; code: string; detail: string } | undefined {
    const own = new Set([`127.0.0.1:${port}`, `localhost:${port}`]);
    const hostHeader = (req.headers.host ?? '').toLowerCase();
    if (!own.has(hostHeader))
      return {
        status: 403,
        code: 'ForeignHost',
        detail: `Host ${JSON.stringify(hostHeader)} is not this console's (${[...own].join(' or ')}).`,
      };
    const origin = req.headers.origin;
    if (origin !== undefined && !own.has(origin.replace(/^http:\/\//, ''))) {
      return { status: 403, code: 'ForeignOrigin', detail: `Origin ${JSON.stringify(origin)} is not this console's.` };
    }
    const presented = url.searchParams.get('token') ?? cookieOf(req, cookieName());
    if (presented === undefined || !sameToken(presented, options.token ?? '')) {
      return {
        status: 403,
        code: 'TokenRequired',
        detail: "open the URL printed by `ipam console` (it carries this run's token).",
      };
    }
    return undefined;
  }

  async function serveConsole(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendProblem(res, 405, 'MethodNotAllowed', 'Method Not Allowed', "the console's files are read with GET.");
      return;
    }
    if (url.pathname === '/console') {
      res.writeHead(308, { location: `/console/${url.search}` });
      res.end();
      return;
    }
    const assets = await consoleAssets();
    const name = url.pathname.slice('/console/'.length);
    // Every other path under /console/ is a view of the page (deep links): the page reads its view from the path.
    const asset = name.startsWith('assets/') ? assets.get(name) : assets.get('index.html');
    if (asset === undefined) {
      sendProblem(res, 404, 'NotFound', 'Not Found', `no console file ${name}.`);
      return;
    }
    res.writeHead(200, { ...PAGE_HEADERS, 'content-type': asset.contentType, 'content-length': asset.body.length });
    res.end(req.method === 'HEAD' ? undefined : asset.body);
  }

  async function forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    if (body === undefined) {
      sendProblem(res, 413, 'PayloadTooLarge', 'Payload Too Large', `request bodies are limited to ${MAX_BODY} bytes.`);
      return;
    }
    const target = new URL(upstream.href.replace(/\/+$/, '') + (req.url ?? '/'));
    let headers: Record<string, string> = {};
    if (strict) {
      for (const name of FORWARDED) {
        const value = req.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
    } else {
      for (const [name, value] of Object.entries(req.headers)) {
        if (value === undefined || HOP_BY_HOP.has(name) || name === 'host') continue;
        headers[name] = Array.isArray(value) ? value.join(', ') : value;
      }
    }
    const method = req.method ?? 'GET';
    const text = body.length > 0 ? body.toString('utf8') : undefined;
    if (options.signer)
      headers = await options.signer({ method, url: target, headers, ...(text !== undefined ? { body: text } : {}) });
    // The host the browser asked, for the API's check of a browser's Origin (request.ts refuseForgeableWrite).
    const outgoing: OutgoingHttpHeaders = {
      ...headers,
      host: target.host,
      ...(!strict && req.headers.host ? { 'x-forwarded-host': req.headers.host } : {}),
    };
    if (body.length > 0) outgoing['content-length'] = body.length;
    const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const attempt = (retry: boolean): Promise<void> =>
      new Promise<void>((resolveDone, reject) => {
        const upstreamRequest = send(target, { method, headers: outgoing, agent, timeout: 60_000 }, (answer) => {
          const back: OutgoingHttpHeaders = {};
          for (const [name, value] of Object.entries(answer.headers)) {
            if (value === undefined || HOP_BY_HOP.has(name) || (strict && name === 'set-cookie')) continue;
            back[name] = value;
          }
          res.writeHead(answer.statusCode ?? 502, back);
          answer.pipe(res);
          answer.once('end', () => resolveDone());
          answer.once('error', reject);
        });
        upstreamRequest.once('timeout', () => upstreamRequest.destroy(new Error('timed out')));
        upstreamRequest.once('error', (error: Error & { code?: string }) => {
          // A kept-alive connection the upstream closed while idle fails before the request was read: send it again
          // once on a new connection (the case node:http's reusedSocket is documented for).
          if (retry && upstreamRequest.reusedSocket && (error.code === 'ECONNRESET' || error.code === 'EPIPE'))
            attempt(false).then(resolveDone, reject);
          else reject(error);
        });
        upstreamRequest.end(body.length > 0 ? body : undefined);
      });
    await attempt(true);
  }

  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolveListen();
    });
  });
  port = (server.address() as AddressInfo).port;
  const origin = `http://${host}:${port}`;
  return {
    origin,
    port,
    consoleUrl: `${origin}/console/${options.token !== undefined ? `?token=${options.token}` : ''}`,
    close: () =>
      new Promise<void>((resolveClose) => {
        agent.destroy();
        server.close(() => resolveClose());
        server.closeAllConnections();
      }),
  };
}

function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolveBody, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY) tooLarge = true;
      else chunks.push(chunk);
    });
    req.once('end', () => resolveBody(tooLarge ? undefined : Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

function cookieOf(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return value.join('=');
  }
  return undefined;
}

function sameToken(a: string, b: string): boolean {
  const [x, y] = [Buffer.from(a), Buffer.from(b)];
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The refusals of this server are problem documents too, so the page and the CLI show them like the API's. */
function sendProblem(res: ServerResponse, status: number, code: string, title: string, detail: string): void {
  const body = JSON.stringify({ type: 'about:blank', title, status, detail, code });
  res.writeHead(status, {
    'content-type': 'application/problem+json',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(body);
}
