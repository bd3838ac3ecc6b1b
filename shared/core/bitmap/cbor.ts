import { InvalidArgumentError } from '../errors.ts';

/*
 * Why a hand-written codec and not `cborg`: cborg's decoder cannot refuse map keys out of deterministic order (its
 * README says so), so a cborg fromCbor would still need our own check (a re-encode and compare), and the api bundle
 * would grow by about a seventh for one legacy route; speed is a wash at this scale. The byte form is pinned against
 * cborg instead: tests/unit/range-allocation.test.ts checks every document against cborg's RFC 8949 encoder and
 * strict decoder (cborg stays a devDependency for that). Measurements: docs/decisions/0006-hand-written-cbor.md.
 */

/**
 * The small CBOR (RFC 8949) subset our documents use: unsigned integers, byte strings, text strings, maps with
 * text keys, and tags. No runtime dependency, and one byte form per value:
 *
 * - the encoder writes RFC 8949 §4.2.1 core deterministic encoding: shortest argument forms, definite lengths,
 *   map keys sorted by the bytewise order of their encodings;
 * - the decoder accepts exactly that and nothing else (no indefinite lengths, no over-long arguments, no unsorted or
 *   duplicate keys, no trailing bytes), so decode(bytes) re-encodes to the same bytes.
 *
 * Negative integers, arrays, floats and simple values are outside the subset and refused by both sides.
 */

/** A tagged data item (major type 6), e.g. tag 22 "expected conversion to base64" around a byte string. */
export class CborTag {
  constructor(
    readonly tag: number,
    readonly value: CborValue,
  ) {}
}

/** A value of the subset: number and bigint are unsigned integers (bigint only where a number is not exact). */
export type CborValue = number | bigint | string | Uint8Array | CborTag | ReadonlyMap<string, CborValue>;

const Major = { Unsigned: 0, Negative: 1, Bytes: 2, Text: 3, Array: 4, Map: 5, Tag: 6, Simple: 7 } as const;
const MAJOR_NAMES = [
  'unsigned integer',
  'negative integer',
  'byte string',
  'text string',
  'array',
  'map',
  'tag',
  'float or simple value',
];
const MAX_UINT64 = (1n << 64n) - 1n;
/** Nesting deeper than this is refused before it can exhaust the stack; our documents nest two levels. */
const MAX_DEPTH = 32;
/** A lone surrogate would be written as U+FFFD, so two different strings would share one encoding. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const utf8Encoder = new TextEncoder();
// fatal: invalid UTF-8 is an error, not U+FFFD; ignoreBOM: keep a leading U+FEFF as text instead of dropping it.
const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Encodes a value in RFC 8949 core deterministic encoding.
 * @throws RangeError for values outside the subset: negative, fractional or over-64-bit integers, strings with lone surrogates.
 */
export function encodeCbor(value: CborValue): Uint8Array {
  const parts: Uint8Array[] = [];
  write(parts, value, 0);
  return concat(parts);
}

/**
 * Decodes one data item of the subset that fills `bytes` exactly.
 * @throws InvalidArgumentError naming the offset and the reason when the bytes are malformed, outside the subset or not deterministic.
 */
export function decodeCbor(bytes: Uint8Array): CborValue {
  const reader = new Reader(bytes);
  const value = reader.item(0);
  if (reader.pos !== bytes.length) reader.fail(`${bytes.length - reader.pos} trailing byte(s) after the data item`);
  return value;
}

function write(parts: Uint8Array[], value: CborValue, depth: number): void {
  if (depth > MAX_DEPTH) throw new RangeError(`CBOR values nest at most ${MAX_DEPTH} levels deep.`);
  if (typeof value === 'number' || typeof value === 'bigint') {
    parts.push(head(Major.Unsigned, value));
  } else if (typeof value === 'string') {
    const text = textBytes(value);
    parts.push(head(Major.Text, text.length), text);
  } else if (value instanceof Uint8Array) {
    parts.push(head(Major.Bytes, value.length), value);
  } else if (value instanceof CborTag) {
    parts.push(head(Major.Tag, value.tag));
    write(parts, value.value, depth + 1);
  } else {
    // §4.2.1: keys sorted by the bytewise lexicographic order of their deterministic encodings.
    const entries = [...value].map(([key, item]) => ({ key: encodeCbor(key), item }));
    entries.sort((a, b) => compareBytes(a.key, b.key));
    parts.push(head(Major.Map, entries.length));
    for (const { key, item } of entries) {
      parts.push(key);
      write(parts, item, depth + 1);
    }
  }
}

