import { describe, expect, it } from 'vitest';
import { keys } from '../../shared/adapters/dynamodb/keys.ts';
import type { TableCall } from '../../shared/adapters/memory/memory-table.ts';
import { plannedFaults } from '../support/planned-faults.ts';
import { expiredWebUnderFaults, owner, reconcilerHarness, recordingPause } from '../support/reconciler.ts';

/** The release transaction of a claim: it deletes the claim item. */
const releasing = (pool: string, name: string) => {
  const key = keys.claim(pool, name);
  return (call: TableCall) =>
    call.method === 'transact' &&
    (call.ops ?? []).some((op) => op.kind === 'delete' && op.key.PK === key.PK && op.key.SK === key.SK);
};

describe('Reconciler: a repair whose write failed transiently is retried within the run (Run.repair)', () => {
  it('releases an expired claim in the same run when its release write timed out without committing (row 1)', async () => {
    // Prepare
    const { faults, h, web } = await expiredWebUnderFaults();
    faults.plan({ kind: 'timeout', committed: false }, releasing('p', 'web'));
    // Act
    const report = await h.run({ settings: { sweepItems: 0 } });
    // Assess
    expect(report.errors).toEqual([]);
    expect(report.repairs.ClaimExpired).toBe(1);
    expect(await h.get(keys.claim('p', 'web'))).toBeUndefined();
    expect(await h.get(keys.lease('p', web.addresses[0]!.address))).toBeUndefined();
    expect((await h.events('p')).map((e) => [e.reason, e.object])).toEqual([['ClaimExpired', 'claim/web']]);
  });

  it('counts a retry that finds the claim released by its own timed-out write (which committed) as done: no error, no second event', async () => {
    // Prepare
    const { faults, h } = await expiredWebUnderFaults();
    faults.plan({ kind: 'timeout', committed: true }, releasing('p', 'web'));
    // Act
    const report = await h.run({ settings: { sweepItems: 0 } });
    // Assess: the committed write is not seen (the repair is not counted), but nothing is left and one event exists.
    expect(report.errors).toEqual([]);
    expect(report.repairs.ClaimExpired).toBe(0);
    expect(await h.get(keys.claim('p', 'web'))).toBeUndefined();
    expect((await h.events('p')).map((e) => [e.reason, e.object])).toEqual([['ClaimExpired', 'claim/web']]);
  });

  it("releases a gone owner's claim in the same run when its release was throttled (row 2)", async () => {
    // Prepare: the report's own release is throttled (503), so the claim is left to the reconciler's recheck.
    const faults = plannedFaults();
    const h = await reconcilerHarness({ engine: faults.engine });
    await h.pool('p', ['10.0.0.0/24']);
    await h.claim('p', { name: 'a1', owner: owner('A') });
    faults.plan({ kind: 'throttle' }, releasing('p', 'a1'));
    expect(await h.api.call('DELETE', '/v1/pools/p/owners/A')).toMatchObject({ status: 503 });
    h.clock.advance(1_000);
    faults.plan({ kind: 'throttle' }, releasing('p', 'a1'));
    // Act
    const report = await h.run();
    // Assess
    expect(report.errors).toEqual([]);
    expect(report.repairs.OwnerReleased).toBe(1);
    expect(await h.get(keys.claim('p', 'a1'))).toBeUndefined();
    expect((await h.events('p')).map((e) => [e.reason, e.object])).toEqual([['OwnerReleased', 'claim/a1']]);
  });

  it('gives up after two retries, each after a longer wait, and leaves the claim to the next run', async () => {
    // Prepare: three throttles in a row.
    const { faults, h } = await expiredWebUnderFaults();
    faults.plan({ kind: 'throttle' }, releasing('p', 'web'), 3);
    const { waits, pause } = recordingPause(h.clock);
    // Act
    const first = await h.run({ settings: { sweepItems: 0 }, pause });
    // Assess
    expect(waits).toHaveLength(2);
    expect(waits[0]).toBeGreaterThanOrEqual(100);
    expect(waits[0]).toBeLessThanOrEqual(200);
    expect(waits[1]).toBeGreaterThanOrEqual(200);
    expect(waits[1]).toBeLessThanOrEqual(400);
    expect(first.errors).toEqual([expect.stringMatching(/^release expired claim p\/web: NotReadyError/)]);
    expect(await h.get(keys.claim('p', 'web'))).toBeDefined();
    // The next run releases it.
    h.clock.advance(20_000);
    expect((await h.run({ settings: { sweepItems: 0 }, pause })).repairs.ClaimExpired).toBe(1);
  });

  it("does not retry when the backoff would end past the run's deadline", async () => {
    // Prepare
    const { faults, h } = await expiredWebUnderFaults();
    faults.plan({ kind: 'throttle' }, releasing('p', 'web'));
    const waits: number[] = [];
    // Act: 50 ms left, less than the shortest wait (100 ms).
    const report = await h.run({
      settings: { sweepItems: 0 },
      deadlineMs: h.clock.t + 50,
      pause: async (ms) => void waits.push(ms),
    });
    // Assess
    expect(waits).toEqual([]);
    expect(report.errors).toEqual([expect.stringMatching(/^release expired claim p\/web: NotReadyError/)]);
    expect(await h.get(keys.claim('p', 'web'))).toBeDefined();
  });

  it('saves the expiry checkpoint in the same run when its single write met a transaction conflict (issue 20)', async () => {
    // Prepare: the checkpoint's PutItem meets a transaction holding the item once
    const { faults, h } = await expiredWebUnderFaults();
    faults.plan(
      { kind: 'conflict' },
      (call) => call.method === 'write' && call.keys.some((k) => k.PK === 'RECONCILER'),
    );
    const { waits, pause } = recordingPause(h.clock);
    // Act
    const report = await h.run({ settings: { sweepItems: 0 }, pause });
    // Assess: retried after one wait, as a throttle is
    expect(report.errors).toEqual([]);
    expect(waits).toHaveLength(1);
    expect(report.repairs.ClaimExpired).toBe(1);
  });
});

describe("Reconciler: a read inside one item's work that failed transiently is retried within the run (issue 20)", () => {
  it('counts a range in the same run when its count slice was throttled once', async () => {
    // Prepare
    const { faults, h } = await expiredWebUnderFaults();
    faults.plan({ kind: 'throttle' }, (call) => call.method === 'query' && call.query?.countOnly === true);
    const { waits, pause } = recordingPause(h.clock);
    // Act
    const report = await h.run({ settings: { sweepItems: 0 }, pause });
    // Assess
    expect(report.errors).toEqual([]);
    expect(waits).toHaveLength(1);
  });
});
