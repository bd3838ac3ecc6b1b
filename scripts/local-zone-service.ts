/**
 * The local stack's zones, held in its own process (MemoryZones) and reached by the stream function over loopback
 * HTTP: serverless-offline runs the function in another process, and the DNS server (local-dns-server.ts) answers
 * from the same MemoryZones. Three calls, the DnsTarget port's: POST /read, /change and /list with JSON bodies; each
 * needs the token the stack made (`authorization: Bearer ...`), so no other local program writes the zones.
 *
 * With `file`, the zones are written there after every applied change and read back at start: a stack restarted on
 * its --data folder still answers for the claims it kept.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { MemoryZones } from '../shared/adapters/dns/memory-zone.ts';
import type { NameChange, RecordSet } from '../shared/core/dns/records.ts';

export interface ZoneServiceOptions {
  readonly zones: MemoryZones;
  readonly token: string;
  /** Where the zones persist (JSON); absent: in memory only. */
  readonly file?: string;
}

export interface ZoneService {
  /** e.g. http://127.0.0.1:40123 */
  readonly endpoint: string;
  close(): Promise<void>;
}

/** The persisted form: each zone's record sets. */
type Saved = Record<string, readonly RecordSet[]>;

const MAX_BODY = 1 << 20;

async function bodyOf(request: IncomingMessage): Promise<Record<string, unknown>> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new Error('body too large');
    chunks.push(chunk as Buffer);
  }
  const value: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  if (typeof value !== 'object' || value === null || typeof (value as { zone?: unknown }).zone !== 'string')
    throw new Error('a JSON object with a zone is expected');
  return value as Record<string, unknown>;
}

async function save(zones: MemoryZones, file: string): Promise<void> {
  const saved: Saved = {};
  for (const zone of zones.zoneNames()) saved[zone] = await zones.list(zone);
  // Written aside and renamed: a crash mid-write leaves the previous file whole.
  writeFileSync(`${file}.tmp`, `${JSON.stringify(saved)}\n`);
  renameSync(`${file}.tmp`, file);
}

function restore(zones: MemoryZones, file: string): void {
  if (!existsSync(file)) return;
  const saved = JSON.parse(readFileSync(file, 'utf8')) as Saved;
  for (const [zone, sets] of Object.entries(saved)) {
    void zones.list(zone); // Holds the zone even when it has no name left.
    for (const set of sets) zones.put(zone, set);
  }
}

export async function startZoneService(options: ZoneServiceOptions): Promise<ZoneService> {
  const { zones, token, file } = options;
  if (file) restore(zones, file);
  const calls: Record<string, (body: Record<string, unknown>) => Promise<unknown>> = {
    '/read': async (b) => ({ sets: Object.fromEntries(await zones.read(b.zone as string, b.names as string[])) }),
    '/change': async (b) => {
      const outcomes = await zones.change(b.zone as string, b.changes as NameChange[]);
      if (file && outcomes.some((o) => o.kind === 'applied')) await save(zones, file);
      return { outcomes };
    },
    '/list': async (b) => ({ sets: await zones.list(b.zone as string) }),
  };
  const server = createServer((request, response) => {
    const send = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json' });
      response.end(JSON.stringify(body));
    };
    const call = calls[request.url ?? ''];
    if (request.method !== 'POST' || call === undefined) return send(404, { message: 'POST /read, /change or /list' });
    if (request.headers.authorization !== `Bearer ${token}`) return send(401, { message: 'wrong or missing token' });
    bodyOf(request)
      .then(call)
      .then(
        (body) => send(200, body),
        (error: unknown) => send(400, { message: error instanceof Error ? error.message : String(error) }),
      );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
