/**
 * The local stack's DNS server: answers, over UDP and TCP, from the zones the stream function keeps in the stack's
 * process (MemoryZones, written through scripts/local-zone-service.ts), authoritative for those zones and no other.
 *
 * Why no DNS server library: every message is encoded and decoded by dns-packet, already the RFC 2136 adapter's codec
 * and the most used DNS codec on npm. What is left here is a UDP socket, a TCP listener with RFC 1035's two-byte
 * length frames, and the few answer rules below. dns2 (a maintained pure-JavaScript server) would bring a second
 * codec of its own for the same messages; named (BIND) is not on a fresh machine, where `npm start` must answer.
 *
 *   qname in no held zone           REFUSED (not authoritative: no recursion here)
 *   qname holds sets of qtype       NOERROR, AA, those sets (ANY: every set); the apex also has a synthesized SOA, NS
 *   qname holds other types only    NOERROR, no answer, the zone's SOA in the authority section (NODATA)
 *   qname is above a held name      NOERROR, no answer (an empty non-terminal)
 *   qname holds nothing             NXDOMAIN, the zone's SOA in the authority section
 *   AXFR over TCP                   the zone's SOA, every set, the SOA again, in one message; over UDP: REFUSED
 *   not a QUERY, or not one question  NOTIMP, FORMERR
 */
import { createSocket, type RemoteInfo, type Socket as UdpSocket } from 'node:dgram';
import { createServer, type Server, type Socket } from 'node:net';
import dnsPacket, { type Answer, type Packet } from 'dns-packet';
import type { MemoryZones } from '../shared/adapters/dns/memory-zone.ts';
import type { RecordSet } from '../shared/core/dns/records.ts';

export interface LocalDnsOptions {
  readonly zones: MemoryZones;
  /** 0: a free port (UDP and TCP on the same one). */
  readonly port: number;
  /** Default 127.0.0.1. */
  readonly host?: string;
}

export interface LocalDns {
  readonly port: number;
  readonly host: string;
  close(): Promise<void>;
}

