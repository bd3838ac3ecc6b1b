import { describe, expect, it } from 'vitest';
import { keys } from '../../shared/adapters/dynamodb/keys.ts';
import type { TableCall } from '../../shared/adapters/memory/memory-table.ts';
import { EXPIRY_CHECKPOINT } from '../../shared/core/reconciler/reconcile.ts';
import { expiredWebUnderFaults, owner, recordingPause } from '../support/reconciler.ts';

/** A read's first try and its five retries (RETRIES.read). */
const EVERY_TRY = 6;

/** The read of the expiry checkpoint. */
const expiryCheckpointRead = (call: TableCall) => {
  const key = keys.checkpoint(EXPIRY_CHECKPOINT);
  return call.method === 'get' && call.keys.some((k) => k.PK === key.PK && k.SK === key.SK);
};

/** A page of the pools listing (listPoolViews). */
const poolsListing = (call: TableCall) =>
  call.method === 'query' && call.query?.index === 'GSI1' && call.query.partition === keys.poolsListing();

/** The first read of each expiry index bucket (every bucket a run reads is throttled once). */
function firstReadOfEachBucket(): (call: TableCall) => boolean {
  const seen = new Set<string>();
  return (call) => {
    if (call.method !== 'query' || call.query?.index !== 'GSI3' || seen.has(call.query.partition)) return false;
    seen.add(call.query.partition);
    return true;
  };
}

describe("Reconciler: a phase's read that fails transiently is retried, and one that keeps failing ends only its phase", () => {
  it('releases an expired claim in the same run when the first read of every expiry bucket was throttled (row 1)', async () => {
    // Prepare
    const { faults, h } = await expiredWebUnderFaults();
    // One matcher for every planned throttle: each bucket's first query takes one.
    const firstRead = firstReadOfEachBucket();
    faults.plan({ kind: 'throttle' }, firstRead, 1000);
    // Act: no sweep, so only the expiry phase can release it.
    const report = await h.run({ settings: { sweepItems: 0 } });
    // Assess
    expect(report.errors).toEqual([]);
    expect(report.repairs.ClaimExpired).toBe(1);
    expect(await h.get(keys.claim('p', 'web'))).toBeUndefined();
  });

  it('releases an expired claim in the same run when the expiry checkpoint read was throttled five times, waiting longer each time', async () => {
    // Prepare
    const { faults, h } = await expiredWebUnderFaults();
    faults.plan({ kind: 'throttle' }, expiryCheckpointRead, EVERY_TRY - 1);
    const { waits, pause } = recordingPause(h.clock);
    // Act
    const report = await h.run({ settings: { sweepItems: 0 }, pause });
    // Assess: waits of 100-200, 200-400, 400-800, 800-1600 and 1600-3200 ms.
    expect(waits).toHaveLength(5);
    waits.forEach((ms, i) => {
      expect(ms).toBeGreaterThanOrEqual(100 * 2 ** i);
      expect(ms).toBeLessThanOrEqual(200 * 2 ** i);
    });
    expect(report.errors).toEqual([]);
    expect(report.repairs.ClaimExpired).toBe(1);
    expect(await h.get(keys.claim('p', 'web'))).toBeUndefined();
  });

  it('ends the expiry phase when its checkpoint cannot be read, and the sweep still releases the claim in that run', async () => {
    // Prepare
    const { faults, h } = await expiredWebUnderFaults();
    faults.plan({ kind: 'throttle' }, expiryCheckpointRead, EVERY_TRY);
    // Act
    const report = await h.run();
    // Assess
    expect(report.errors).toEqual([expect.stringMatching(/^read expiry checkpoint: NotReadyError/)]);
    expect(report.expiry).toEqual({ hoursRead: 0 });
    expect(report.complete).toBe(true);
    expect(report.repairs.ClaimExpired).toBe(1);
    expect(await h.get(keys.claim('p', 'web'))).toBeUndefined();
  });

  it('finishes the other phases and reports the error, without throwing, when the pool listing keeps failing', async () => {
    // Prepare
    const { faults, h } = await expiredWebUnderFaults((h) => h.claim('p', { name: 'db', owner: owner('b') }));
    faults.plan({ kind: 'throttle' }, poolsListing, EVERY_TRY);
    // Act
    const report = await h.run();
    // Assess: expiry ran before the listing; the sweep ran after it (without row 13, which needs the pools' ranges).
    expect(report.errors).toEqual([expect.stringMatching(/^list pools: NotReadyError/)]);
    expect(report.complete).toBe(true);
    expect(report.repairs.ClaimExpired).toBe(1);
    expect(await h.get(keys.claim('p', 'web'))).toBeUndefined();
    expect(report.utilization).toEqual([]);
    expect(report.sweep.checked).toBeGreaterThan(0);
    expect(await h.get(keys.claim('p', 'db'))).toBeDefined();
  });
});
