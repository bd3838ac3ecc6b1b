import { InvalidArgumentError } from '../errors.ts';
import { CborTag, decodeCbor, encodeCbor, type CborValue } from './cbor.ts';

/**
 * The legacy Kubernetes `RangeAllocation` document: one range and its bitmap, plus our optimistic-lock version.
 * `data` is `Bitmap.encode()` output, i.e. Go's `big.Int.Bytes()`: no leading zero byte, empty when nothing is held.
 * The codecs check the shape only; reading `range` (parseCidr, validateLegacyCidr) and sizing the bitmap
 * (Bitmap.decode(data, legacyWindow(cidr))) is the caller's job.
 */
export interface RangeAllocation {
  readonly range: string;
  readonly data: Uint8Array;
  readonly version: number;
}

/** The JSON wire form: `data` in standard base64 with padding, as Kubernetes serializes a Go []byte. */
export interface RangeAllocationJson {
  readonly range: string;
  readonly data: string;
  readonly version: number;
}

/** RFC 8949 §3.4.5.2: tag 22 asks a CBOR-to-JSON converter to write the byte string in classic, padded base64. */
export const EXPECTED_BASE64 = 22;

/** The JSON wire form of a document. @throws InvalidArgumentError when the document is malformed (see fromCbor). */
export function toJson(doc: RangeAllocation): RangeAllocationJson {
  checkDocument(doc);
  return { range: doc.range, data: base64(doc.data), version: doc.version };
}

/**
 * The CBOR wire form: a map of three entries in RFC 8949 §4.2.1 deterministic order (keys sorted bytewise by their
 * encoding, which here gives data, range, version), with `data` a byte string under tag 22. A generic §6.1 CBOR-to-JSON
 * converter therefore yields exactly toJson(doc), and equal documents always have equal bytes.
 *
 *   a3                                   map(3)
 *      64 64617461                       "data"
 *      d6 4n <bytes>                     22(h'...')
 *      65 72616e6765                     "range"
 *      6n <utf-8>                        "192.168.0.0/24"
 *      67 76657273696f6e                 "version"
 *      <uint>                            7
 *
 * @throws InvalidArgumentError when the document is malformed (see fromCbor).
 */
export function toCbor(doc: RangeAllocation): Uint8Array {
  checkDocument(doc);
  return encodeCbor(
    new Map<string, CborValue>([
      ['range', doc.range],
      ['data', new CborTag(EXPECTED_BASE64, doc.data)],
      ['version', doc.version],
    ]),
  );
}

/**
 * Reads what toCbor writes, and only that: a deterministic map with exactly the keys data (tag 22 around a byte string
 * with no leading zero byte), range (a non-empty text string) and version (an unsigned safe integer).
 * @throws InvalidArgumentError naming the first thing that differs.
 */
export function fromCbor(bytes: Uint8Array): RangeAllocation {
  const value = decodeCbor(bytes);
  if (!(value instanceof Map)) throw invalid('the document must be a CBOR map');
  const unknown = [...value.keys()].filter((key) => !KEYS.has(key));
  if (unknown.length > 0) throw invalid(`unknown key(s) ${unknown.map((k) => JSON.stringify(k)).join(', ')}`);
  const range = value.get('range');
  const tagged = value.get('data');
  const version = value.get('version');
  if (!(tagged instanceof CborTag) || tagged.tag !== EXPECTED_BASE64 || !(tagged.value instanceof Uint8Array)) {
    throw invalid(`data must be a byte string under tag ${EXPECTED_BASE64}`);
  }
  if (typeof range !== 'string') throw invalid('range must be a text string');
  if (typeof version !== 'number') throw invalid('version must be an unsigned integer no larger than 2^53-1');
  const doc: RangeAllocation = { range, data: tagged.value, version };
  checkDocument(doc);
  return doc;
}

const KEYS = new Set(['range', 'data', 'version']);

function checkDocument(doc: RangeAllocation): void {
  if (typeof doc.range !== 'string' || doc.range.length === 0) throw invalid('range must be a non-empty string');
  if (!(doc.data instanceof Uint8Array)) throw invalid('data must be bytes');
  // big.Int.Bytes() never starts with a zero byte; allowing one would give one bitmap several wire forms.
  if (doc.data[0] === 0) throw invalid('data must not start with a zero byte (big.Int.Bytes() form)');
  if (!Number.isSafeInteger(doc.version) || doc.version < 0)
    throw invalid('version must be an unsigned integer no larger than 2^53-1');
}

function invalid(reason: string): InvalidArgumentError {
  return new InvalidArgumentError(`Invalid RangeAllocation: ${reason}.`);
}

/** Standard base64 with padding (RFC 4648 §4); Buffer is a Node built-in and wraps the bytes without copying them. */
function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}
