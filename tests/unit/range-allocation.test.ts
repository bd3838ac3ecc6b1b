import { decode, encode, rfc8949EncodeOptions, Tagged } from 'cborg';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CborTag, decodeCbor, encodeCbor } from '../../shared/core/bitmap/cbor.ts';
import { fromCbor, toCbor, toJson, type RangeAllocation } from '../../shared/core/bitmap/range-allocation.ts';
import { InvalidArgumentError } from '../../shared/core/errors.ts';

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');
const unhex = (text: string): Uint8Array => new Uint8Array(Buffer.from(text.replace(/\s+/g, ''), 'hex'));

/** 192.168.0.0/24 holding .1, .2 and .10 (bits 0, 1 and 9). */
const example = (): RangeAllocation => ({ range: '192.168.0.0/24', data: Uint8Array.of(0x02, 0x03), version: 7 });

/** Hand-assembled from RFC 8949: keys in bytewise order of their encodings ("data" 0x64.. < "range" 0x65.. < "version" 0x67..). */
const EXAMPLE_CBOR = `
  a3
  64 64617461                       # "data"
  d6 42 0203                        # 22(h'0203')
  65 72616e6765                     # "range"
  6e 3139322e3136382e302e302f3234   # "192.168.0.0/24"
  67 76657273696f6e                 # "version"
  07                                # 7
`.replace(/#.*$/gm, '');

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * A generic CBOR-to-JSON converter after RFC 8949 §6.1, over cborg's decoded values: byte strings become base64url
 * without padding unless an enclosing tag 21/22/23 asks for base64url / base64 with padding / base16 (§3.4.5.2);
 * other tags are dropped and their content converted.
 */
function cborToJson(value: unknown, hint: 'base64url' | 'base64' | 'base16' = 'base64url'): Json {
  if (value instanceof Tagged) {
    const hints = { 21: 'base64url', 22: 'base64', 23: 'base16' } as const;
    return cborToJson(value.value, value.tag in hints ? hints[value.tag as keyof typeof hints] : hint);
  }
  if (value instanceof Uint8Array) {
    const buffer = Buffer.from(value);
    return hint === 'base64'
      ? buffer.toString('base64')
      : hint === 'base16'
        ? buffer.toString('hex')
        : buffer.toString('base64url');
  }
  if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [String(k), cborToJson(v, hint)]));
  if (Array.isArray(value)) return value.map((item) => cborToJson(item, hint));
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, cborToJson(v, hint)]));
  if (typeof value === 'bigint') return Number(value);
  return value as Json;
}

/** Decodes with cborg strictly, surfacing tags 21-23 as Tagged so the converter sees them. */
const cborgDecode = (bytes: Uint8Array): unknown =>
  decode(bytes, { strict: true, useMaps: true, rejectDuplicateMapKeys: true, tags: Tagged.preserve(21, 22, 23) });

const documents = fc.record({
  range: fc.string({ minLength: 1, maxLength: 43 }),
  data: fc
    .uint8Array({ maxLength: 300 })
    .map((bytes) =>
      bytes.subarray(bytes.findIndex((b) => b !== 0) < 0 ? bytes.length : bytes.findIndex((b) => b !== 0)),
    ),
  version: fc.oneof(fc.integer({ min: 0, max: 30 }), fc.maxSafeNat()),
});

describe('Function: toJson', () => {
  it('writes the /24 example with data in padded base64', () => {
    // Act
    const json = toJson(example());

    // Assess
    expect(json).toEqual({ range: '192.168.0.0/24', data: 'AgM=', version: 7 });
  });

  it('writes an empty bitmap as an empty string', () => {
    // Act
    const json = toJson({ range: '10.0.0.0/12', data: new Uint8Array(0), version: 0 });

    // Assess
    expect(json.data).toBe('');
  });

  it('throws when data starts with a zero byte, which big.Int.Bytes() never writes', () => {
    // Act & Assess
    expect(() => toJson({ ...example(), data: Uint8Array.of(0, 2, 3) })).toThrow(InvalidArgumentError);
  });
});

