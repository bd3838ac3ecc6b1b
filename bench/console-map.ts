/**
 * The web console's occupancy map of a full /16 in Debian's chromium: how long the page takes from the data's arrival
 * to the map on screen, and how big its JavaScript is. A benchmark figure, not a test.
 *
 *   npm run bench:console -- [--runs 7]
 *
 * The data comes from a stand-in API on loopback that answers the two reads the map view makes (GET /v1/pools/{pool}
 * and GET .../occupancy) with a 10.64.0.0/16 range holding every one of its 65,534 addresses, in the occupancy
 * route's shape (slices of 16,384 addresses, bits in base64): what is measured is the page's work after the data
 * arrives (decode, lay out, draw), so filling a real stack with 65,534 claims would only add minutes of set-up. The
 * page measures itself with the performance API: mark `map-data` when both answers are in, measure `map-render` in the
 * task after the next animation frame (the map is in the DOM, laid out and painted).
 *
 * Writes bench/results/console-map.json; `npm run bench -- --report-only` puts it in BENCHMARKS.md.
 */
import { createServer } from 'node:http';
import { writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { consoleAssets } from '../cli/console/assets.ts';
import { startConsoleServer } from '../cli/console/server.ts';
import { launchBrowser } from '../tests/support/browser.ts';
import type { ConsoleMapBench } from './lib/report.ts';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({ options: { runs: { type: 'string', default: '7' } } });
const runs = Number(values.runs);

const SLICE = 16_384;
const HOSTS = 65_534;
const now = new Date().toISOString();
const range = {
  name: '10.64.0.0-16',
  cidr: '10.64.0.0/16',
  family: 'IPv4',
  state: 'Ready',
  legacy: false,
  size: HOSTS,
  used: HOSTS,
  releasing: 0,
  free: 0,
  createdAt: now,
};
const pool = {
  name: 'bench',
  exclude: [],
  reuseDelaySeconds: 0,
  createdAt: now,
  ranges: [range],
  utilization: { IPv4: { size: HOSTS, used: HOSTS, releasing: 0, free: 0 } },
};
/** Every host held: all bits set but the network address's (bit 0) and the broadcast address's (bit 65,535). */
function slices(): unknown[] {
  return [0, 1, 2, 3].map((k) => {
    const bits = Buffer.alloc(SLICE / 8, 0xff);
    if (k === 0) bits[0] = 0xfe;
    if (k === 3) bits[bits.length - 1] = 0x7f;
    return {
      first: `10.64.${k * 64}.0`,
      count: SLICE,
      used: SLICE - (k === 0 || k === 3 ? 1 : 0),
      bits: bits.toString('base64'),
      asOf: now,
    };
  });
}
const occupancy = { range: range.name, cidr: range.cidr, used: HOSTS, source: 'summary', slices: slices() };

async function main(): Promise<void> {
  const api = createServer((req, res) => {
    const body =
      req.url === '/v1/pools/bench'
        ? pool
        : req.url === `/v1/pools/bench/ranges/${range.name}/occupancy`
          ? occupancy
          : undefined;
    res.writeHead(body ? 200 : 404, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify(
        body ?? {
          status: 404,
          code: 'NotFound',
          title: 'Not Found',
          detail: `${req.url} is not served by the stand-in`,
        },
      ),
    );
  });
  await new Promise<void>((r) => api.listen(0, '127.0.0.1', () => r()));
  const upstream = new URL(`http://127.0.0.1:${(api.address() as { port: number }).port}`);
  const server = await startConsoleServer({ upstream });
  const browser = await launchBrowser();
  const assets = await consoleAssets();
  const js = assets.get('assets/app.js')!.body;
  const css = assets.get('assets/app.css')!.body;
  const renderMs: number[] = [];
  const dataMs: number[] = [];
  let cells = 0;
  let summary = '';
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    for (let i = 0; i < runs; i += 1) {
      await page.goto(`${server.origin}/console/pools/bench/ranges/${range.name}`);
      await page.locator('.map-summary').waitFor();
      // The measure is taken in the task after the next frame: poll for it (a few frames at most).
      let entry: { render: number; data: number } | undefined;
      const deadline = Date.now() + 30_000;
      while (entry === undefined && Date.now() < deadline) {
        entry = (await page.evaluate(
          `(() => { const m = performance.getEntriesByName('map-render')[0]; const d = performance.getEntriesByName('map-data')[0]; return m && d ? { render: m.duration, data: d.startTime } : undefined; })()`,
        )) as typeof entry;
      }
      if (entry === undefined) throw new Error('the page never measured map-render');
      renderMs.push(Math.round(entry.render * 10) / 10);
      dataMs.push(Math.round(entry.data));
      cells = await page.locator('[role=gridcell]').count();
      summary = (await page.locator('.map-summary').textContent()) ?? '';
    }
  } finally {
    await browser.close();
    await server.close();
    api.close();
  }
  if (!summary.startsWith(`${HOSTS} held`))
    throw new Error(`the map does not show ${HOSTS} held addresses: ${summary}`);
  const sorted = [...renderMs].sort((a, b) => a - b);
  const result: ConsoleMapBench = {
    cidr: range.cidr,
    held: HOSTS,
    cells,
    runs,
    renderMs,
    renderMsMedian: sorted[Math.floor(sorted.length / 2)]!,
    renderMsMax: sorted[sorted.length - 1]!,
    navigationToDataMs: dataMs,
    jsBytes: js.length,
    jsGzipBytes: gzipSync(js).length,
    cssBytes: css.length,
    browser: `chromium ${browser.version()}`,
    machine: `${cpus().length} cores, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
    at: new Date().toISOString(),
  };
  await writeFile(join(repoRoot, 'bench', 'results', 'console-map.json'), `${JSON.stringify(result, null, 2)}\n`);
  console.log(JSON.stringify(result, null, 2));
}

await main();
