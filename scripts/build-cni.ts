/**
 * `npm run build:cni`: bundles the CNI plugin (cni/) to one file, dist/cni/ipam-cni, with a node shebang, the name a
 * network config's `"type": "ipam-cni"` runs. CommonJS, because a node binary directory such as /opt/cni/bin has no
 * package.json and Node reads an extensionless file there as CommonJS; dist/cni/package.json says the same for the
 * copy inside this repository (whose own package.json says "module").
 */
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const CNI_OUT_DIR = join(ROOT, 'dist/cni');
export const CNI_PLUGIN_PATH = join(CNI_OUT_DIR, 'ipam-cni');

/** Builds the plugin into `outDir` (tests and the benchmark build their own copy); answers its path and size. */
export async function buildCni(outDir: string = CNI_OUT_DIR): Promise<{ path: string; bytes: number }> {
  const path = join(outDir, 'ipam-cni');
  await mkdir(outDir, { recursive: true });
  const result = await build({
    entryPoints: [join(ROOT, 'cni/ipam-cni.ts')],
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