describe('Function: toCbor', () => {
  it('writes the pinned deterministic bytes for the /24 example', () => {
    // Act
    const bytes = toCbor(example());

    // Assess
    expect(hex(bytes)).toBe(hex(unhex(EXAMPLE_CBOR)));
  });

  it('matches what cborg writes with its RFC 8949 deterministic options', () => {
    // Prepare
    const doc = example();

    // Act
    const ours = toCbor(doc);
    const theirs = encode(
      { version: doc.version, range: doc.range, data: new Tagged(22, doc.data) },
      rfc8949EncodeOptions,
    );

    // Assess
    expect(hex(ours)).toBe(hex(theirs));
  });

  it('decodes with cborg into a map whose data is a byte string under tag 22', () => {
    // Act
    const decoded = cborgDecode(toCbor(example()));

    // Assess
    expect(decoded).toBeInstanceOf(Map);
    const data = (decoded as Map<string, unknown>).get('data');
    expect(data).toBeInstanceOf(Tagged);
    expect((data as Tagged).tag).toBe(22);
    expect((data as Tagged).value).toEqual(Uint8Array.of(0x02, 0x03));
    expect([...(decoded as Map<string, unknown>).keys()]).toEqual(['data', 'range', 'version']);
  });

  it('converts to exactly the JSON form under a generic RFC 8949 §6.1 converter', () => {
    // Act
    const converted = cborToJson(cborgDecode(toCbor(example())));

    // Assess
    expect(converted).toEqual(toJson(example()));
    expect(JSON.stringify(converted)).toBe('{"data":"AgM=","range":"192.168.0.0/24","version":7}');
  });

  it('converts to exactly the JSON form for any document, and cborg reads it as deterministic', () => {
    fc.assert(
      fc.property(documents, (doc) => {
        // Act
        const bytes = toCbor(doc);

        // Assess
        expect(cborToJson(cborgDecode(bytes))).toEqual(toJson(doc));
        expect(hex(encode(cborgDecode(bytes), rfc8949EncodeOptions))).toBe(hex(bytes));
      }),
    );
  });

  it('converts an untagged byte string to base64url without padding, unlike tag 22', () => {
    // Prepare: the converter itself, against the two RFC 8949 rules it implements
    const bytes = Uint8Array.of(0xfb, 0xff);

    // Act & Assess
    expect(cborToJson(cborgDecode(encodeCbor(bytes)))).toBe('-_8');
    expect(cborToJson(cborgDecode(encodeCbor(new CborTag(22, bytes))))).toBe('+/8=');
  });
});

describe('Function: fromCbor', () => {
  it('reads back the /24 example from the pinned bytes', () => {
    // Act
    const doc = fromCbor(unhex(EXAMPLE_CBOR));

    // Assess
    expect(doc).toEqual(example());
  });

  it('round-trips any document', () => {
    fc.assert(
      fc.property(documents, (doc) => {
        // Act
        const back = fromCbor(toCbor(doc));

        // Assess
        expect(back).toEqual(doc);
      }),
    );
  });

  it.each([
    [
      'a byte string without tag 22',
      'a3 6464617461 420203 6572616e6765 6161 6776657273696f6e 07',
      /data must be a byte string under tag 22/,
    ],
    [
      'tag 21 instead of 22',
      'a3 6464617461 d5420203 6572616e6765 6161 6776657273696f6e 07',
      /data must be a byte string under tag 22/,
    ],
    ['a missing version', 'a2 6464617461 d6420203 6572616e6765 6161', /version must be an unsigned integer/],
    [
      'an unknown key',
      'a4 6464617461 d6420203 6478747261 00 6572616e6765 6161 6776657273696f6e 07',
      /unknown key\(s\) "xtra"/,
    ],
    [
      'keys out of bytewise order',
      'a3 6572616e6765 6161 6464617461 d6420203 6776657273696f6e 07',
      /out of the deterministic \(bytewise\) order/,
    ],
    ['a duplicated key', 'a3 6464617461 d6420203 6464617461 d6420203 6776657273696f6e 07', /duplicated/],
    [
      'a version in a longer form than needed',
      'a3 6464617461 d6420203 6572616e6765 6161 6776657273696f6e 1807',
      /not in its shortest form/,
    ],
    [
      'an indefinite-length map',
      'bf 6464617461 d6420203 6572616e6765 6161 6776657273696f6e 07 ff',
      /indefinite lengths/,
    ],
    [
      'a negative version',
      'a3 6464617461 d6420203 6572616e6765 6161 6776657273696f6e 20',
      /negative integer is outside the supported subset/,
    ],
    [
      'data with a leading zero byte',
      'a3 6464617461 d643000203 6572616e6765 6161 6776657273696f6e 07',
      /must not start with a zero byte/,
    ],
    ['an array instead of a map', '83 01 02 03', /array is outside the supported subset/],
    ['trailing bytes', 'a3 6464617461 d6420203 6572616e6765 6161 6776657273696f6e 07 00', /1 trailing byte/],
    ['a truncated byte string', 'a3 6464617461 d64502', /runs past the end/],
    ['invalid UTF-8 in range', 'a3 6464617461 d6420203 6572616e6765 61ff 6776657273696f6e 07', /not valid UTF-8/],
  ])('throws for %s', (_, hexText, message) => {
    // Prepare
    const bytes = unhex(hexText);

    // Act & Assess
    expect(() => fromCbor(bytes)).toThrow(InvalidArgumentError);
    expect(() => fromCbor(bytes)).toThrow(message);
  });
});

describe('Function: decodeCbor', () => {
  it('keeps a leading byte order mark in a text string rather than dropping it', () => {
    // Prepare
    const text = '\uFEFFa';

    // Act
    const back = decodeCbor(encodeCbor(text));

    // Assess
    expect(back).toBe(text);
  });

  it('reads unsigned integers beyond 2^53 as bigints, at every argument width', () => {
    // Prepare
    const values = [0, 23, 24, 255, 256, 65_535, 65_536, 2 ** 32 - 1, 2 ** 32, Number.MAX_SAFE_INTEGER, 2n ** 64n - 1n];

    // Act & Assess
    for (const value of values) {
      expect(decodeCbor(encodeCbor(value))).toBe(value);
      expect(hex(encodeCbor(value))).toBe(hex(encode(value)));
    }
  });

  it('refuses a text string with a lone surrogate on encode', () => {
    // Act & Assess
    expect(() => encodeCbor('\uD800')).toThrow(RangeError);
  });
});
