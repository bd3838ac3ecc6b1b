/**
 * `npm run build:cni`: bundles the CNI plugin (cni/) to one file, dist/cni/ipam-cni, with a node shebang, the name a
 * network config's `"type": "ipam-cni"` runs. CommonJS, because a node binary directory such as /opt/cni/bin has no
 * package.json and Node reads an extensionless file there as CommonJS; dist/cni/package.json says the same for the
 * copy inside this repository (whose own package.json says "module"). The SigV4 signer and credential chain are
 * embedded as text and compiled only when an https endpoint needs them (cni/signer.ts).
 */
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const CNI_OUT_DIR = join(ROOT, 'dist/cni');
export const CNI_PLUGIN_PATH = join(CNI_OUT_DIR, 'ipam-cni');

/**
 * ip-num builds its named ranges (private, documentation, multicast, loopback...: 13 class constants of IPv4 and
 * IPv6, each parsed and validated from text) when the module loads. The plugin never reads them, yet paid 5-14 ms
 * of CPU for them on every call (of about 90 for an ADD on the 2-core machine, issue 21). In the plugin's
 * bundle each becomes a getter that builds it on first read: the same value, built only if read. The server's
 * bundles keep ip-num as it is. When ip-num's text no longer matches, the build says so and keeps it eager.
 */
const lazyIpNumConstants: Plugin = {
  name: 'lazy-ip-num-constants',
  setup(b) {
    b.onLoad({ filter: /[\\/]ip-num[\\/]dist[\\/]src[\\/]IPNumber\.js$/ }, async (args) => {
      const text = await readFile(args.path, 'utf8');
      let count = 0;
      // `IPv4.PRIVATE_RANGES = [ ... ];` and the like, at the start of a line, after the class.
      const lazy = text.replace(/^(IPv[46])\.([A-Z][A-Z0-9_]*) = ([\s\S]*?);$/gm, (_all, cls: string, name: string, value: string) => {
        count += 1;
        return `lazyConstant(${cls}, ${JSON.stringify(name)}, () => (${value}));`;
      });
      const warnings = count === 0 ? [{ text: 'ip-num: no class constants found to build lazily; its ranges are built at load time' }] : [];
      const helper = [
        'function lazyConstant(target, key, make) {',
        '  const settle = (value) => Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });',
        '  Object.defineProperty(target, key, { get() { const value = make(); settle(value); return value; }, set: settle, enumerable: true, configurable: true });',
        '}',
      ].join('\n');
      return { contents: `${helper}\n${lazy}`, loader: 'js', warnings };
    });
  },
};

/** Builds the plugin into `outDir` (tests and the benchmark build their own copy); answers its path and size. */
export async function buildCni(outDir: string = CNI_OUT_DIR): Promise<{ path: string; bytes: number }> {
  const path = join(outDir, 'ipam-cni');
  await mkdir(outDir, { recursive: true });
  // The signer (cni/signer.ts: SigV4 and the AWS credential chain, most of the bytes) as its own bundle, embedded
  // below as a string: V8 only scans a string literal, so an http call never pays for compiling it.
  const signer = await build({
    entryPoints: [join(ROOT, 'cni/signer.ts')],
    bundle: true,
    write: false,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    minify: true,
    legalComments: 'none',
    logLevel: 'warning',
  });
  const signerSource = signer.outputFiles[0]!.text;
  const embedSigner: Plugin = {
    name: 'embed-signer',
    setup(b) {
      b.onResolve({ filter: /[\\/]signer\.ts$|^\.\/signer\.ts$/ }, (args) => (args.importer.endsWith(join('cni', 'main.ts')) ? { path: 'signer', namespace: 'embedded-signer' } : undefined));
      b.onLoad({ filter: /.*/, namespace: 'embedded-signer' }, () => ({
        loader: 'js',
        contents: [
          "const { runInThisContext } = require('node:vm');",
          'const m = { exports: {} };',
          `runInThisContext('(function (module, exports, require) {' + ${JSON.stringify(signerSource)} + '\\n})', { filename: 'ipam-cni-signer.js' })(m, m.exports, require);`,
          'module.exports = m.exports;',
        ].join('\n'),
      }));
    },
  };
  const result = await build({
    entryPoints: [join(ROOT, 'cni/ipam-cni.ts')],
    plugins: [embedSigner, lazyIpNumConstants],
    outfile: path,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    minify: true,
    legalComments: 'none',
    banner: { js: '#!/usr/bin/env node' },
    metafile: true,
    logLevel: 'warning',
  });
  await writeFile(join(outDir, 'package.json'), '{ "type": "commonjs" }\n');
  await chmod(path, 0o755);
  const bytes = Object.values(result.metafile.outputs).reduce((sum, o) => sum + o.bytes, 0);
  return { path, bytes };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { path, bytes } = await buildCni();
  console.log(`build:cni: ${path} (${Math.round(bytes / 1024)} KiB)`);
}
