import { connect } from 'node:net';
import { randomInt } from 'node:crypto';
import type { ChangeOutcome, DnsTarget } from '../../core/dns/ports.ts';
import { OwnedTypes, type NameChange, type RecordSet } from '../../core/dns/records.ts';
import { signMessage, verifyResponse, type TsigKey } from './tsig.ts';
import { wire, type WireRecord } from './wire.ts';

export interface Rfc2136Options {
  readonly server: string;
  readonly port: number;
  /** The TSIG key, read where the pool's secretFrom says (once, then kept by the caller). */
  readonly key: () => Promise<TsigKey>;
  readonly timeoutMs?: number;
}

const OPCODE_UPDATE = 5 << 11;
const TYPE_CODES: Record<string, number> = { A: 1, PTR: 12, TXT: 16, AAAA: 28 };
const CLASS_NONE = 254;
/** RFC 2136's answers to a prerequisite that did not hold: YXDOMAIN, YXRRSET, NXRRSET. */
const PREREQUISITE_FAILED = new Set([6, 7, 8]);

const absolute = (name: string) => `${name.toLowerCase().replace(/\.$/, '')}.`;

/** A record's value as the planner writes it (TXT strings joined, names absolute). */
function valueOf(record: { type: string; data?: unknown }): string {
  const data = record.data;
  if (record.type === 'TXT')
    return (Array.isArray(data) ? data : [data]).map((d) => (Buffer.isBuffer(d) ? d.toString() : String(d))).join('');
  if (record.type === 'PTR' || record.type === 'CNAME') return absolute(String(data));
  if (typeof data === 'string') return data;
  return JSON.stringify(data);
}

/** Answers grouped into record sets (one per name and type), names absolute and lower-case. */
export function recordSetsOf(records: readonly WireRecord[]): RecordSet[] {
  const sets = new Map<string, { name: string; type: string; ttl: number; values: string[] }>();
  for (const r of records) {
    if (r.type === 'OPT' || r.type === 'UNKNOWN_250') continue;
    const name = absolute(r.name);
    const key = `${name} ${r.type}`;
    const set = sets.get(key) ?? { name, type: r.type, ttl: r.ttl ?? 0, values: [] };
    sets.set(key, set);
    const value = valueOf(r);
    if (!set.values.includes(value)) set.values.push(value);
  }
  return [...sets.values()];
}

const dataOf = (type: string, value: string): unknown => (type === 'TXT' ? [value] : value);
const emptyOf = (type: string): WireRecord => ({
  name: '',
  type: `UNKNOWN_${TYPE_CODES[type] ?? 255}`,
  class: 'ANY',
  ttl: 0,
  data: Buffer.alloc(0),
});

/**
 * RFC 2136 dynamic updates, signed with TSIG (RFC 8945), to any server that takes them (BIND, Knot, PowerDNS,
 * Windows DNS), over TCP. Each name's change is one UPDATE message: the prerequisites say what the name held when it
 * was read (exactly those sets of our types, or "name not in use"), so a record someone wrote meanwhile makes the
 * server refuse the update (YXDOMAIN/YXRRSET/NXRRSET: `stale`, read again) instead of it being overwritten.
 */
export class Rfc2136Target implements DnsTarget {
  constructor(private readonly options: Rfc2136Options) {}

  async read(zone: string, names: readonly string[]): Promise<ReadonlyMap<string, readonly RecordSet[]>> {
    const out = new Map<string, readonly RecordSet[]>();
    for (const name of names) {
      const [answer] = await this.exchange({ questions: [{ name, type: 'ANY', class: 'IN' }] });
      const rcode = rcodeOf(answer!);
      // NXDOMAIN: nothing at the name.
      if (rcode !== 0 && rcode !== 3) throw new Error(`DNS query for ${name} in ${zone} answered rcode ${rcode}`);
      const records = (wire.decode(answer!).answers ?? []) as WireRecord[];
      out.set(
        name,
        recordSetsOf(records).filter((s) => s.name === name),
      );
    }
    return out;
  }

  async change(zone: string, changes: readonly NameChange[]): Promise<readonly ChangeOutcome[]> {
    const outcomes: ChangeOutcome[] = [];
    // One after another, in the order given: two changes of one name are never reordered.
    for (const change of changes) {
      try {
        const [answer] = await this.exchange(updateMessage(zone, change));
        const rcode = rcodeOf(answer!);
        if (rcode === 0) outcomes.push({ kind: 'applied' });
        else if (PREREQUISITE_FAILED.has(rcode)) outcomes.push({ kind: 'stale' });
        else
          outcomes.push({ kind: 'failed', error: new Error(`DNS update of ${change.name} answered rcode ${rcode}`) });
      } catch (error) {
        outcomes.push({ kind: 'failed', error });
      }
    }
    return outcomes;
  }

