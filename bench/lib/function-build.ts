import type { BuildOptions } from 'esbuild';

/**
 * serverless.yml's custom.esbuild settings, as the deployed functions are bundled: what the cold-start scenario and
 * the CBOR codec comparison build with, so their bundles are the ones that ship.
 */
export const FUNCTION_BUILD: BuildOptions = {
  bundle: true,
  minify: true,
  sourcemap: false,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  mainFields: ['module', 'main'],
  // The nodejs22.x runtime provides AWS SDK v3.
  external: ['@aws-sdk/*'],
  logLevel: 'silent',
  banner: {
    js: "import { createRequire as __ipamCreateRequire } from 'node:module'; const require = __ipamCreateRequire(import.meta.url);",
  },
};
