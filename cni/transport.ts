/**
 * The plugin's HTTP transport: node:http and node:https behind the client's fetch port (cli/api/http-client.ts).
 *
 * Why not the global fetch: it is undici, compiled and set up on the first call of every process, and a plugin is
 * a process per pod attach. Measured on the 2-core machine, one request through fetch cost a node
 * process about 115 ms more CPU than through node:http, more than half of an ADD's CPU, and fetch's idle keep-alive
 * socket kept the process alive 0.3-0.7 s after its answer was written (bridge waits for the exit). Node's
 * own agent unrefs a free socket, so the process exits once its work is done.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { FetchLike, FetchResponse, ResponseHeaders } from '../cli/api/http-client.ts';

function headersOf(message: IncomingMessage): ResponseHeaders {
  const entries = new Map<string, string>();
  for (const [key, value] of Object.entries(message.headers)) {
    if (value !== undefined) entries.set(key, Array.isArray(value) ? value.join(', ') : value);
  }
  return {
    forEach: (callback) => entries.forEach((value, key) => callback(value, key)),
    get: (name) => entries.get(name.toLowerCase()) ?? null,
  };
}

/**
 * One request, answered once the whole body has arrived. Fails as fetch does, so the client maps failures the same
 * way: the signal's reason when it aborts (a TimeoutError), else a TypeError whose cause is the socket's error
 * (ECONNREFUSED, ENOTFOUND...).
 */
export const nodeFetch: FetchLike = (url, init) =>
  new Promise<FetchResponse>((resolve, reject) => {
    const { signal } = init;
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(url, {
      method: init.method,
      headers:
        init.body === undefined
          ? init.headers
          : { ...init.headers, 'content-length': String(Buffer.byteLength(init.body)) },
    });
    const onAbort = () => {
      req.destroy();
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    req.on('error', (error) => {
      signal.removeEventListener('abort', onAbort);
      reject(new TypeError('request failed', { cause: error }));
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', (error) => {
        signal.removeEventListener('abort', onAbort);
        reject(new TypeError('response failed', { cause: error }));
      });
      res.on('end', () => {
        signal.removeEventListener('abort', onAbort);
        const status = res.statusCode ?? 0;
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({
          ok: status >= 200 && status < 300,
          status,
          statusText: res.statusMessage ?? '',
          headers: headersOf(res),
          text: () => Promise.resolve(text),
        });
      });
    });
    req.end(init.body);
  });
