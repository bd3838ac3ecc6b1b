/**
 * TSIG (RFC 8945) with HMAC-SHA256, over messages dns-packet encodes. Hand-written because dns-packet (the wire
 * format library we use) knows no TSIG record and no other maintained npm DNS library signs updates: the record is
 * framed by dns-packet as an unknown type (250), and only its RDATA and the MAC input are built here, as RFC 8945
 * section 4 lays them out.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { wire } from './wire.ts';

export interface TsigKey {
  /** Absolute, lower-case (RFC 8945 section 4.3.3: the canonical form). */
  readonly name: string;
  /** The key's bytes (the base64 of a BIND `key` clause, decoded). */
  readonly secret: Buffer;
}

const ALGORITHM = 'hmac-sha256.';
const TSIG_TYPE = 250;
const CLASS_ANY = 255;
/** Seconds of clock difference the server may accept (RFC 8945 recommends 300). */
const FUDGE = 300;

const u16 = (n: number) => {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(n);
  return b;
};
const u48 = (seconds: number) => {
  const b = Buffer.alloc(6);
  b.writeUIntBE(seconds, 0, 6);
  return b;
};
const wireName = (name: string) => wire.name.encode(name.toLowerCase());

/** The TSIG variables (section 4.3.3) for a signing at `timeSigned` with no error and no other data. */
function variables(key: TsigKey, timeSigned: number, error = 0): Buffer {
  return Buffer.concat([
    wireName(key.name),
    u16(CLASS_ANY),
    Buffer.alloc(4), // TTL 0
    wireName(ALGORITHM),
    u48(timeSigned),
    u16(FUDGE),
    u16(error),
    u16(0), // other len
  ]);
}

/**
 * Appends a TSIG record to an encoded message (its ARCOUNT raised by one) and returns the signed message and its MAC
 * (the response's MAC covers it). `nowSeconds`: the signer's clock, in seconds since the epoch.
 */
export function signMessage(message: Buffer, key: TsigKey, nowSeconds: number): { signed: Buffer; mac: Buffer } {
  const mac = createHmac('sha256', key.secret)
    .update(Buffer.concat([message, variables(key, nowSeconds)]))
    .digest();
  const id = message.readUInt16BE(0);
  const rdata = Buffer.concat([
    wireName(ALGORITHM),
    u48(nowSeconds),
    u16(FUDGE),
    u16(mac.length),
    mac,
    u16(id),
    u16(0), // error
    u16(0), // other len
  ]);
  const record = wire.answer.encode({
    name: key.name,
    type: `UNKNOWN_${TSIG_TYPE}`,
    class: 'ANY',
    ttl: 0,
    data: rdata,
  });
  const signed = Buffer.concat([message, record]);
  signed.writeUInt16BE(message.readUInt16BE(10) + 1, 10);
  return { signed, mac };
}

/**
 * Checks a response's TSIG against the request's MAC (section 5.3): the record must be the last one, name the key,
 * and carry a MAC over the request's MAC, the response without its TSIG, and the variables. @throws when it does not
 */
export function verifyResponse(response: Buffer, key: TsigKey, requestMac: Buffer): void {
  const arcount = response.readUInt16BE(10);
  if (arcount === 0) throw new Error('the DNS server answered without a TSIG record');
  // The TSIG record is last; walk the message to find where it starts.
  const start = lastRecordOffset(response);
  const name = wire.name.decode(response, start);
  const afterName = start + wire.name.decode.bytes;
  if (response.readUInt16BE(afterName) !== TSIG_TYPE) throw new Error('the last record of the answer is no TSIG');
  if (`${name.toLowerCase()}.` !== key.name) throw new Error(`the answer is signed with another key (${name})`);
  const rdata = response.subarray(afterName + 10, afterName + 10 + response.readUInt16BE(afterName + 8));
  wire.name.decode(rdata, 0);
  let at = wire.name.decode.bytes;
  const timeSigned = rdata.readUIntBE(at, 6);
  at += 8; // time signed and fudge
  const macLength = rdata.readUInt16BE(at);
  const mac = rdata.subarray(at + 2, at + 2 + macLength);
  at += 2 + macLength;
  const originalId = rdata.readUInt16BE(at);
  const error = rdata.readUInt16BE(at + 2);
  if (error !== 0) throw new Error(`the DNS server refused the signature (TSIG error ${error})`);
  const unsigned = Buffer.from(response.subarray(0, start));
  unsigned.writeUInt16BE(arcount - 1, 10);
  unsigned.writeUInt16BE(originalId, 0);
  const expected = createHmac('sha256', key.secret)
    .update(Buffer.concat([u16(requestMac.length), requestMac, unsigned, variables(key, timeSigned, error)]))
    .digest();
  if (mac.length !== expected.length || !timingSafeEqual(mac, expected))
    throw new Error("the DNS server's answer does not carry a valid TSIG signature");
}

/** Where the message's last resource record starts. */
function lastRecordOffset(message: Buffer): number {
  const counts = [4, 6, 8, 10].map((o) => message.readUInt16BE(o));
  let at = 12;
  for (let q = 0; q < counts[0]!; q++) {
    wire.name.decode(message, at);
    at += wire.name.decode.bytes + 4;
  }
  const records = counts[1]! + counts[2]! + counts[3]!;
  let last = at;
  for (let r = 0; r < records; r++) {
    last = at;
    wire.name.decode(message, at);
    at += wire.name.decode.bytes;
    at += 10 + message.readUInt16BE(at + 8);
  }
  return last;
}
