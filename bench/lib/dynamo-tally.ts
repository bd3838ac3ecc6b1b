/**
 * A counting pass-through between the local stack's functions and DynamoDB Local (bench:http -- --tally): what the
 * requests of each phase of a fill were, counted from the wire, so the figures do not depend on the machine's load.
 * Each request is charged to the phase `phase()` names when it arrives, by what it touches:
 *
 *   commit       a TransactWriteItems holding a claim (an allocation's transaction); refused = a collision
 *   seal         a write of a used-up seal
 *   leaseRead    a consistent BatchGetItem of leases (verifying candidates, or a band read in bulk); `keys` = leases read
 *   sealRead     a BatchGetItem of freed counters and seals (the start of every used-up decision)
 *   summary      a Query of occupancy summary chunks; listing: a Query of the lease listing index
 *   get:<prefix> a GetItem (RGEN: the post-commit range generation read; POOL: the pool view; CLAIM: a claim)
 *   mirror       the stream function's writes (summary chunks, bitmaps, history), kept apart from the API's
 *
 * Read units are computed from the items answered (4 KB a unit, half for an eventually consistent read; an item not
 * found costs the minimum), as DynamoDB bills them. Hand-rolled: no library counts DynamoDB's wire protocol.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { itemSize, readUnits, type WireItem } from '../../aws-emulation/item-size.ts';

export interface Tally {
  requests: number;
  readUnits: number;
  /** Per kind (see the file's top): requests, refused ones, keys read, and milliseconds from the request's body read to its answer's end, summed. */
  kinds: Record<string, { requests: number; refused: number; keys: number; ms: number }>;
}

/** The most lease keys a check of candidates reads (the allocator's VERIFY_LIMIT). */
const VERIFY_KEYS = 32;

const MIRROR_PREFIXES = ['OCC#', 'BITMAP#', 'HIST#', 'HISTMARKS', 'EVENT#', 'EVENTS#', 'USAGE#'];

function prefixOf(pk: string): string {
  const hash = pk.indexOf('#');
  return hash < 0 ? pk : pk.slice(0, hash + 1);
}

function pkOf(key: Record<string, AttributeValue> | undefined): string {
  const pk = key?.PK;
  return pk && 'S' in pk && typeof pk.S === 'string' ? pk.S : '';
}

type Body = Record<string, unknown>;

function kindOf(op: string, body: Body): { kind: string; keys: number; consistent: boolean } {
  if (op === 'TransactWriteItems') {
    const items =
      (body.TransactItems as Record<
        string,
        { Key?: Record<string, AttributeValue>; Item?: Record<string, AttributeValue> }
      >[]) ?? [];
    const pks = items.flatMap((t) => Object.values(t).map((w) => pkOf(w.Key ?? w.Item)));
    if (pks.some((pk) => pk.startsWith('CLAIM#'))) return { kind: 'commit', keys: 0, consistent: true };
    if (pks.some((pk) => pk.startsWith('SEALS#'))) return { kind: 'seal', keys: 0, consistent: true };
    if (pks.some((pk) => MIRROR_PREFIXES.includes(prefixOf(pk)))) return { kind: 'mirror', keys: 0, consistent: true };
    return { kind: 'transactOther', keys: 0, consistent: true };
  }
  if (op === 'BatchGetItem') {
    const tables = Object.values(
      (body.RequestItems as Record<string, { Keys: Record<string, AttributeValue>[]; ConsistentRead?: boolean }>) ?? {},
    );
    const keys = tables.flatMap((t) => t.Keys);
    const consistent = tables.every((t) => t.ConsistentRead === true);
    const pks = keys.map(pkOf);
    if (pks.some((pk) => pk.startsWith('SEALS#') || pk.startsWith('FREED#')))
      return { kind: 'sealRead', keys: keys.length, consistent };
    // A band read in bulk sends full requests of 100 keys; a check of a summary's few free addresses or a sample, fewer.
    if (pks.every((pk) => pk.startsWith('LEASE#')))
      return { kind: keys.length > VERIFY_KEYS ? 'leaseRead:bulk' : 'leaseRead:check', keys: keys.length, consistent };
    return { kind: `batchGet:${[...new Set(pks.map(prefixOf))].join(',')}`, keys: keys.length, consistent };
  }
  if (op === 'Query') {
    const values = Object.values((body.ExpressionAttributeValues as Record<string, AttributeValue>) ?? {}).flatMap(
      (v) => ('S' in v && typeof v.S === 'string' ? [v.S] : []),
    );
    const consistent = body.ConsistentRead === true;
    if (values.some((v) => v.startsWith('OCC#'))) return { kind: 'summary', keys: 0, consistent };
    if (values.some((v) => v.startsWith('ADDR#'))) return { kind: 'listing', keys: 0, consistent };
    return { kind: `query:${prefixOf(values[0] ?? '')}`, keys: 0, consistent };
  }
  const key = (body.Key ?? body.Item) as Record<string, AttributeValue> | undefined;
  const prefix = prefixOf(pkOf(key));
  if (prefix === 'SEALS#' && op !== 'GetItem') return { kind: 'seal', keys: 0, consistent: true };
  if (MIRROR_PREFIXES.includes(prefix) && op !== 'GetItem') return { kind: 'mirror', keys: 0, consistent: true };
  if (op === 'BatchWriteItem') return { kind: 'mirror', keys: 0, consistent: true };
  return {
    kind: `${op === 'GetItem' ? 'get' : op}:${prefix}`,
    keys: op === 'GetItem' ? 1 : 0,
    consistent: body.ConsistentRead === true,
  };
}

