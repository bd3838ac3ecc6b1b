#!/usr/bin/env node
// The `ipam` executable. It runs the TypeScript sources through tsx's loader rather than a prebuilt bundle, so a
// checkout (`npx ipam`) and `npm install -g .` (a link to the checkout) always run the code as it is, with no build
// step to forget after `npm ci` or after a `git pull`.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../main.ts');
await main(process.argv.slice(2));
