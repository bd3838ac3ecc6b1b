import { leaseChangeOf } from '../../shared/adapters/dynamodb/stream-records.ts';
import type { LeaseChange } from '../../shared/core/base/lease-change.ts';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { buildContainer } from '../../shared/adapters/composition.ts';
import { bitmapToItem } from '../../shared/adapters/dynamodb/codec.ts';
import { leaseToItem } from '../../shared/adapters/dynamodb/codec.ts';
import { createMirrorHandler } from '../../shared/adapters/stream/mirror-handler.ts';
import { Bitmap, bitOf, legacyWindow } from '../../shared/core/bitmap/bitmap.ts';
import { parseAddress, formatAddress } from '../../shared/core/ip/address.ts';
import { hostAt, parseCidr } from '../../shared/core/ip/cidr.ts';
import { createPool } from '../../shared/core/use-cases/pools.ts';
import { createRange } from '../../shared/core/use-cases/ranges.ts';
import { Meter } from '../lib/bench-client.ts';
import { Mode, openBench, randomOffsets, strategyContext } from '../lib/harness.ts';
import { itemSize, writeUnits } from '../../aws-emulation/item-size.ts';
import { round, type RunContext, type Scenario, type ScenarioResult } from '../lib/results.ts';
import { lineChart } from '../../scripts/lib/svg.ts';
import { benchConfig } from '../strategies/lease.ts';
import { prefillLeases } from '../strategies/lease-items.ts';

/**
 * The stream mirror's cost per allocation for stream batch sizes 1, 10, 100, 1,000: N leases of a legacy range are
 * written (as lease-mode allocations write them), their INSERT records are fed to the stream function's handler in
 * batches of the given size, one batch at a time (parallelizationFactor 1), and the mirror's own client is metered.
 * Afterwards the bitmap must equal the leases.
 */
