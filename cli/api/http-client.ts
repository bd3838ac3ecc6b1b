import { ConnectionError, HttpStatusError, ProblemError } from '../errors.ts';
import type { RequestSigner } from './sigv4.ts';

/** The headers of an answer, as far as the client reads them (a fetch Response's Headers is one). */
export interface ResponseHeaders {
  forEach(callback: (value: string, key: string) => void): void;
  get(name: string): string | null;
}

/** What the client reads of an answer: a fetch Response is one; cni/transport.ts makes one from node:http. */
export interface FetchResponse {
  readonly ok: boolean;
  readonly status: number;
  readonly statusText: string;
  readonly headers: ResponseHeaders;
  text(): Promise<string>;
}

/** The part of fetch the client uses; the global fetch is one. */
export type FetchLike = (
  url: URL,
  init: { method: string; headers: Record<string, string>; body?: string; signal: AbortSignal },
) => Promise<FetchResponse>;

export interface HttpClientOptions {
  /** Base URL: `http://127.0.0.1:3000`, or a deployed API's invoke URL (a path prefix such as a stage is kept). */
  readonly endpoint: URL;
  /** Signs each request (https endpoints); absent for the local stack, which checks no signature. */
  readonly signer?: RequestSigner;
  /** Receives `--verbose` lines: the request and the response, headers and bodies. */
  readonly trace?: (line: string) => void;
  /** Default: the global fetch. */
  readonly fetch?: FetchLike;
  readonly timeoutMs?: number;
  /** Headers sent with every request (the local stack's x-ipam-principal). */
  readonly headers?: Readonly<Record<string, string>>;
}

export interface RequestOptions {
  readonly query?: Readonly<Record<string, string | number | undefined>>;
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface HttpResponse {
  readonly status: number;
  readonly headers: ResponseHeaders;
  /** Parsed JSON, or undefined for an empty body (204). */
  readonly body: unknown;
}

/** Headers whose values must not be printed by --verbose. */
const SECRET_HEADERS = new Set(['x-amz-security-token']);

/**
 * One JSON request/response exchange with the IPAM API. A problem document becomes a ProblemError, any other non-2xx
 * an HttpStatusError, and a failure to connect a ConnectionError naming the endpoint.
 */
export class HttpClient {
  private readonly fetchFn: FetchLike;

  constructor(private readonly options: HttpClientOptions) {
    this.fetchFn = options.fetch ?? fetch;
  }

  get endpoint(): URL {
    return this.options.endpoint;
  }

  /** `path` starts with `/v1/`; each path segment must already be encoded (see `encodePath`). */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<HttpResponse> {
    const url = new URL(this.options.endpoint.href.replace(/\/+$/, '') + path);
    for (const [key, value] of Object.entries(options.query ?? {}))
      if (value !== undefined) url.searchParams.set(key, String(value));
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    let headers: Record<string, string> = {
      accept: 'application/json',
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...this.options.headers,
      ...options.headers,
    };
    if (this.options.signer)
      headers = await this.options.signer({ method, url, headers, ...(body !== undefined ? { body } : {}) });
    this.traceRequest(method, url, headers, body);

    let response: FetchResponse;
    const started = performance.now();
    try {
      response = await this.fetchFn(url, {
        method,
        headers,
        ...(body !== undefined ? { body } : {}),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 30_000),
      });
    } catch (error) {
      throw connectionError(this.options.endpoint, error);
    }
    const text = await response.text();
    this.traceResponse(response, text, performance.now() - started);

    const parsed = parseJson(text);
    if (response.ok) return { status: response.status, headers: response.headers, body: parsed };
    const problem = asProblem(parsed);
    if (problem)
      throw new ProblemError(response.status, problem.code, problem.detail ?? problem.title ?? '', problem.title);
    throw new HttpStatusError(response.status, messageOf(parsed, text));
  }

  private traceRequest(method: string, url: URL, headers: Record<string, string>, body: string | undefined): void {
    const trace = this.options.trace;
    if (!trace) return;
    trace(`> ${method} ${url.href}`);
    for (const [key, value] of Object.entries(headers))
      trace(`> ${key}: ${SECRET_HEADERS.has(key.toLowerCase()) ? '<redacted>' : value}`);
    if (body !== undefined) trace(`> ${body}`);
  }

  private traceResponse(response: FetchResponse, text: string, elapsedMs: number): void {
    const trace = this.options.trace;
    if (!trace) return;
    trace(`< ${response.status}${response.statusText ? ` ${response.statusText}` : ''} (${Math.round(elapsedMs)} ms)`);
    response.headers.forEach((value, key) => trace(`< ${key}: ${value}`));
    if (text) trace(`< ${text.length > 4000 ? `${text.slice(0, 4000)}... (${text.length} characters)` : text}`);
  }
}

/**
 * Encodes path segments for the URL. ':' stays as it is (a plain path character): names (pool, claim, range,
 * address) go on the wire verbatim, since the API refuses a '%' in them (`fd00::-112` stays `fd00::-112`); an owner
 * uid may still need encoding, and gets it.
 */
export function encodePath(...segments: readonly string[]): string {
  return segments.map((segment) => encodeURIComponent(segment).replaceAll('%3A', ':')).join('/');
}

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A problem document of this service: an object with a string `code` and a numeric `status`. */
function asProblem(value: unknown): { code: string; detail?: string; title?: string } | undefined {
  if (!isRecord(value) || typeof value.code !== 'string' || typeof value.status !== 'number') return undefined;
  return {
    code: value.code,
    ...(typeof value.detail === 'string' ? { detail: value.detail } : {}),
    ...(typeof value.title === 'string' ? { title: value.title } : {}),
  };
}

/** API Gateway answers its own refusals as `{"message": "..."}`. */
function messageOf(parsed: unknown, text: string): string {
  if (isRecord(parsed) && typeof parsed.message === 'string') return parsed.message;
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}

/** fetch's TypeError carries the socket error as its cause (ECONNREFUSED, ENOTFOUND, a timeout's AbortError). */
function connectionError(endpoint: URL, error: unknown): ConnectionError {
  const cause = error instanceof Error ? (error.cause as { code?: string; message?: string } | undefined) : undefined;
  const code = cause?.code ?? (error instanceof Error ? error.name : '');
  const refused = code === 'ECONNREFUSED';
  const reason =
    code === 'TimeoutError'
      ? 'the request timed out'
      : code === 'ENOTFOUND'
        ? `unknown host ${endpoint.hostname}`
        : (cause?.message ?? (error instanceof Error ? error.message : String(error)));
  return new ConnectionError(endpoint.origin + endpoint.pathname.replace(/\/+$/, ''), reason, refused);
}
