import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the stand-in for a pre-signed ResponseURL received. */
export interface ReceivedPut {
  readonly method: string;
  readonly path: string;
  /** The content-type header as sent: '' when sent empty, undefined when absent. */
  readonly contentType: string | undefined;
  readonly bytes: number;
  readonly body: Record<string, unknown> & { Data?: Record<string, string> };
}

export interface ResponseServer {
  /** A response URL on this server (a query string like a pre-signed URL's). */
  url(name?: string): string;
  /** Every request received, in order (failed ones included). */
  readonly received: ReceivedPut[];
  /** The requests it answered 200 to. */
  answered(): ReceivedPut[];
  close(): Promise<void>;
}

/**
 * A local HTTP server standing in for CloudFormation's pre-signed S3 ResponseURL: it records each request and answers
 * 200, except the first `failFirst` ones, which it answers 503 (an S3 hiccup), so a provider's retry can be seen.
 */
export async function responseServer(options: { failFirst?: number } = {}): Promise<ResponseServer> {
  let failures = options.failFirst ?? 0;
  const received: ReceivedPut[] = [];
  const ok = new Set<ReceivedPut>();
  const read = (req: IncomingMessage) =>
    new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve(Buffer.concat(chunks)));
      req.on('error', reject);
    });
  const server = createServer((req, res) => {
    void read(req).then((raw) => {
      let body: ReceivedPut['body'];
      try {
        body = JSON.parse(raw.toString('utf8')) as ReceivedPut['body'];
      } catch {
        body = { unparsable: raw.toString('utf8') };
      }
      const put: ReceivedPut = {
        method: req.method ?? '',
        path: req.url ?? '',
        contentType: req.headers['content-type'],
        bytes: raw.length,
        body,
      };
      received.push(put);
      if (failures > 0) {
        failures -= 1;
        res.writeHead(503).end('SlowDown');
        return;
      }
      ok.add(put);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (name = 'response') => `http://127.0.0.1:${port}/cfn/${name}?X-Amz-Signature=test`,
    received,
    answered: () => received.filter((r) => ok.has(r)),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