export const mirrorCostScenario: Scenario = {
  name: 'mirror-cost',
  title: 'Mirror cost',
  async run(ctx: RunContext): Promise<ScenarioResult> {
    const t0 = performance.now();
    const cidr = ctx.quick ? '10.0.0.0/22' : '10.0.0.0/16';
    // 1,000 leases would make the 1,000 batch a real one; 500 keep the run in its budget (that batch is then 500).
    const leases = ctx.quick ? 40 : 500;
    const batchSizes = [1, 10, 100, 1000];
    const parsed = parseCidr(cidr);
    const window = legacyWindow(parsed);
    const rows: Record<string, unknown>[] = [];
    const failures: string[] = [];
    for (const mode of [Mode.Raw, Mode.Limited]) {
      for (const batchSize of batchSizes) {
        const bench = await openBench(ctx.engine, 'mirror', mode);
        try {
          const sctx = strategyContext(bench, cidr);
          const config = benchConfig(bench.tableName);
          const setup = buildContainer(config, { client: bench.setupClient });
          await createPool(setup.deps, { name: sctx.pool });
          const { range } = await createRange(setup.deps, { pool: sctx.pool, cidr, legacy: true });
          await setup.stores.bitmaps.putBitmap({
            pool: sctx.pool,
            rangeName: range.name,
            allocation: { range: cidr, data: new Uint8Array(), version: 1 },
            expected: 'absent',
          });
          const offsets = randomOffsets(Number(window), leases).map(BigInt);
          await prefillLeases(sctx, range.name, offsets, config.leaseIndexShards, 'm');
          const records: DynamoDBRecord[] = offsets.map((offset, i) => {
            const address = formatAddress({ family: parsed.family, value: hostAt(parsed, offset) });
            const item = leaseToItem(
              {
                pool: sctx.pool,
                address,
                family: parsed.family,
                range: range.name,
                claim: `prefill-m-${i}`,
                claimUid: `prefill-m-${i}`,
                owner: { kind: 'Pod', name: 'bench-caller--1', uid: 'bench-caller--1' },
                createdAt: new Date().toISOString(),
              },
              config.leaseIndexShards,
            );
            // Lease images hold strings and numbers only, whose wire form is the same in the stream's types.
            const image = marshall(item, { removeUndefinedValues: true }) as NonNullable<
              DynamoDBRecord['dynamodb']
            >['NewImage'];
            return {
              eventName: 'INSERT',
              eventSource: 'aws:dynamodb',
              dynamodb: {
                SequenceNumber: String(1000 + i).padStart(21, '0'),
                Keys: { PK: { S: item.PK as string }, SK: { S: 'LEASE' } },
                NewImage: image,
                StreamViewType: 'NEW_AND_OLD_IMAGES',
              },
            };
          });
          const meter = new Meter();
          const mirrorClient = bench.extraClient(meter, 1);
          // The legacy bitmap's own cost (the summary's upkeep is measured with the lease strategies, whose cost it is).
          const handler = createMirrorHandler(
            () => buildContainer(config, { client: mirrorClient }).mirror.legacy,
            () => undefined,
          );
          let failedRecords = 0;
          const start = performance.now();
          for (let i = 0; i < records.length; i += batchSize) {
            const event: DynamoDBStreamEvent = { Records: records.slice(i, i + batchSize) };
            // A failed batch is retried by the event source mapping: do the same until it is through.
            for (let attempt = 0; ; attempt += 1) {
              const { batchItemFailures } = await handler(event);
              if (batchItemFailures.length === 0) break;
              failedRecords += batchItemFailures.length;
              if (attempt > 20) throw new Error(`mirror batch kept failing: ${batchItemFailures.length} records`);
              await new Promise((r) => setTimeout(r, 50 * (attempt + 1)));
            }
          }
          const seconds = (performance.now() - start) / 1000;
          const usage = meter.snapshot();
          // The occupancy summary's upkeep on the same records, on its own meter: the stream function's other half,
          // whose cost belongs to lease allocations.
          const summaryMeter = new Meter();
          const summary = buildContainer(config, { client: bench.extraClient(summaryMeter, 1) }).mirror.summary;
          const changes = records.map(leaseChangeOf).filter((c): c is LeaseChange => c !== undefined);
          for (let i = 0; i < changes.length; i += batchSize) {
            for (
              let attempt = 0;
              (await summary.apply(changes.slice(i, i + batchSize))).failed.length > 0;
              attempt += 1
            ) {
              if (attempt > 20) throw new Error('summary batch kept failing');
            }
          }
          const summaryUsage = summaryMeter.snapshot();
          const doc = await setup.stores.bitmaps.getBitmap(sctx.pool, range.name);
          const bits = doc ? Bitmap.decode(doc.data, window) : Bitmap.empty(window);
          const expected = new Set(offsets.map((o) => Number(o)));
          let mismatches = 0;
          for (const o of expected) if (!bits.has(o)) mismatches += 1;
          mismatches += Math.max(0, bits.count() - expected.size);
          const leaseBits = offsets.map((o) =>
            bitOf(parsed, parseAddress(formatAddress({ family: parsed.family, value: hostAt(parsed, o) })).value),
          );
          if (leaseBits.some((b) => b === undefined))
            failures.push(`mirror ${mode} batch ${batchSize}: a lease outside the bitmap window`);
          if (mismatches)
            failures.push(`mirror ${mode} batch ${batchSize}: bitmap differs from the leases in ${mismatches} bits`);
          const bitmapUnits = doc
            ? writeUnits(
                itemSize(
                  marshall(bitmapToItem({ pool: sctx.pool, rangeName: range.name, allocation: doc }), {
                    removeUndefinedValues: true,
                  }),
                ),
              )
            : 0;
          rows.push({
            mode,
            batchSize,
            leases,
            batches: Math.ceil(leases / batchSize),
            mirrorWriteUnitsPerAllocation: round(usage.writeUnits / leases, 4),
            summaryWriteUnitsPerAllocation: round((summaryUsage.writeUnits + summaryUsage.indexWriteUnits) / leases, 4),
            summaryReadUnitsPerAllocation: round(summaryUsage.readUnits / leases, 4),
            summaryRequestsPerAllocation: round(summaryUsage.requests / leases, 4),
            mirrorReadUnitsPerAllocation: round(usage.readUnits / leases, 4),
            mirrorRequestsPerAllocation: round(usage.requests / leases, 3),
            bitmapWriteUnits: bitmapUnits,
            goalWriteUnitsPerAllocation: round((1.2 * bitmapUnits) / Math.min(batchSize, leases), 4),
            bitmapEqualsLeases: mismatches === 0,
            failedRecords,
            throttled: usage.throttled,
            seconds: round(seconds, 2),
            operations: usage.operations,
          });
          ctx.log(
            `mirror ${mode} batch ${batchSize}: ${round(usage.writeUnits / leases, 4)} WCU/alloc (bitmap ${bitmapUnits} WCU), ${round(usage.requests / leases, 3)} req/alloc, equal=${mismatches === 0}`,
          );
        } finally {
          await bench.close();
        }
      }
    }
    const file = 'mirror-cost.svg';
    const title = 'Mirror write units per allocation vs stream batch size';
    await writeFile(
      join(ctx.resultsDir, file),
      lineChart({
        title,
        xLabel: 'stream batch size (log)',
        yLabel: 'write units per allocation (log)',
        logX: true,
        logY: true,
        series: [
          {
            name: 'mirror (raw)',
            points: rows
              .filter((r) => r.mode === Mode.Raw)
              .map((r) => [r.batchSize as number, r.mirrorWriteUnitsPerAllocation as number] as const),
          },
          {
            name: 'goal: 1.2 x bitmap / batch',
            points: rows
              .filter((r) => r.mode === Mode.Raw)
              .map((r) => [r.batchSize as number, r.goalWriteUnitsPerAllocation as number] as const),
          },
        ],
      }),
    );
    const notes = [
      `Legacy range ${cidr} (bitmap window ${window} bits); ${leases} lease INSERT records; batches fed one at a time to the stream function's handler.`,
    ];
    return {
      name: 'mirror-cost',
      title: 'Mirror cost',
      status: failures.length ? 'failed' : 'ok',
      failures,
      notes,
      parameters: { cidr, leases, batchSizes },
      rows,
      seconds: round((performance.now() - t0) / 1000, 1),
      charts: [{ file, title }],
    };
  },
};
