/**
 * Fetches that hand each request to the real HTTP handler in process (a TestApi), so the CLI and the CNI plugin talk
 * to the service through their own clients without a network.
 */
import type { FetchLike, FetchResponse } from '../../cli/api/http-client.ts';
import { httpEvent, type TestApi } from './api.ts';

async function deliver(
  api: TestApi,
  method: string,
  url: URL,
  body: string | undefined,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Map<string, string>; text: string }> {
  const out = await api.invoke(httpEvent(method, url.pathname + url.search, body, headers));
  return {
    status: out.statusCode ?? 0,
    headers: new Map(Object.entries((out.headers ?? {}) as Record<string, string>)),
    text: typeof out.body === 'string' ? out.body : '',
  };
}

/**
 * The plugin's fetch port over the handler. `hold` may keep a request back: the client then times out as it would on
 * a slow network, and the request reaches the service when the test lets it go (`release`); `held` has its answers.
 */
export function pluginFetch(
  api: TestApi,
  hold?: (method: string, url: URL) => boolean,
): { fetch: FetchLike; held: Promise<FetchResponse>[]; release: () => void } {
  const held: Promise<FetchResponse>[] = [];
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const answer = async (url: URL, init: Parameters<FetchLike>[1]): Promise<FetchResponse> => {
    const out = await deliver(api, init.method, url, init.body, init.headers);
    return {
      ok: out.status >= 200 && out.status < 300,
      status: out.status,
      statusText: '',
      headers: {
        forEach: (cb) => out.headers.forEach((v, k) => cb(v, k)),
        get: (name) => out.headers.get(name.toLowerCase()) ?? null,
      },
      text: () => Promise.resolve(out.text),
    };
  };
  const fetch: FetchLike = (url, init) => {
    if (!hold?.(init.method, url)) return answer(url, init);
    // Reaches the service only once released, whatever the client did meanwhile.
    held.push(gate.then(() => answer(url, init)));
    return new Promise((_resolve, reject) =>
      init.signal.addEventListener('abort', () => reject(init.signal.reason), { once: true }),
    );
  };
  return { fetch, held, release };
}

/** The CLI's fetch (the global one's shape) over the handler; `requests` counts what was sent. */
export function cliFetch(api: TestApi): { fetch: typeof fetch; requests: () => number } {
  let requests = 0;
  const fetchFn = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    requests += 1;
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((value, key) => (headers[key] = value));
    const out = await deliver(
      api,
      init?.method ?? 'GET',
      new URL(String(input)),
      typeof init?.body === 'string' ? init.body : undefined,
      headers,
    );
    return new Response(out.status === 204 ? null : out.text, {
      status: out.status,
      headers: Object.fromEntries(out.headers),
    });
  };
  return { fetch: fetchFn as typeof fetch, requests: () => requests };
}
