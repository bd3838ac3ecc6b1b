/**
 * How long `ipam map` takes on a filled range of the local stack: a benchmark figure, not a test.
 *
 *   npm run bench:map -- [--prefix 16] [--fill 1] [--runs 3] [--keep]
 *
 * Starts its own local stack (no stream poller), creates a pool with one 10.64.0.0/<prefix> range, and fills `fill`
 * of it with one claim per address. The fill is written straight to the stack's DynamoDB Local in batches, as the
 * items the claim transaction writes (the store's own codec builds them: a claim and its lease), and the occupancy
 * summary is brought up to date by the stream function's own code (SummaryMirror) over the filled addresses; one
 * claim transaction per address through the API would take most of an hour for a /16 on a shared 2-core machine. Then it runs the `ipam` executable as a user would, `runs` times,
 * and prints the wall time of each run next to the time the same process spends just starting (`ipam --version`).
 */
import { execFile } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { BatchWriteItemCommand, type WriteRequest } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { createDynamoClient } from '../shared/adapters/dynamodb/client.ts';
import { claimToItem, leaseToItem } from '../shared/adapters/dynamodb/codec.ts';
const marshallOpts = { removeUndefinedValues: true, convertClassInstanceToMap: false } as const;
import { formatAddress } from '../shared/core/ip/address.ts';
import { capacity, hostAt, parseCidr } from '../shared/core/ip/cidr.ts';
import type { Claim, Lease } from '../shared/core/model.ts';
import { startLocalStack } from '../scripts/local-stack.ts';
import { SdkTable } from '../shared/adapters/dynamodb/sdk-table.ts';
import type { Table } from '../shared/adapters/dynamodb/table.ts';
import { getPool } from '../shared/core/use-cases/pools.ts';
import { hostInterval } from '../shared/core/base/pool-geometry.ts';
import { buildContainer } from '../shared/adapters/composition.ts';
import { loadConfig } from '../shared/config.ts';
import { LeaseItemPresence } from '../shared/core/base/lease-change.ts';

const run = promisify(execFile);
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ipam = join(repoRoot, 'cli', 'bin', 'ipam.js');

const { values } = parseArgs({
  options: {
    prefix: { type: 'string', default: '16' },
    fill: { type: 'string', default: '1' },
    runs: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '8' },
    shards: { type: 'string', default: '8' },
    // Leave the filled stack running after the runs (until Ctrl-C), to look at it with ipam by hand.
    keep: { type: 'boolean', default: false },
  },
});
const prefix = Number(values.prefix);
const fill = Number(values.fill);
const runs = Number(values.runs);
const concurrency = Number(values.concurrency);
/** LEASE_INDEX_SHARDS of the stack (serverless.yml's default). */
const shards = Number(values.shards);

/** The claim and lease items of one single-address claim, as the claim transaction writes them. */
function claimItems(pool: string, range: string, i: number, address: string): WriteRequest[] {
  const owner = { kind: 'Bench', name: 'map', uid: `u-${i}` };
  const createdAt = new Date().toISOString();
  const claim: Claim = {
    pool,
    name: `c-${i}`,
    uid: `bench-${i}`,
    spec: { owner, ipFamilyPolicy: 'SingleStack', ipFamilies: ['IPv4'], addresses: [address] },
    addresses: [{ address, family: 'IPv4', range }],
    createdAt,
    version: 1,
  };
  const lease: Lease = {
    pool,
    address,
    family: 'IPv4',
    range,
    claim: claim.name,
    claimUid: claim.uid,
    owner,
    createdAt,
  };
  return [claimToItem(claim, shards), leaseToItem(lease, shards)].map((item) => ({
    PutRequest: { Item: marshall(item, marshallOpts) },
  }));
}

async function timed(args: readonly string[], endpoint: string): Promise<{ ms: number; stdout: string }> {
  const started = performance.now();
  const { stdout } = await run(process.execPath, [ipam, '--endpoint', endpoint, ...args], {
    maxBuffer: 64 * 1024 * 1024,
  });
  return { ms: Math.round(performance.now() - started), stdout };
}

