/**
 * `npx tsx bench/cbor-codec.ts`: the measurement behind keeping shared/core/bitmap/cbor.ts (see the top of that
 * file). The same RangeAllocation codec two ways, the project's and one on `cborg` (as it would be written, inline
 * here), compared on (1) the api function's bundle built as serverless.yml builds it, with the codec swapped in, and
 * the codec alone, minified; (2) encode and decode time of a full /24 document (32 bitmap bytes) and of the largest a
 * legacy range can have (a /16 window, 8,192 bytes), medians of 7 rounds. Prints one JSON object per figure.
 */
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decode, encode, rfc8949EncodeOptions, Tagged } from 'cborg';
import { build, type Plugin } from 'esbuild';
import { FUNCTION_BUILD } from './lib/function-build.ts';
import { EXPECTED_BASE64, fromCbor, toCbor, type RangeAllocation } from '../shared/core/bitmap/range-allocation.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** The cborg version of toCbor / fromCbor (cborg checks no map key order on decode, hence the re-encoding). */
const CBORG_CODEC = `
import { decode, encode, rfc8949EncodeOptions, Tagged } from 'cborg';
export const toCbor = (doc) => encode({ data: new Tagged(22, doc.data), range: doc.range, version: doc.version }, rfc8949EncodeOptions);
export function fromCbor(bytes) {
  const value = decode(bytes, { strict: true, useMaps: true, rejectDuplicateMapKeys: true, tags: Tagged.preserve(22) });
  const doc = { range: value.get('range'), data: value.get('data').value, version: value.get('version') };
  const again = toCbor(doc);
  if (again.length !== bytes.length || again.some((b, k) => b !== bytes[k])) throw new Error('not deterministic');
  return doc;
}
`;

/** Replaces the project's range-allocation.ts by a module re-exporting its JSON side and the cborg codec. */
const withCborg = (codecFile: string): Plugin => ({
  name: 'cborg-codec',
  setup(b) {
    b.onResolve({ filter: /range-allocation\.ts$/ }, (args) =>
      args.importer === codecFile ? undefined : { path: codecFile },
    );
  },
});

async function bundleBytes(dir: string): Promise<void> {
  const codecFile = join(dir, 'cborg-range-allocation.ts');
  await writeFile(
    codecFile,
    `${CBORG_CODEC}\nexport { toJson, EXPECTED_BASE64 } from ${JSON.stringify(join(ROOT, 'shared/core/bitmap/range-allocation.ts'))};\n`,
  );
  for (const codec of ['hand-written', 'cborg'] as const) {
    const outfile = join(dir, codec, 'http.mjs');
    await build({
      ...FUNCTION_BUILD,
      entryPoints: [join(ROOT, 'functions/http.ts')],
      outfile,
      plugins: codec === 'cborg' ? [withCborg(codecFile)] : [],
    });
    const alone = join(dir, codec, 'codec.mjs');
    const entry = join(dir, `${codec}-entry.ts`);
    await writeFile(
      entry,
      `export { toCbor, fromCbor } from ${JSON.stringify(codec === 'cborg' ? codecFile : join(ROOT, 'shared/core/bitmap/range-allocation.ts'))};\n`,
    );
    await build({ ...FUNCTION_BUILD, banner: {}, entryPoints: [entry], outfile: alone });
    console.log(
      JSON.stringify({ codec, apiBundleBytes: (await stat(outfile)).size, codecAloneBytes: (await stat(alone)).size }),
    );
  }
}

const cborgToCbor = (doc: RangeAllocation): Uint8Array =>
  encode({ data: new Tagged(EXPECTED_BASE64, doc.data), range: doc.range, version: doc.version }, rfc8949EncodeOptions);
const cborgFromCbor = (bytes: Uint8Array): unknown =>
  decode(bytes, { strict: true, useMaps: true, rejectDuplicateMapKeys: true, tags: Tagged.preserve(EXPECTED_BASE64) });

/** Microseconds per call: the median of 7 rounds of n calls, after one warm-up round. */
function microseconds(fn: () => unknown, n: number): number {
  const rounds: number[] = [];
  for (let r = 0; r < 8; r += 1) {
    const t = performance.now();
    for (let i = 0; i < n; i += 1) fn();
    if (r > 0) rounds.push(((performance.now() - t) * 1000) / n);
  }
  return Math.round(rounds.sort((a, b) => a - b)[3]! * 100) / 100;
}

function speeds(): void {
  const full = (bytes: number, range: string): RangeAllocation => ({
    range,
    data: new Uint8Array(bytes).fill(0xff),
    version: 123_456,
  });
  for (const [name, doc] of [
    ['/24', full(32, '192.168.0.0/24')],
    ['/16', full(8192, '10.1.0.0/16')],
  ] as const) {
    const bytes = toCbor(doc);
    if (Buffer.compare(bytes, cborgToCbor(doc)) !== 0) throw new Error(`the two encoders disagree on ${name}`);
    const n = name === '/16' ? 5_000 : 20_000;
    console.log(
      JSON.stringify({
        document: name,
        cborBytes: bytes.length,
        encodeUs: { handWritten: microseconds(() => toCbor(doc), n), cborg: microseconds(() => cborgToCbor(doc), n) },
        // cborg's decode alone: the key-order check fromCbor would add (a re-encoding, see CBORG_CODEC) comes on top.
        decodeUs: {
          handWritten: microseconds(() => fromCbor(bytes), n),
          cborgDecodeOnly: microseconds(() => cborgFromCbor(bytes), n),
        },
      }),
    );
  }
}

await mkdir(join(ROOT, '.esbuild'), { recursive: true });
const dir = await mkdtemp(join(ROOT, '.esbuild', 'cbor-codec-'));
try {
  await bundleBytes(dir);
} finally {
  await rm(dir, { recursive: true, force: true });
}
speeds();
