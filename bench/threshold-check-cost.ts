/**
 * `npx tsx bench/threshold-check-cost.ts [--batches 20] [--out FILE]`: what the free-space threshold check
 * adds to each batch of the stream function, side by side with the same projections without it, on its own DynamoDB
 * Local. For stream batch sizes 1, 10 and 100 and 1 or 4 pools in a batch, the same kind of lease INSERT changes are
 * fed to two LeaseProjections of the shipped composition, one with the ExhaustionWatch and one without, batch for
 * batch in turn (A, B, A, B ...) so the machine's drift falls on both; each has its own metered client. The pools are
 * far from their thresholds, as most batches find them: the check reads and decides nothing (a crossing adds one
 * transaction and one PutEvents, once per crossing). Figures: requests, read units, items read, write units and
 * milliseconds per batch (median), written as JSON lines to stdout and, with --out, to FILE.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { buildContainer } from '../shared/adapters/composition.ts';
import { LeaseProjections } from '../shared/core/mirror/projections.ts';
import { LeaseItemPresence, type LeaseChange } from '../shared/core/base/lease-change.ts';
import { formatAddress } from '../shared/core/ip/address.ts';
import { hostAt, parseCidr } from '../shared/core/ip/cidr.ts';
import { createPool } from '../shared/core/use-cases/pools.ts';
import { createRange } from '../shared/core/use-cases/ranges.ts';
import { Meter } from './lib/bench-client.ts';
import { Engine, Mode, openBench, strategyContext } from './lib/harness.ts';
import { round } from './lib/results.ts';
import { benchConfig } from './strategies/lease.ts';
import { prefillLeases } from './strategies/lease-items.ts';

const POOLS = 4;
const cidrOf = (pool: number) => `10.${pool}.0.0/18`;
const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { batches: { type: 'string', default: '20' }, out: { type: 'string' } } });
  const batches = Number(values.batches);
  const engine = await Engine.start();
  const rows: Record<string, unknown>[] = [];
  try {
    const bench = await openBench(engine, 'threshold', Mode.Raw);
    try {
      const config = benchConfig(bench.tableName);
      const setup = buildContainer(config, { client: bench.setupClient });
      const ranges: string[] = [];
      for (let p = 0; p < POOLS; p += 1) {
        await createPool(setup.deps, { name: `p${p}` });
        ranges.push((await createRange(setup.deps, { pool: `p${p}`, cidr: cidrOf(p) })).range.name);
      }
      const next = Array.from({ length: POOLS }, () => 1n);
      /** `count` new leases spread over the first `pools` pools, written as allocations write them; their changes. */
      const leases = async (count: number, pools: number, tag: string): Promise<LeaseChange[]> => {
        const changes: LeaseChange[] = [];
        for (let p = 0; p < pools; p += 1) {
          const share = Array.from({ length: count }, (_, i) => i % pools).filter((q) => q === p).length;
          const offsets = Array.from({ length: share }, () => (next[p]! += 1n));
          await prefillLeases(
            strategyContext(bench, cidrOf(p), `p${p}`),
            ranges[p]!,
            offsets,
            config.leaseIndexShards,
            `${tag}-${p}`,
          );
          const cidr = parseCidr(cidrOf(p));
          for (const offset of offsets)
            changes.push({
              id: String(changes.length),
              pool: `p${p}`,
              address: formatAddress({ family: cidr.family, value: hostAt(cidr, offset) }),
              state: LeaseItemPresence.Held,
            });
        }
        return changes;
      };
      const quiet = { announce: async () => undefined };
      for (const batchSize of [1, 10, 100]) {
        for (const pools of [1, 4]) {
          if (pools > batchSize) continue;
          const meters = { without: new Meter(), with: new Meter() };
          const shipped = (meter: Meter) =>
            buildContainer(config, { client: bench.extraClient(meter, 3), announcer: quiet });
          const withCheck = shipped(meters.with).mirror;
          const plain = shipped(meters.without);
          const withoutCheck = new LeaseProjections({
            summary: plain.mirror.summary,
            legacy: plain.mirror.legacy,
            history: plain.mirror.history,
            marks: plain.stores.history,
          });
          const ms = { without: [] as number[], with: [] as number[] };
          let crossings = 0;
          for (let b = 0; b < batches; b += 1) {
            for (const variant of b % 2 === 0 ? (['without', 'with'] as const) : (['with', 'without'] as const)) {
              const changes = await leases(batchSize, pools, `${variant}-${batchSize}-${pools}-${b}`);
              const start = performance.now();
              const result = await (variant === 'with' ? withCheck : withoutCheck).apply(changes);
              ms[variant].push(performance.now() - start);
              if (result.failed.length > 0) throw new Error(`${variant}: ${result.failed.length} changes failed`);
              crossings += result.exhaustion?.crossings.length ?? 0;
            }
          }
          const per = (meter: Meter) => {
            const u = meter.snapshot();
            return {
              requests: round(u.requests / batches, 2),
              readUnits: round(u.readUnits / batches, 2),
              itemsRead: round(u.itemsRead / batches, 2),
              writeUnits: round((u.writeUnits + u.indexWriteUnits) / batches, 2),
            };
          };
          for (const variant of ['without', 'with'] as const) {
            const row = {
              batchSize,
              pools,
              thresholds: variant === 'with',
              batches,
              ...per(meters[variant]),
              medianMs: round(median(ms[variant]), 1),
              crossings: variant === 'with' ? crossings : 0,
              operations: meters[variant].snapshot().operations,
            };
            rows.push(row);
            console.log(JSON.stringify(row));
          }
        }
      }
    } finally {
      await bench.close();
    }
  } finally {
    await engine.stop();
  }
  if (values.out) writeFileSync(values.out, `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`);
}

await main();