const RCODE = { NOERROR: 0, FORMERR: 1, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const;
const RECURSION_DESIRED = 1 << 8;
/** Plain DNS over UDP: answers past 512 bytes are truncated (TC), unless the query's EDNS allows more. */
const UDP_PLAIN = 512;
const SOA_TIMES = { refresh: 3600, retry: 600, expire: 86_400 } as const;
const TCP_IDLE_MS = 10_000;

const absolute = (name: string) => `${name.toLowerCase().replace(/\.$/, '')}.`;

/** The held zone that encloses `name` (the longest), if any. */
function zoneOf(zones: MemoryZones, name: string): string | undefined {
  return zones
    .zoneNames()
    .filter((z) => name === z || name.endsWith(`.${z}`))
    .sort((a, b) => b.length - a.length)[0];
}

function answersOf(set: RecordSet): Answer[] {
  return set.values.map(
    (value) =>
      ({
        name: set.name,
        type: set.type,
        class: 'IN',
        ttl: set.ttl,
        data: set.type === 'TXT' ? [value] : value,
      }) as Answer,
  );
}

function apexOf(zones: MemoryZones, zone: string): { soa: Answer; ns: Answer } {
  const ttl = 60;
  return {
    soa: {
      name: zone,
      type: 'SOA',
      class: 'IN',
      ttl,
      data: {
        mname: 'localhost',
        rname: `hostmaster.${zone}`,
        serial: zones.serial(zone) + 1,
        ...SOA_TIMES,
        minimum: ttl,
      },
    },
    ns: { name: zone, type: 'NS', class: 'IN', ttl, data: 'localhost' },
  };
}

/** The answer to one query message (the table at the top of this file). */
export async function answerQuery(zones: MemoryZones, query: Packet, transport: 'udp' | 'tcp'): Promise<Packet> {
  const reply = (rcode: number, authoritative: boolean, parts: Partial<Packet> = {}): Packet => ({
    id: query.id ?? 0,
    type: 'response',
    flags: ((query.flags ?? 0) & RECURSION_DESIRED) | (authoritative ? dnsPacket.AUTHORITATIVE_ANSWER : 0) | rcode,
    questions: query.questions ?? [],
    ...parts,
  });
  // Bits 11-14 of the flags: the opcode (0, QUERY).
  if (((query.flags ?? 0) >> 11) & 0xf) return reply(RCODE.NOTIMP, false);
  const question = query.questions?.length === 1 ? query.questions[0]! : undefined;
  if (!question) return reply(RCODE.FORMERR, false);
  const name = absolute(question.name);
  const zone = zoneOf(zones, name);
  if (zone === undefined || (question.class !== 'IN' && question.class !== 'ANY')) return reply(RCODE.REFUSED, false);
  const { soa, ns } = apexOf(zones, zone);
  const all = await zones.list(zone);
  if ((question.type as string) === 'AXFR') {
    if (transport !== 'tcp') return reply(RCODE.REFUSED, false);
    return reply(RCODE.NOERROR, true, { answers: [soa, ns, ...all.flatMap(answersOf), soa] });
  }
  const held = [...all.filter((s) => s.name === name).flatMap(answersOf), ...(name === zone ? [soa, ns] : [])];
  const type = question.type as string;
  const answers = held.filter((a) => type === 'ANY' || a.type === type);
  if (answers.length > 0) return reply(RCODE.NOERROR, true, { answers });
  if (held.length > 0 || all.some((s) => s.name.endsWith(`.${name}`)))
    return reply(RCODE.NOERROR, true, { authorities: [soa] });
  return reply(RCODE.NXDOMAIN, true, { authorities: [soa] });
}

/** Encodes an answer for UDP: past the client's limit, the answer goes without its records and says so (TC). */
function udpMessage(answer: Packet, query: Packet): Buffer {
  const opt = query.additionals?.find((a) => a.type === 'OPT') as { udpPayloadSize?: number } | undefined;
  const limit = Math.max(UDP_PLAIN, opt?.udpPayloadSize ?? UDP_PLAIN);
  const whole = dnsPacket.encode(answer);
  if (whole.length <= limit) return whole;
  return dnsPacket.encode({
    ...answer,
    flags: (answer.flags ?? 0) | dnsPacket.TRUNCATED_RESPONSE,
    answers: [],
    authorities: [],
  });
}

/** Reads RFC 1035's length-framed messages off a TCP connection and answers each in order. */
function serveTcp(zones: MemoryZones, socket: Socket): void {
  let buffered = Buffer.alloc(0);
  let chain = Promise.resolve();
  socket.setTimeout(TCP_IDLE_MS, () => socket.destroy());
  socket.on('error', () => socket.destroy());
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 2 && buffered.length >= 2 + buffered.readUInt16BE(0)) {
      const frame = buffered.subarray(0, 2 + buffered.readUInt16BE(0));
      buffered = buffered.subarray(frame.length);
      chain = chain.then(async () => {
        try {
          const query = dnsPacket.streamDecode(frame);
          const answer = await answerQuery(zones, query, 'tcp');
          if (!socket.destroyed) socket.write(dnsPacket.streamEncode(answer));
        } catch {
          // Not a DNS message: nothing sensible to answer on this connection.
          socket.destroy();
        }
      });
    }
  });
}

async function listen(server: Server, udp: UdpSocket, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as { port: number }).port;
  await new Promise<void>((resolve, reject) => {
    udp.once('error', reject);
    udp.bind(bound, host, () => {
      udp.off('error', reject);
      resolve();
    });
  });
  return bound;
}

/** Starts the server; rejects (EADDRINUSE...) when its port cannot be had on both UDP and TCP. */
export async function startLocalDns(options: LocalDnsOptions): Promise<LocalDns> {
  const host = options.host ?? '127.0.0.1';
  const { zones } = options;
  const sockets = new Set<Socket>();
  // A free port is free on TCP when chosen, and may still be taken on UDP: try a few.
  for (let attempt = 0; ; attempt += 1) {
    const server = createServer((socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      serveTcp(zones, socket);
    });
    const udp = createSocket(host.includes(':') ? 'udp6' : 'udp4');
    udp.on('message', (message: Buffer, from: RemoteInfo) => {
      void (async () => {
        let query: Packet;
        try {
          query = dnsPacket.decode(message);
        } catch {
          return; // Not a DNS message: dropped, as servers do.
        }
        const answer = await answerQuery(zones, query, 'udp');
        udp.send(udpMessage(answer, query), from.port, from.address);
      })();
    });
    try {
      const port = await listen(server, udp, options.port, host);
      return {
        port,
        host,
        close: async () => {
          for (const socket of sockets) socket.destroy();
          await Promise.all([
            new Promise<void>((resolve) => server.close(() => resolve())),
            new Promise<void>((resolve) => udp.close(() => resolve())),
          ]);
        },
      };
    } catch (error) {
      server.close();
      try {
        udp.close();
      } catch {
        // Never bound.
      }
      if (options.port !== 0 || attempt >= 5) throw error;
    }
  }
}