  async list(zone: string): Promise<readonly RecordSet[]> {
    const messages = await this.exchange({ questions: [{ name: zone, type: 'AXFR', class: 'IN' }] }, true);
    const rcode = rcodeOf(messages[0]!);
    if (rcode !== 0) throw new Error(`zone transfer of ${zone} answered rcode ${rcode}`);
    const records = messages.flatMap((m) => (wire.decode(m).answers ?? []) as WireRecord[]);
    return recordSetsOf(records);
  }

  /** Sends one signed message over TCP; answers the response, or every message of a zone transfer. */
  private async exchange(
    message: { questions: object[]; answers?: WireRecord[]; authorities?: WireRecord[]; none?: number[] },
    transfer = false,
  ): Promise<Buffer[]> {
    const key = await this.options.key();
    const id = randomInt(0, 65_536);
    const encoded = encodeMessage(id, message);
    const { signed, mac } = signMessage(encoded, key, Math.floor(Date.now() / 1000));
    const answers = await tcpExchange(this.options, signed, transfer);
    // The first (or only) answer proves the server holds the key too: a forged "done" is refused.
    verifyResponse(answers[0]!, key, mac);
    return answers;
  }
}

const rcodeOf = (message: Buffer): number => message.readUInt16BE(2) & 0xf;

/** The UPDATE of one name: zone section, prerequisites (what was read), then the deletions and additions. */
function updateMessage(zone: string, change: NameChange) {
  const name = change.name;
  const prerequisites: WireRecord[] = [];
  const none: number[] = [];
  if (change.before.length === 0) {
    none.push(0);
    prerequisites.push({ name, type: 'ANY', class: 'IN', ttl: 0, data: Buffer.alloc(0) });
  } else {
    for (const type of OwnedTypes) {
      const set = change.before.find((s) => s.type === type);
      if (set)
        for (const v of set.values) prerequisites.push({ name, type, class: 'IN', ttl: 0, data: dataOf(type, v) });
      else {
        none.push(prerequisites.length);
        prerequisites.push({ ...emptyOf(type), name, class: 'IN' });
      }
    }
  }
  const types = new Set([...change.before, ...change.after].map((s) => s.type));
  const updates: WireRecord[] = [
    ...[...types].map((t) => ({ ...emptyOf(t), name })),
    ...change.after.flatMap((s) =>
      s.values.map((v) => ({ name, type: s.type, class: 'IN', ttl: s.ttl, data: dataOf(s.type, v) })),
    ),
  ];
  return {
    questions: [{ name: zone, type: 'SOA', class: 'IN' }],
    answers: prerequisites,
    authorities: updates,
    none,
  };
}

/**
 * Encodes with dns-packet, then sets class NONE (254) on the prerequisites listed in `none` ("RRset does not exist",
 * "name is not in use"): dns-packet knows no class NONE. It writes names uncompressed, so each record's place is the
 * sum of the lengths before it.
 */
function encodeMessage(
  id: number,
  m: { questions: object[]; answers?: WireRecord[]; authorities?: WireRecord[]; none?: number[] },
): Buffer {
  const opcode = m.authorities ? OPCODE_UPDATE : 0;
  const buf = wire.encode({
    type: 'query',
    id,
    flags: opcode,
    questions: m.questions as never,
    answers: (m.answers ?? []) as never,
    authorities: (m.authorities ?? []) as never,
  });
  let at = 12;
  for (const q of m.questions as { name: string }[]) at += wire.name.encodingLength(q.name) + 4;
  (m.answers ?? []).forEach((record, i) => {
    if (m.none?.includes(i)) buf.writeUInt16BE(CLASS_NONE, at + wire.name.encodingLength(record.name) + 2);
    at += wire.answer.encodingLength(record);
  });
  return buf;
}

/** One TCP exchange: length-prefixed messages (RFC 1035 4.2.2); a transfer ends with its second SOA. */
function tcpExchange(options: Rfc2136Options, message: Buffer, transfer: boolean): Promise<Buffer[]> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: options.server, port: options.port });
    const messages: Buffer[] = [];
    let pending = Buffer.alloc(0);
    let soas = 0;
    const done = (error?: Error) => {
      socket.destroy();
      if (error) reject(error);
      else resolve(messages);
    };
    socket.setTimeout(options.timeoutMs ?? 5_000, () =>
      done(new Error(`DNS server ${options.server}:${options.port} did not answer in time`)),
    );
    socket.on('error', (e) => done(e));
    socket.on('connect', () => {
      const length = Buffer.alloc(2);
      length.writeUInt16BE(message.length);
      socket.write(Buffer.concat([length, message]));
    });
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 2 && pending.length >= 2 + pending.readUInt16BE(0)) {
        const m = pending.subarray(2, 2 + pending.readUInt16BE(0));
        pending = pending.subarray(2 + m.length);
        messages.push(Buffer.from(m));
        if (!transfer || rcodeOf(m) !== 0) return done();
        soas += ((wire.decode(m).answers ?? []) as WireRecord[]).filter((r) => r.type === 'SOA').length;
        if (soas >= 2) return done();
      }
    });
    socket.on('end', () =>
      transfer && messages.length > 0 ? done() : done(new Error('DNS server closed the connection')),
    );
  });
}