async function main(): Promise<void> {
  const cidrText = `10.64.0.0/${prefix}`;
  const cidr = parseCidr(cidrText);
  const hosts = Number(capacity(cidr));
  const target = Math.round(hosts * fill);
  console.log(`starting a local stack...`);
  const stack = await startLocalStack({ streamPoller: false, log: () => undefined });
  try {
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${stack.apiUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
    };
    await post('/v1/pools', { name: 'bench-map' });
    await post('/v1/pools/bench-map/ranges', { cidr: cidrText });
    const range = cidrText.replace('/', '-');

    // Every address for a full range; otherwise an even spread (every k-th address), which touches every cell.
    const offsets = Array.from({ length: target }, (_, i) => (fill >= 1 ? i : Math.floor((i * hosts) / target)));
    const client = createDynamoClient({ endpoint: stack.endpoint, region: 'us-east-1' });
    const fillStarted = performance.now();
    // 12 claims (24 items) a batch: BatchWriteItem takes at most 25.
    const batches: number[][] = [];
    for (let i = 0; i < offsets.length; i += 12)
      batches.push(Array.from({ length: Math.min(12, offsets.length - i) }, (_, k) => i + k));
    let next = 0;
    let written = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < batches.length) {
          const batch = batches[next++]!;
          let requests = batch.flatMap((i) =>
            claimItems(
              'bench-map',
              range,
              i,
              formatAddress({ family: cidr.family, value: hostAt(cidr, BigInt(offsets[i]!)) }),
            ),
          );
          while (requests.length) {
            const out = await client.send(new BatchWriteItemCommand({ RequestItems: { [stack.tableName]: requests } }));
            requests = out.UnprocessedItems?.[stack.tableName] ?? [];
          }
          written += batch.length;
          if (Math.floor(written / 10_000) !== Math.floor((written - batch.length) / 10_000))
            console.log(`  ${written} claims...`);
        }
      }),
    );
    // What the stream function would have done with those writes: the occupancy summary, by its own code.
    const changes = offsets.map((o, i) => ({
      id: String(i),
      pool: 'bench-map',
      address: formatAddress({ family: cidr.family, value: hostAt(cidr, BigInt(o)) }),
      state: LeaseItemPresence.Held,
    }));
    const mirror = buildContainer(
      loadConfig({
        TABLE_NAME: stack.tableName,
        DYNAMODB_ENDPOINT: stack.endpoint,
        LOCAL_STACK: 'true',
        LEASE_INDEX_SHARDS: String(shards),
      }),
      { client },
    ).mirror.summary;
    const summarized = await mirror.apply(changes);
    if (summarized.failed.length)
      throw new Error(`the summary of the fill failed for ${summarized.failed.length} leases`);
    const fillSeconds = (performance.now() - fillStarted) / 1000;
    console.log(
      `filled ${target} of ${hosts} addresses of ${cidrText} in ${fillSeconds.toFixed(0)} s (${Math.round(target / fillSeconds)} claims/s, summary included)`,
    );

    // What GET /v1/pools/{pool} reads on this range (issue 10: "at most a few dozen items"), through a table that
    // counts the items each request returns or scans, next to what counting the leases through the listing reads.
    const counted = { items: 0, requests: 0 };
    const inner = new SdkTable(client, stack.tableName);
    const counting: Table = {
      name: inner.name,
      get: async (key) => (counted.requests++, counted.items++, inner.get(key)),
      batchGet: async (keys, attributes) => {
        counted.requests += 1;
        const items = await inner.batchGet(keys, attributes);
        counted.items += items.length;
        return items;
      },
      write: (op) => inner.write(op),
      transact: (ops) => inner.transact(ops),
      query: async (query) => {
        counted.requests += 1;
        const page = await inner.query(query);
        counted.items += page.scanned;
        return page;
      },
      describe: () => inner.describe(),
    };
    const reader = buildContainer(
      loadConfig({
        TABLE_NAME: stack.tableName,
        DYNAMODB_ENDPOINT: stack.endpoint,
        LOCAL_STACK: 'true',
        LEASE_INDEX_SHARDS: String(shards),
      }),
      { table: counting },
    );
    const details = await getPool(reader.deps, 'bench-map');
    const poolRead = { ...counted };
    counted.items = 0;
    counted.requests = 0;
    const host = hostInterval(cidr);
    const listingCount = host
      ? await reader.deps.leases.countLeases('bench-map', cidr.family, [host], { nowMs: Date.now() })
      : 0n;
    console.log(
      `GET /v1/pools/bench-map: used ${String(details.utilization[cidr.family]?.used)}, ${poolRead.items} items read in ${poolRead.requests} requests; counting the same leases through the listing: ${String(listingCount)} in ${counted.items} items, ${counted.requests} requests`,
    );

    const startup = await timed(['--version'], stack.apiUrl);
    const times: number[] = [];
    let picture = '';
    for (let i = 0; i < runs; i += 1) {
      const { ms, stdout } = await timed(['map', 'bench-map', range], stack.apiUrl).catch(async (error: unknown) => {
        if (values.keep) return { ms: NaN, stdout: String(error) };
        throw error;
      });
      times.push(ms);
      picture = stdout;
    }
    const listing = await timed(['get', 'addresses', '-p', 'bench-map', '--range', range, '-o', 'name'], stack.apiUrl);
    const heldLine = picture.split('\n')[1] ?? '';
    if (!heldLine.includes(`${target} held`) && !values.keep)
      throw new Error(`the map does not show ${target} held addresses: ${heldLine}`);
    const sorted = [...times].sort((a, b) => a - b);
    console.log(picture);
    console.log(
      [
        `ipam map on ${cidrText} with ${target} held addresses (the occupancy route: ${Math.ceil(hosts / 16384)} summary chunks):`,
        `  runs (ms):        ${times.join(', ')}   median ${sorted[Math.floor(sorted.length / 2)]}`,
        `  process start:    ${startup.ms} ms   (ipam --version: node, tsx, the CLI's modules)`,
        `  get addresses:    ${listing.ms} ms   (the address listing, ${Math.ceil(target / 1000)} pages of 1,000, printed as names)`,
        `  machine:          ${cpus().length} cores, load average ${loadavg()
          .map((l) => l.toFixed(1))
          .join(' ')} (other work shares them)`,
      ].join('\n'),
    );
    if (values.keep) {
      console.log(`kept running: IPAM_ENDPOINT=${stack.apiUrl}; Ctrl-C (SIGINT or SIGTERM) stops it`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
    }
  } finally {
    await stack.stop();
  }
}

await main();