/** The initial byte and argument in their shortest form (§4.2.1, "preferred serialization" of the argument). */
function head(major: number, argument: number | bigint): Uint8Array {
  if (typeof argument === 'number' && !(Number.isSafeInteger(argument) && argument >= 0)) {
    throw new RangeError(`CBOR unsigned integers are non-negative safe integers or bigints, not ${argument}.`);
  }
  const n = BigInt(argument);
  if (n < 0n || n > MAX_UINT64) throw new RangeError(`CBOR unsigned integers run from 0 to 2^64-1, not ${n}.`);
  const initial = major << 5;
  if (n < 24n) return Uint8Array.of(initial | Number(n));
  if (n < 0x100n) return Uint8Array.of(initial | 24, Number(n));
  const out = new Uint8Array(n < 0x10000n ? 3 : n < 0x1_0000_0000n ? 5 : 9);
  const view = new DataView(out.buffer);
  if (out.length === 3) view.setUint16(1, Number(n));
  else if (out.length === 5) view.setUint32(1, Number(n));
  else view.setBigUint64(1, n);
  out[0] = initial | (out.length === 3 ? 25 : out.length === 5 ? 26 : 27);
  return out;
}

function textBytes(text: string): Uint8Array {
  if (LONE_SURROGATE.test(text))
    throw new RangeError('CBOR text strings must be well-formed Unicode (no lone surrogates).');
  return utf8Encoder.encode(text);
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const shared = Math.min(a.length, b.length);
  for (let k = 0; k < shared; k += 1) if (a[k] !== b[k]) return a[k]! - b[k]!;
  return a.length - b.length;
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((total, part) => total + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

class Reader {
  pos = 0;
  readonly #view: DataView;

  constructor(readonly bytes: Uint8Array) {
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  item(depth: number): CborValue {
    if (depth > MAX_DEPTH) this.fail(`data items nest more than ${MAX_DEPTH} levels deep`);
    const start = this.pos;
    const { major, argument } = this.head();
    switch (major) {
      case Major.Unsigned:
        return argument <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(argument) : argument;
      case Major.Bytes:
        return this.take(this.length(argument, 1)).slice();
      case Major.Text:
        try {
          return utf8Decoder.decode(this.take(this.length(argument, 1)));
        } catch {
          return this.fail('text string is not valid UTF-8', start);
        }
      case Major.Tag:
        if (argument > BigInt(Number.MAX_SAFE_INTEGER)) this.fail(`tag number ${argument} is too large`, start);
        return new CborTag(Number(argument), this.item(depth + 1));
      case Major.Map:
        return this.map(this.length(argument, 2), depth);
      default:
        return this.fail(`${MAJOR_NAMES[major]} is outside the supported subset`, start);
    }
  }

  fail(reason: string, at = this.pos): never {
    throw new InvalidArgumentError(`Invalid CBOR at byte ${at}: ${reason}.`);
  }

  private map(entries: number, depth: number): Map<string, CborValue> {
    const map = new Map<string, CborValue>();
    let previousKey: Uint8Array | undefined;
    for (let e = 0; e < entries; e += 1) {
      const keyStart = this.pos;
      const key = this.item(depth + 1);
      if (typeof key !== 'string') this.fail('map keys must be text strings', keyStart);
      const keyBytes = this.bytes.subarray(keyStart, this.pos);
      if (previousKey !== undefined && compareBytes(previousKey, keyBytes) >= 0) {
        this.fail(
          `map key ${JSON.stringify(key)} is duplicated or out of the deterministic (bytewise) order`,
          keyStart,
        );
      }
      previousKey = keyBytes;
      map.set(key, this.item(depth + 1));
    }
    return map;
  }

  /** Reads an initial byte and its argument, refusing anything but the shortest form. */
  private head(): { major: number; argument: bigint } {
    const start = this.pos;
    const initial = this.take(1)[0]!;
    const major = initial >> 5;
    const info = initial & 0x1f;
    if (info < 24) return { major, argument: BigInt(info) };
    if (info === 31) this.fail('indefinite lengths are not deterministic encoding', start);
    if (info > 27) this.fail(`additional information ${info} is reserved`, start);
    const width = 1 << (info - 24);
    const at = this.pos;
    this.take(width);
    const argument =
      width === 1
        ? BigInt(this.#view.getUint8(at))
        : width === 2
          ? BigInt(this.#view.getUint16(at))
          : width === 4
            ? BigInt(this.#view.getUint32(at))
            : this.#view.getBigUint64(at);
    // The shortest form holds the argument only if the next-smaller form could not (§4.2.1).
    const floor = width === 1 ? 24n : 1n << BigInt(4 * width);
    if (argument < floor) this.fail(`argument ${argument} is not in its shortest form`, start);
    return { major, argument };
  }

  /** A declared count, bounded by the bytes left so a forged length cannot make us allocate or loop for nothing. */
  private length(argument: bigint, minBytesEach: number): number {
    const left = this.bytes.length - this.pos;
    if (argument * BigInt(minBytesEach) > BigInt(left)) this.fail(`length ${argument} runs past the end of the input`);
    return Number(argument);
  }

  private take(count: number): Uint8Array {
    if (this.pos + count > this.bytes.length) this.fail('unexpected end of input');
    const slice = this.bytes.subarray(this.pos, this.pos + count);
    this.pos += count;
    return slice;
  }
}
