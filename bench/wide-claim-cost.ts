/**
 * `npx tsx bench/wide-claim-cost.ts`: what the writes of a dual-stack count-32 batch claim cost,
 * as the Table port sees them: requests by method, and operations per transaction, for a claim whose 64 addresses
 * lie in 2 ranges (a /24 and a /120) and one in about 44 (the pool: 40 IPv4 /29s and 40 IPv6 /125s), each
 * made, renewed to an earlier expiry, released, and replaced when expired by another owner's claim in a reuse-delay
 * pool. The shipped code path (the HTTP handler, one warm container) on MemoryTable, which enforces DynamoDB's limits
 * as DynamoDB Local does; a seeded random, so each run is the same. Write units: each operation of a transaction is 2
 * units per started KB of its item; these items are under 1 KB, so 2 units an operation. Writes bench/results/wide-claim.json.
 */
import { writeFileSync } from 'node:fs';
import type { APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { httpEvent } from '../scripts/lib/http-event.ts';
import { loadConfig } from '../shared/config.ts';
import { buildContainer } from '../shared/adapters/composition.ts';
import { createHttpHandler } from '../shared/adapters/http/api.ts';
import { MemoryTable } from '../shared/adapters/memory/memory-table.ts';
import type { Item } from '../shared/adapters/dynamodb/codec.ts';
import type { Key } from '../shared/adapters/dynamodb/keys.ts';
import type { Query, QueryPage, Table, TxVerdict, WriteOp, WriteResult } from '../shared/adapters/dynamodb/table.ts';
import { Prng } from '../sim/prng.ts';

/** The port's calls, counted: requests by method and the operations of each transaction. */
class CountingTable implements Table {
  readonly requests: Record<string, number> = {};
  readonly transactions: number[] = [];
  constructor(private readonly inner: Table) {}
  get name(): string {
    return this.inner.name;
  }
  reset(): void {
    for (const k of Object.keys(this.requests)) delete this.requests[k];
    this.transactions.length = 0;
  }
  private count(method: string, n = 1): void {
    this.requests[method] = (this.requests[method] ?? 0) + n;
  }
  get(key: Key): Promise<Item | undefined> {
    this.count('GetItem');
    return this.inner.get(key);
  }
  batchGet(keys: readonly Key[], attributes?: readonly string[]): Promise<Item[]> {
    // SdkTable sends 100 keys a request.
    this.count('BatchGetItem', Math.max(1, Math.ceil(new Set(keys.map((k) => `${k.PK}\u0000${k.SK}`)).size / 100)));
    return this.inner.batchGet(keys, attributes);
  }
  write(op: WriteOp): Promise<WriteResult> {
    this.count(op.kind === 'put' ? 'PutItem' : op.kind === 'delete' ? 'DeleteItem' : 'UpdateItem');
    return this.inner.write(op);
  }
  transact(ops: readonly WriteOp[]): Promise<TxVerdict[] | undefined> {
    this.count('TransactWriteItems');
    this.transactions.push(ops.length);
    return this.inner.transact(ops);
  }
  query(query: Query): Promise<QueryPage> {
    this.count('Query');
    return this.inner.query(query);
  }
  describe(): Promise<string> {
    return this.inner.describe();
  }
}

const T0 = Date.parse('2035-01-01T00:10:00.000Z');

interface Step {
  readonly step: string;
  readonly status: number;
  readonly requests: Record<string, number>;
  readonly transactions: number[];
  readonly writeUnits: number;
}

async function shape(
  label: string,
  v4: string[],
  v6: string[],
): Promise<{ shape: string; ranges: number; steps: Step[] }> {
  const table = new CountingTable(new MemoryTable({ name: 'bench' }));
  let now = T0;
  const clock = { nowMs: () => now };
  const config = loadConfig({ LEASE_INDEX_SHARDS: '4', TABLE_NAME: 'bench', LOCAL_STACK: 'true' });
  const container = buildContainer(config, { table, clock, random: new Prng(33), viewMaxAgeMs: 0 });
  const handler = createHttpHandler(
    () => container.deps,
    { version: 'bench', health: async () => ({ table: 'bench', status: 'ACTIVE' }), localStack: true },
    () => {},
  );
  const call = async (method: string, path: string, body?: unknown) => {
    const out = (await handler(
      httpEvent(method, path, { body, requestId: 'bench' }),
      {} as Context,
    )) as APIGatewayProxyStructuredResultV2;
    return { status: out.statusCode ?? 0, body: out.body ? JSON.parse(out.body) : {} };
  };
  await call('POST', '/v1/pools', { name: 'p', reuseDelaySeconds: 3600 });
  for (const cidr of [...v4, ...v6]) await call('POST', '/v1/pools/p/ranges', { cidr });
  const steps: Step[] = [];
  const measure = async (step: string, method: string, path: string, body?: unknown) => {
    table.reset();
    const res = await call(method, path, body);
    steps.push({
      step,
      status: res.status,
      requests: { ...table.requests },
      transactions: [...table.transactions],
      writeUnits: 2 * table.transactions.reduce((a, b) => a + b, 0),
    });
    return res;
  };
  const wide = { ipFamilyPolicy: 'RequireDualStack', ipFamilies: ['IPv4', 'IPv6'], count: 32 };
  const made = await measure('create', 'POST', '/v1/pools/p/claims', {
    name: 'a',
    owner: { kind: 'Pod', name: 'a', uid: 'ua' },
    ...wide,
    ttlSeconds: 3600,
  });
  const ranges = new Set((made.body.addresses as { range: string }[]).map((a) => a.range)).size;
  await measure('renew to an earlier expiry', 'POST', '/v1/pools/p/claims/a/renew', { ttlSeconds: 60 });
  now += 61_000;
  await measure('create replacing the expired claim (another owner)', 'POST', '/v1/pools/p/claims', {
    name: 'a',
    owner: { kind: 'Pod', name: 'b', uid: 'ub' },
    ...wide,
    ttlSeconds: 3600,
  });
  await measure('release (DELETE, into the reuse delay)', 'DELETE', '/v1/pools/p/claims/a');
  return { shape: label, ranges, steps };
}

async function main(): Promise<void> {
  const narrow = await shape('2 ranges (a /24 and a /120)', ['10.0.0.0/24'], ['fd00::/120']);
  const wide = await shape(
    "the issue's pool (40 IPv4 /29s, 40 IPv6 /125s)",
    Array.from({ length: 40 }, (_, i) => `10.33.${i}.0/29`),
    Array.from({ length: 40 }, (_, i) => `fd33::${i === 0 ? '' : (8 * i).toString(16)}/125`),
  );
  const results = { generatedBy: 'bench/wide-claim-cost.ts', shapes: [narrow, wide] };
  writeFileSync(new URL('./results/wide-claim.json', import.meta.url), `${JSON.stringify(results, null, 2)}\n`);
  for (const s of results.shapes) {
    console.log(`${s.shape}: the claim lies in ${s.ranges} ranges`);
    for (const st of s.steps)
      console.log(
        `  ${st.step}: ${st.status}; requests ${JSON.stringify(st.requests)}; operations per transaction ${JSON.stringify(st.transactions)}; write units ${st.writeUnits}`,
      );
  }
}

await main();
