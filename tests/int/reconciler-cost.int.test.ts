import { FollowedTable } from '../support/stream-follower.ts';
import { SdkTable } from '../../shared/adapters/dynamodb/sdk-table.ts';
import { describe, expect, it } from 'vitest';
import { BatchWriteItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { claimToItem, leaseToItem } from '../../shared/adapters/dynamodb/codec.ts';
import { createDynamoClient } from '../../shared/adapters/dynamodb/client.ts';
import type { ReconcileStore } from '../../shared/core/use-cases/reconcile-ports.ts';
import { reconcile, type ReconcileReport } from '../../shared/core/reconciler/reconcile.ts';
import { claimOf, leaseOf, reconcilerHarness, T0, testSettings } from '../support/reconciler.ts';

/** Counts the items every request read: Query's ScannedCount (COUNT queries included), GetItem, BatchGetItem. */
function countingClient(endpoint: string): { client: DynamoDBClient; read: () => number } {
  const client = createDynamoClient({ endpoint, maxAttempts: 1 });
  let read = 0;
  client.middlewareStack.add(
    (next) => async (args) => {
      const out = await next(args);
      const o = out.output as { ScannedCount?: number; Item?: unknown; Responses?: Record<string, unknown[]> };
      if (typeof o.ScannedCount === 'number') read += o.ScannedCount;
      else if (o.Item) read += 1;
      else if (o.Responses) read += Object.values(o.Responses).reduce((n, items) => n + items.length, 0);
      return out;
    },
    { step: 'initialize', name: 'countItemsRead' },
  );
  return { client, read: () => read };
}

async function batchWrite(client: DynamoDBClient, table: string, items: Record<string, unknown>[]): Promise<void> {
  const chunks: Record<string, unknown>[][] = [];
  for (let i = 0; i < items.length; i += 25) chunks.push(items.slice(i, i + 25));
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < chunks.length) {
        let pending = chunks[next++]!.map((item) => ({
          PutRequest: { Item: marshall(item, { removeUndefinedValues: true, convertClassInstanceToMap: false }) },
        }));
        while (pending.length) {
          const out = await client.send(new BatchWriteItemCommand({ RequestItems: { [table]: pending } }));
          pending = (out.UnprocessedItems?.[table] ?? []) as typeof pending;
        }
      }
    }),
  );
}

const addressOf = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;

interface Figures {
  live: number;
  expiryReads: number;
  totalReads: number;
  report: ReconcileReport;
}

/**
 * 100 claims that expired over the last ten minutes and `live` claims expiring over the next two hours, each with its
 * lease: all share the same hour buckets of the expiry index, and the live leases fill the range utilization counts.
 * Returns the items one reconciler run read, in its expiry phase and in total.
 */
async function measure(live: number): Promise<Figures> {
  const h = await reconcilerHarness();
  await h.pool('p', [{ cidr: '10.0.0.0/8', name: 'r' }]);
  const shards = h.api.container.config.leaseIndexShards;
  const items: Record<string, unknown>[] = [];
  const add = (i: number, expiresAt: number) => {
    const name = `c${i}`;
    items.push(
      claimToItem(
        claimOf('p', name, `uid-${i}`, [{ address: addressOf(i + 1), range: 'r' }], T0 - 3600_000, expiresAt),
        shards,
      ),
    );
    items.push(leaseToItem(leaseOf('p', addressOf(i + 1), 'r', name, `uid-${i}`, T0 - 3600_000, expiresAt), shards));
  };
  for (let i = 0; i < 100; i += 1) add(i, T0 - 31_000 - i * 5_000);
  for (let i = 100; i < 100 + live; i += 1) add(i, T0 + 1_000 + (i % 7200) * 1_000);
  // Written behind the stream's back: this test counts the reconciler's reads, not the summary's.
  await batchWrite(((h.table as FollowedTable).inner as SdkTable).client, h.table.name, items);
  // A run in a container whose client counts what it reads; the expiry phase ends where the pools are listed.
  const counting = countingClient(h.api.endpoint);
  const other = h.api.sibling({ client: counting.client, clock: h.clock, viewMaxAgeMs: 0 });
  let expiryReads = -1;
  const marking = (store: ReconcileStore): ReconcileStore =>
    Object.assign(Object.create(store) as ReconcileStore, {
      listPoolViews: () => {
        if (expiryReads < 0) expiryReads = counting.read();
        return store.listPoolViews();
      },
    });
  const deps = {
    ...other.container.deps,
    reconcile: marking(other.container.deps.reconcile),
    settings: { ...testSettings, sweepItems: 200, countItems: 1000 },
  };
  const report = await reconcile(deps, { deadlineMs: h.clock.t + 600_000 });
  return { live, expiryReads, totalReads: counting.read(), report };
}

describe('Reconciler: cost follows the work', () => {
  it('reads about the same for 100 expired claims among 1,000 as among 10,000', { timeout: 180_000 }, async () => {
    // Act
    const small = await measure(1_000);
    const large = await measure(10_000);
    console.log(
      JSON.stringify({
        expiredClaims: 100,
        runs: [small, large].map((f) => ({
          liveClaims: f.live,
          itemsReadInExpiryPhase: f.expiryReads,
          itemsReadInRun: f.totalReads,
          sweepChecked: f.report.sweep.checked,
        })),
      }),
    );
    // Assess: every expired claim was released, the run was complete, and nothing failed.
    for (const f of [small, large]) {
      expect(f.report.repairs.ClaimExpired).toBe(100);
      expect(f.report.complete).toBe(true);
      expect(f.report.errors).toEqual([]);
    }
    // The expiry phase reads on the order of the expired claims (an index entry, the claim and its lease each,
    // plus the lease's own index entry), and the same for ten times the live claims.
    expect(small.expiryReads).toBeLessThan(100 * 6);
    expect(large.expiryReads).toBeLessThanOrEqual(small.expiryReads * 1.1);
    // The whole run adds fixed budgets, not the table: the sweep's slice (200 items and what they point at) and
    // utilization's count (1,000 lease index items; a bigger range's count continues in the next runs).
    expect(small.totalReads - small.expiryReads).toBeLessThan(200 * 3 + 1000 + 100);
    expect(large.totalReads).toBeLessThanOrEqual(small.totalReads * 1.1);
  });
});
