import dnsPacket from 'dns-packet';

/** A record as dns-packet encodes it, with the classes and unknown types its published types leave out. */
export interface WireRecord {
  readonly name: string;
  readonly type: string;
  readonly class?: string;
  readonly ttl?: number;
  readonly data?: unknown;
}

interface Coder<T> {
  encode(value: T, buf?: Buffer, offset?: number): Buffer;
  decode(buf: Buffer, offset?: number): T;
  encodingLength(value: T): number;
}

/** dns-packet's name and record coders: exported by the library, missing from its type definitions. */
export const wire = dnsPacket as unknown as typeof dnsPacket & {
  readonly name: Coder<string> & { decode: { bytes: number } };
  readonly answer: Coder<WireRecord>;
};
