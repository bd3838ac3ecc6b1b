import type { AttributeValue } from '@aws-sdk/client-dynamodb';

/**
 * DynamoDB's item size rules, applied to the marshalled (wire) form of an item, because that is what DynamoDB bills:
 *
 *   item       = sum over attributes of (UTF-8 bytes of the name + size of the value)
 *   S          = UTF-8 bytes                 B = raw bytes           BOOL, NULL = 1 byte
 *   N          = 1 byte per pair of digits from the first significant one to the last, pairs aligned on the
 *                decimal point (base 100), + 1 byte, + 1 more for a negative number, 0 one byte (DynamoDB's "1 byte per two
 *                significant digits + 1", as DynamoDB Local counts it at the 400 KB limit: 120 and 1.5 are 3 bytes)
 *   SS/NS/BS   = sum of the element sizes
 *   L          = 3 bytes + per element (1 byte + element size)
 *   M          = 3 bytes + per entry (1 byte + UTF-8 bytes of the key + value size)
 *
 * Capacity units follow from sizes: a write unit per started 1 KB of an item, a read unit per started 4 KB
 * (half for eventually consistent reads), never less than one unit per item written or request read.
 *
 * One pricer for everything that stands in for DynamoDB's billing: the bench's meter sizes wire items (`itemSize`),
 * the simulator's capacity model sizes the plain items MemoryTable holds (`plainItemSize`), by the same rules.
 * Hand-rolled: the one library found (npm dyno-item-size 0.3.3, one maintainer, no types) counts neither the byte
 * per element of a list or map nor the alignment of numbers, and sizes a Uint8Array as a map; DynamoDB Local agrees
 * with these rules byte for byte at the 400 KB limit (tests/int/table-contract.int.test.ts, "DynamoDB limits").
 */
export type WireItem = Record<string, AttributeValue>;

const encoder = new TextEncoder();

/** UTF-8 length without allocating for the common ASCII case. */
export function utf8Length(text: string): number {
  let ascii = true;
  for (let i = 0; i < text.length; i += 1) {
    if (text.charCodeAt(i) > 0x7f) {
      ascii = false;
      break;
    }
  }
  return ascii ? text.length : encoder.encode(text).length;
}

/** Size of a number attribute (see above): its base-100 digits from the first significant one to the last, + 1 (+ 1 if negative); zero is 1 byte. */
export function numberSize(text: string): number {
  const negative = text.trim().startsWith('-');
  const [mantissa = '', exponent = '0'] = text.trim().replace(/^[-+]/, '').split(/[eE]/);
  const [whole = '', fraction = ''] = mantissa.split('.');
  const digits = whole + fraction;
  const first = digits.search(/[1-9]/);
  if (first < 0) return 1;
  const last = digits.length - 1 - [...digits].reverse().join('').search(/[1-9]/);
  // The power of ten of digit i is whole.length - 1 - i + exponent; a byte holds the pair of powers 2k and 2k + 1.
  const power = (i: number) => whole.length - 1 - i + Number(exponent);
  return Math.floor(power(first) / 2) - Math.floor(power(last) / 2) + 2 + (negative ? 1 : 0);
}

/** Size of one attribute value. */
export function valueSize(value: AttributeValue): number {
  if (value.S !== undefined) return utf8Length(value.S);
  if (value.N !== undefined) return numberSize(value.N);
  if (value.B !== undefined) return value.B.byteLength;
  if (value.BOOL !== undefined || value.NULL !== undefined) return 1;
  if (value.SS !== undefined) return value.SS.reduce((sum, s) => sum + utf8Length(s), 0);
  if (value.NS !== undefined) return value.NS.reduce((sum, n) => sum + numberSize(n), 0);
  if (value.BS !== undefined) return value.BS.reduce((sum, b) => sum + b.byteLength, 0);
  if (value.L !== undefined) return 3 + value.L.reduce((sum, v) => sum + 1 + valueSize(v), 0);
  if (value.M !== undefined)
    return 3 + Object.entries(value.M).reduce((sum, [k, v]) => sum + 1 + utf8Length(k) + valueSize(v), 0);
  return 0;
}

/** Size of an item in bytes, by DynamoDB's rules. */
export function itemSize(item: WireItem): number {
  let size = 0;
  for (const [name, value] of Object.entries(item)) size += utf8Length(name) + valueSize(value);
  return size;
}

/** Write units of one item write: one per started KB, at least one. */
export function writeUnits(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / 1024));
}

/** Read units of `bytes` read in one request (or one item of a batch): one per started 4 KB, at least one; half when eventually consistent. */
export function readUnits(bytes: number, consistent: boolean): number {
  const units = Math.max(1, Math.ceil(bytes / 4096));
  return consistent ? units : units / 2;
}

/** Size of one plain value (MemoryTable's form of an attribute), by the same rules as `valueSize`. */
export function plainValueSize(value: unknown): number {
  if (typeof value === 'string') return utf8Length(value);
  if (typeof value === 'number' || typeof value === 'bigint') return numberSize(String(value));
  if (typeof value === 'boolean' || value === null) return 1;
  if (value instanceof Uint8Array) return value.byteLength;
  if (Array.isArray(value)) return 3 + value.reduce((sum: number, v) => sum + 1 + plainValueSize(v), 0);
  if (typeof value === 'object')
    return (
      3 +
      Object.entries(value as Record<string, unknown>).reduce(
        (sum, [k, v]) => (v === undefined ? sum : sum + 1 + utf8Length(k) + plainValueSize(v)),
        0,
      )
    );
  return 0;
}

/** Size of a plain item (attributes left undefined are absent), by DynamoDB's rules. */
export function plainItemSize(item: Readonly<Record<string, unknown>>): number {
  let size = 0;
  for (const [name, value] of Object.entries(item))
    if (value !== undefined) size += utf8Length(name) + plainValueSize(value);
  return size;
}
