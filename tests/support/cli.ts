import type { CliIo } from '../../cli/io.ts';
import { run } from '../../cli/program.ts';

/** One request the CLI made through the fake fetch. */
export interface RecordedRequest {
  readonly method: string;
  readonly url: URL;
  readonly headers: Record<string, string>;
  readonly body: string | undefined;
}

/** Answers a request: status and JSON body (undefined for an empty body), or a thrown error (a socket failure). */
export type FakeRoute = (request: RecordedRequest) => { status: number; body?: unknown; contentType?: string } | Error;

/**
 * A fetch that never leaves the process: it records each request and answers from `route`. Errors are thrown the
 * way Node's fetch throws them (a TypeError whose cause is the socket error).
 */
export function fakeFetch(route: FakeRoute): { fetch: typeof fetch; requests: RecordedRequest[] } {
  const requests: RecordedRequest[] = [];
  const fetchFn = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((value, key) => (headers[key] = value));
    const request: RecordedRequest = {
      method: init?.method ?? 'GET',
      url: new URL(String(input)),
      headers,
      body: typeof init?.body === 'string' ? init.body : undefined,
    };
    requests.push(request);
    const answer = route(request);
    if (answer instanceof Error) throw new TypeError('fetch failed', { cause: answer });
    const body = answer.body === undefined ? null : JSON.stringify(answer.body);
    return new Response(body, {
      status: answer.status,
      headers: { 'content-type': answer.contentType ?? 'application/json' },
    });
  };
  return { fetch: fetchFn as typeof fetch, requests };
}

export interface FakeIo {
  readonly io: CliIo;
  out(): string;
  err(): string;
  /** Milliseconds the fake clock moved through sleep(). */
  slept(): number;
  /** Files written through writeFile, by path. */
  readonly files: Map<string, string>;
}

/** A CliIo with captured output, a fixed clock that sleep() advances, and the given fetch and environment. */
export function fakeIo(
  options: {
    fetch?: typeof fetch;
    env?: Record<string, string>;
    nowMs?: number;
    isTTY?: boolean;
    columns?: number;
  } = {},
): FakeIo {
  let out = '';
  let err = '';
  let now = options.nowMs ?? Date.parse('2026-04-02T10:00:00Z');
  let slept = 0;
  const files = new Map<string, string>();
  const io: CliIo = {
    stdout: (text) => void (out += text),
    stderr: (text) => void (err += text),
    env: options.env ?? {},
    isTTY: options.isTTY ?? false,
    columns: options.columns ?? 80,
    now: () => now,
    fetch: options.fetch ?? fakeFetch(() => new Error('no fetch in this test')).fetch,
    sleep: async (ms) => {
      now += ms;
      slept += ms;
    },
    writeFile: async (path, data) => void files.set(path, data),
    withInterrupt: (fn) => fn(new AbortController().signal),
  };
  return { io, out: () => out, err: () => err, slept: () => slept, files };
}

/** Runs one command line against a fake io; returns the exit code with what was printed. */
export async function runCli(
  argv: readonly string[],
  options: Parameters<typeof fakeIo>[0] = {},
): Promise<{ code: number; out: string; err: string; files: Map<string, string> }> {
  const fake = fakeIo(options);
  const code = await run(argv, fake.io);
  return { code, out: fake.out(), err: fake.err(), files: fake.files };
}