/** An item as the wire's JSON carries it (binary values in base64) in the SDK's form, to be sized. */
function decoded(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(decoded);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [
      k,
      k === 'B' && typeof v === 'string'
        ? Buffer.from(v, 'base64')
        : k === 'BS' && Array.isArray(v)
          ? v.map((b) => Buffer.from(String(b), 'base64'))
          : decoded(v),
    ]),
  );
}

const sizeOf = (item: unknown): number => itemSize(decoded(item) as WireItem);

/** Read units of an answer: per key asked (BatchGetItem, GetItem) or per answer's total size (Query). */
function unitsOf(op: string, request: { keys: number; consistent: boolean }, answer: Body): number {
  if (op === 'BatchGetItem') {
    const items = Object.values((answer.Responses as Record<string, WireItem[]>) ?? {}).flat();
    const found = items.reduce((sum, item) => sum + readUnits(sizeOf(item), request.consistent), 0);
    return found + (request.keys - items.length) * readUnits(0, request.consistent);
  }
  if (op === 'GetItem') return readUnits(answer.Item ? sizeOf(answer.Item) : 0, request.consistent);
  if (op === 'Query')
    return readUnits(
      ((answer.Items as WireItem[]) ?? []).reduce((sum, item) => sum + sizeOf(item), 0),
      request.consistent,
    );
  return 0;
}

function readAll(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    stream.on('data', (part: Buffer) => parts.push(part));
    stream.on('end', () => resolve(Buffer.concat(parts)));
    stream.on('error', reject);
  });
}

export interface TallyProxy {
  /** Where the functions send their requests. */
  readonly endpoint: string;
  /** Where requests go on to (DynamoDB Local's endpoint, known once it started). */
  target: string | undefined;
  /** Tallies per phase name. */
  readonly phases: Map<string, Tally>;
  close(): Promise<void>;
}

/** Starts the proxy on a free port; `phase()` names the phase a request arriving now belongs to. */
export async function startTallyProxy(phase: () => string): Promise<TallyProxy> {
  const phases = new Map<string, Tally>();
  const proxy: TallyProxy = {
    endpoint: '',
    target: undefined,
    phases,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await readAll(req);
      const at = phase();
      const arrived = performance.now();
      const op = String(req.headers['x-amz-target'] ?? '').split('.')[1] ?? 'unknown';
      const target = new URL(proxy.target ?? 'http://127.0.0.1:1');
      const upstream = request(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          void readAll(answer).then((out) => {
            res.writeHead(answer.statusCode ?? 500, answer.headers);
            res.end(out);
            let parsed: Body = {};
            let sent: Body = {};
            try {
              parsed = JSON.parse(out.toString('utf8')) as Body;
              sent = JSON.parse(body.toString('utf8')) as Body;
            } catch {
              // Not JSON (a stream call's empty answer): counted as a request only.
            }
            const what = kindOf(op, sent);
            const tally = phases.get(at) ?? { requests: 0, readUnits: 0, kinds: {} };
            phases.set(at, tally);
            const kind = (tally.kinds[what.kind] ??= { requests: 0, refused: 0, keys: 0, ms: 0 });
            tally.requests += 1;
            kind.requests += 1;
            kind.ms += performance.now() - arrived;
            kind.keys += what.keys;
            if ((answer.statusCode ?? 500) >= 400) kind.refused += 1;
            else if (what.kind !== 'mirror') tally.readUnits += unitsOf(op, what, parsed);
          });
        },
      );
      upstream.on('error', (error) => {
        res.writeHead(502);
        res.end(String(error));
      });
      upstream.end(body);
    })();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  (proxy as { endpoint: string }).endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}
