/**
 * `npm run build:cni`: builds the CNI plugin (cni/) into dist/cni/ipam-cni, one self-contained executable that needs
 * nothing on the node (no Node, no npm: copy it to /opt/cni/bin), the name a network config's `"type": "ipam-cni"`
 * runs. Two steps: esbuild bundles the TypeScript to one CommonJS file (dist/cni/ipam-cni.cjs, which also runs as a
 * node script), and `bun build --compile --bytecode` (the `bun` npm package ships its binary) makes it an executable
 * with Bun's runtime and the bundle's bytecode inside. Why Bun's: measured against the node script and Node's single
 * executable applications, it starts fastest and costs the least CPU per call, and needs only the C library
 * (docs/cni.md, "Install on a node", has the figures). The SigV4 signer and credential chain are embedded as text and
 * compiled only when an https endpoint needs them (cni/signer.ts).
 */
import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type BuildOptions, type Plugin } from 'esbuild';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const CNI_OUT_DIR = join(ROOT, 'dist/cni');
export const CNI_PLUGIN_PATH = join(CNI_OUT_DIR, 'ipam-cni');

const run = promisify(execFile);

/**
 * ip-num builds its named ranges (private, documentation, multicast, loopback...: 13 class constants of IPv4 and
 * IPv6, each parsed and validated from text) when the module loads. The plugin never reads them, yet paid 5-14 ms
 * of CPU for them on every call (of about 90 for an ADD on the 2-core machine). In the plugin's
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
      const lazy = text.replace(
        /^(IPv[46])\.([A-Z][A-Z0-9_]*) = ([\s\S]*?);$/gm,
        (_all, cls: string, name: string, value: string) => {
          count += 1;
          return `lazyConstant(${cls}, ${JSON.stringify(name)}, () => (${value}));`;
        },
      );
      const warnings =
        count === 0
          ? [{ text: 'ip-num: no class constants found to build lazily; its ranges are built at load time' }]
          : [];
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

/** The bun binary the `bun` npm package installed (its bin/bun.exe, or the platform package's bin/bun). */
export function bunBinary(): string {
  const require = createRequire(import.meta.url);
  const candidates = [join(dirname(require.resolve('bun/package.json')), 'bin/bun.exe')];
  try {
    candidates.push(
      join(
        dirname(
          require.resolve(
            `@oven/bun-${process.platform}-${process.arch === 'arm64' ? 'aarch64' : process.arch}/package.json`,
          ),
        ),
        'bin/bun',
      ),
    );
  } catch {
    // No platform package resolvable from here: the first candidate or nothing.
  }
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Try the next.
    }
  }
  throw new Error(`build:cni: no bun binary (looked at ${candidates.join(', ')}); run npm ci`);
}

/**
 * The toolchain's flags, shared by the plugin and the benchmark's empty program (bench/cni/empty-main.ts), which is
 * built with exactly these to measure the toolchain's own start-up floor beside the plugin's.
 */
export const CNI_BUNDLE_OPTIONS = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  minify: true,
  legalComments: 'none',
  banner: { js: '#!/usr/bin/env node' },
  metafile: true,
  logLevel: 'warning',
} as const satisfies BuildOptions;

/**
 * `bun build` flags. --bytecode: the bundle's compiled bytecode goes in too, so a call does not parse and compile
 * 500 KB of source.
 */
export const CNI_COMPILE_FLAGS = ['--compile', '--minify', '--bytecode'] as const;

/** esbuild with CNI_BUNDLE_OPTIONS: `entry` to the node script `script` (a shebang, CommonJS). Answers its bytes. */
async function bundle(entry: string, script: string, plugins: Plugin[]): Promise<number> {
  const outDir = dirname(script);
  await mkdir(outDir, { recursive: true });
  const result = await build({ ...CNI_BUNDLE_OPTIONS, entryPoints: [entry], plugins, outfile: script });
  await writeFile(join(outDir, 'package.json'), '{ "type": "commonjs" }\n');
  await chmod(script, 0o755);
  return Object.values(result.metafile.outputs).reduce((sum, o) => sum + o.bytes, 0);
}

/**
 * One entry through the plugin's toolchain: esbuild with CNI_BUNDLE_OPTIONS to `<name>.cjs` in `outDir`, then
 * `bun build` with CNI_COMPILE_FLAGS to the executable `<name>`. Answers both paths and sizes.
 */
export async function buildWithCniToolchain(options: {
  entry: string;
  outDir: string;
  name: string;
  plugins?: Plugin[];
}): Promise<{ path: string; bytes: number; script: string; scriptBytes: number }> {
  const { entry, outDir, name, plugins = [] } = options;
  const script = join(outDir, `${name}.cjs`);
  const scriptBytes = await bundle(entry, script, plugins);
  const path = join(outDir, name);
  await run(bunBinary(), ['build', ...CNI_COMPILE_FLAGS, script, '--outfile', path], {
    maxBuffer: 16 * 1024 * 1024,
  });
  await chmod(path, 0o755);
  return { path, bytes: (await stat(path)).size, script, scriptBytes };
}

/** The plugin's own esbuild plugins: what its source needs, not flags of the toolchain. */
async function cniPlugins(): Promise<Plugin[]> {
  return [await embedSigner(), lazyIpNumConstants];
}

/**
 * Builds the plugin into `outDir` (tests and the benchmark build their own copy): `ipam-cni`, the executable, and
 * `ipam-cni.cjs`, the bundle it was compiled from (a node script). Answers the executable's path and size and the
 * bundle's.
 */
export async function buildCni(
  outDir: string = CNI_OUT_DIR,
): Promise<{ path: string; bytes: number; script: string; scriptBytes: number }> {
  const built = await buildWithCniToolchain({
    entry: join(ROOT, 'cni/ipam-cni.ts'),
    outDir,
    name: 'ipam-cni',
    plugins: await cniPlugins(),
  });
  // A moved import would bundle the signer as code again, compiled into every call: refuse that build.
  if (!(await readFile(built.script, 'utf8')).includes('ipam-cni-signer.js'))
    throw new Error(`build:cni: the signer was not embedded as text (is it still imported by cni/${SIGNER_IMPORTER}?)`);
  return built;
}

/** The one module of cni/ that imports the signer (for https endpoints only). */
const SIGNER_IMPORTER = 'service-commands.ts';

/**
 * The signer (cni/signer.ts: SigV4 and the AWS credential chain, most of the bytes) as its own bundle, embedded in
 * the plugin as a string: V8 only scans a string literal, so an http call never pays for compiling it.
 */
async function embedSigner(): Promise<Plugin> {
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
  return {
    name: 'embed-signer',
    setup(b) {
      b.onResolve({ filter: /[\\/]signer\.ts$|^\.\/signer\.ts$/ }, (args) =>
        args.importer.endsWith(join('cni', SIGNER_IMPORTER))
          ? { path: 'signer', namespace: 'embedded-signer' }
          : undefined,
      );
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
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { path, bytes, script, scriptBytes } = await buildCni();
  console.log(
    `build:cni: ${path} (${(bytes / 1024 / 1024).toFixed(1)} MiB, self-contained), from ${script} (${Math.round(scriptBytes / 1024)} KiB)`,
  );
}
