import { createConnection } from 'node:net';
import { createSocket } from 'node:dgram';
import dnsPacket, { type Packet } from 'dns-packet';

/** A DNS client for tests, with dns-packet (no dig outside the dns tier). */
export type Question = { name: string; type: string };

/** One query over UDP; rejects when no answer came within `timeoutMs` (UDP loses nothing on loopback, but may hang). */
export function udpQuery(port: number, question: Question, timeoutMs = 5000): Promise<Packet> {
  const socket = createSocket('udp4');
  let timer: NodeJS.Timeout | undefined;
  return new Promise<Packet>((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no DNS answer on udp/${port} for ${question.name}`)), timeoutMs);
    socket.once('error', reject);
    socket.once('message', (message: Buffer) => resolve(dnsPacket.decode(message)));
    socket.send(
      dnsPacket.encode({ id: 7, type: 'query', flags: dnsPacket.RECURSION_DESIRED, questions: [question] } as Packet),
      port,
      '127.0.0.1',
    );
  }).finally(() => {
    clearTimeout(timer);
    socket.close();
  });
}

/** Queries on one TCP connection, answered in order (RFC 1035's length-framed messages). */
export function tcpQueries(port: number, questions: readonly Question[]): Promise<Packet[]> {
  const socket = createConnection({ port, host: '127.0.0.1' });
  let buffered = Buffer.alloc(0);
  const answers: Packet[] = [];
  return new Promise<Packet[]>((resolve, reject) => {
    socket.once('error', reject);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 2 && buffered.length >= 2 + buffered.readUInt16BE(0)) {
        const frame = buffered.subarray(0, 2 + buffered.readUInt16BE(0));
        buffered = buffered.subarray(frame.length);
        answers.push(dnsPacket.streamDecode(frame));
        if (answers.length === questions.length) resolve(answers);
      }
    });
    socket.write(
      Buffer.concat(
        questions.map((q, i) => dnsPacket.streamEncode({ id: 100 + i, type: 'query', questions: [q] } as Packet)),
      ),
    );
  }).finally(() => socket.destroy());
}

/** The answer's response code by name (NOERROR, NXDOMAIN, REFUSED...). */
export const rcodeOf = (p: Packet): string => (p as Packet & { rcode: string }).rcode;
