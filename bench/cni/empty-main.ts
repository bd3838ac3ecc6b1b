/**
 * The empty program of the CNI start-up benchmark (bench/scenarios/cni.ts): built by exactly the plugin's toolchain
 * (scripts/build-cni.ts, buildWithCniToolchain: the same esbuild options and `bun build` flags), it does what the
 * plugin's VERSION does at the edges and nothing else: reads stdin as the plugin does, prints a VERSION result and
 * exits 0. Its start to exit is the toolchain's floor, the time no code of the plugin can take away.
 */
import { readFileSync } from 'node:fs';

let stdin = '';
try {
  stdin = readFileSync(0, 'utf8');
} catch {
  stdin = '';
}
const asked = /"cniVersion"\s*:\s*"([^"]+)"/.exec(stdin)?.[1] ?? '1.1.0';
process.stdout.write(`${JSON.stringify({ cniVersion: asked, supportedVersions: ['1.1.0'] })}\n`);
process.exitCode = 0;
