/**
 * The web console's static files, built in memory by esbuild from console/ (TypeScript and CSS) the first time they
 * are asked for: no build step to forget after a `git pull`, no build output in the tree, and nothing fetched from
 * any network at run time (the bundle carries everything the page needs).
 */
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const consoleDir = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'console');

/** One file the console serves under /console/. */
export interface ConsoleAsset {
  readonly body: Buffer;
  readonly contentType: string;
}

/** The console's files by name: `index.html`, `assets/app.js`, `assets/app.css`. */
export type ConsoleAssets = ReadonlyMap<string, ConsoleAsset>;

/** Builds the page: console/main.ts bundled and minified for the browser, its CSS alongside, and the HTML shell. */
export async function buildConsoleAssets(): Promise<ConsoleAssets> {
  const result = await build({
    entryPoints: { app: join(consoleDir, 'main.ts') },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome120', 'firefox120', 'safari17'],
    write: false,
    outdir: '/console-assets',
    legalComments: 'none',
    logLevel: 'silent',
  });
  const assets = new Map<string, ConsoleAsset>();
  for (const file of result.outputFiles) {
    const name = file.path.slice(file.path.lastIndexOf('/') + 1);
    const contentType = name.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8';
    assets.set(`assets/${name}`, { body: Buffer.from(file.contents), contentType });
  }
  assets.set('index.html', {
    body: await readFile(join(consoleDir, 'index.html')),
    contentType: 'text/html; charset=utf-8',
  });
  return assets;
}

let cached: Promise<ConsoleAssets> | undefined;

/** The console's files, built once per process. */
export function consoleAssets(): Promise<ConsoleAssets> {
  cached ??= buildConsoleAssets();
  // A failed build is not kept: the next request tries again (after the source is fixed, under `npm start`).
  cached.catch(() => (cached = undefined));
  return cached;
}
