import { describe, expect, it } from 'vitest';
import { keys } from '../../shared/adapters/dynamodb/keys.ts';
import { addressOfBit, Bitmap, legacyWindow } from '../../shared/core/bitmap/bitmap.ts';
import { bitmapOf } from '../../shared/core/bitmap/legacy.ts';
import { formatAddress, parseAddress } from '../../shared/core/ip/address.ts';
import { parseCidr } from '../../shared/core/ip/cidr.ts';
import type { ReconcileStore } from '../../shared/core/use-cases/reconcile-ports.ts';
import { reconcile } from '../../shared/core/reconciler/reconcile.ts';
import { owner, reconcilerHarness, testSettings, type ReconcilerHarness } from '../support/reconciler.ts';

const CIDR = '10.0.0.0/24';

/** A pool with one legacy IPv4 range "legacy" (dual-write on; no mirror runs in these tests, so bitmaps are ours). */
async function legacyPool(env: Record<string, string> = {}): Promise<ReconcilerHarness> {
  const h = await reconcilerHarness({ env });
  await h.pool('p', [{ cidr: CIDR, name: 'legacy', legacy: true }]);
  return h;
}

/** Writes the bitmap of "legacy" holding exactly these addresses; returns its version. */
async function writeBitmap(h: ReconcilerHarness, addresses: readonly string[], version = 1): Promise<number> {
  const cidr = parseCidr(CIDR);
  const doc = await h.api.container.stores.bitmaps.getBitmap('p', 'legacy');
  const data = bitmapOf(
    cidr,
    addresses.map((a) => parseAddress(a).value),
  ).encode();
  const written = await h.api.container.stores.bitmaps.putBitmap({
    pool: 'p',
    rangeName: 'legacy',
    allocation: { range: CIDR, data, version: doc ? doc.version + 1 : version },
    expected: doc ? { version: doc.version } : 'absent',
  });
  expect(written).toBe('written');
  return doc ? doc.version + 1 : version;
}

/** The addresses the stored bitmap of "legacy" holds, and its version. */
async function bitmapHolds(h: ReconcilerHarness): Promise<{ version: number; addresses: string[] } | undefined> {
  const doc = await h.api.container.stores.bitmaps.getBitmap('p', 'legacy');
  if (!doc) return undefined;
  const cidr = parseCidr(doc.range);
  const bitmap = Bitmap.decode(doc.data, legacyWindow(cidr));
  return {
    version: doc.version,
    addresses: [...bitmap.setBits()].map((bit) =>
      formatAddress({ family: cidr.family, value: addressOfBit(cidr, bit) }),
    ),
  };
}

describe('Reconciler: row 8, bits missing from a legacy bitmap', () => {
  it("builds a missing bitmap from the range's leases, then leaves an unchanged range alone", async () => {
    // Prepare
    const h = await legacyPool();
    await h.claim('p', { name: 'a', owner: owner('a'), addresses: ['10.0.0.5'] });
    await h.claim('p', { name: 'b', owner: owner('b'), addresses: ['10.0.0.9'] });
    // Act (the sweep is off: a finished sweep cycle is a reason for a full check of its own, tested below)
    const first = await h.run({ settings: { sweepItems: 0 } });
    h.clock.advance(60_000);
    const second = await h.run({ settings: { sweepItems: 0 } });
    const afterCycle = await h.run({ settings: { sweepItems: 10 } });
    const third = await h.run({ settings: { sweepItems: 0 } });
    // Assess
    expect(first.repairs.BitmapRepaired).toBe(1);
    expect(first.bitmapsChecked).toBe(1);
    expect(await bitmapHolds(h)).toEqual({ version: 1, addresses: ['10.0.0.5', '10.0.0.9'] });
    expect(second.bitmapsChecked).toBe(0);
    expect(second.repairs.BitmapRepaired).toBe(0);
    expect(afterCycle.sweep.cycleCompleted).toBe(true);
    expect(third.bitmapsChecked).toBe(1);
    expect(third.repairs.BitmapRepaired).toBe(0);
    const [event] = await h.events('p');
    expect(event).toMatchObject({ reason: 'BitmapRepaired', object: 'bitmap/legacy' });
    expect(event!.message).toContain('was missing');
  });

  it('writes the empty bitmap of a legacy range without leases, with no event', async () => {
    const h = await legacyPool();
    const report = await h.run();
    expect(report.repairs.BitmapRepaired).toBe(0);
    expect(await bitmapHolds(h)).toEqual({ version: 1, addresses: [] });
    expect(await h.events('p')).toEqual([]);
  });

  it('sets the bit of a lease the bitmap misses at once, in the first run that sees it', async () => {
    const h = await legacyPool();
    await h.claim('p', { name: 'a', owner: owner('a'), addresses: ['10.0.0.5'] });
    await h.claim('p', { name: 'b', owner: owner('b'), addresses: ['10.0.0.9'] });
    await writeBitmap(h, ['10.0.0.5']);
    const report = await h.run();
    expect(report.repairs.BitmapRepaired).toBe(1);
    expect(await bitmapHolds(h)).toEqual({ version: 2, addresses: ['10.0.0.5', '10.0.0.9'] });
    expect((await h.events('p'))[0]!.message).toContain('10.0.0.9');
  });

  it('scans a quiet range again when a new count disagrees with its bitmap (a lease the mirror never applied)', async () => {
    const h = await legacyPool();
    await h.claim('p', { name: 'a', owner: owner('a'), addresses: ['10.0.0.5'] });
    await h.run({ settings: { sweepItems: 0 } });
    h.clock.advance(1_000);
    expect((await h.run({ settings: { sweepItems: 0 } })).bitmapsChecked).toBe(0);
    // A lease written behind the mirror's back (nothing moves the bitmap's version).
    await h.claim('p', { name: 'b', owner: owner('b'), addresses: ['10.0.0.6'] });
    h.clock.advance(1_000);
    const report = await h.run({ settings: { sweepItems: 0 } });
    expect(report.bitmapsChecked).toBe(1);
    expect(report.repairs.BitmapRepaired).toBe(1);
    expect(await bitmapHolds(h)).toMatchObject({ addresses: ['10.0.0.5', '10.0.0.6'] });
  });

  it('does not rescan a range only because the mirror moved its version', async () => {
    const h = await legacyPool();
    await h.claim('p', { name: 'a', owner: owner('a'), addresses: ['10.0.0.5'] });
    await h.run({ settings: { sweepItems: 0 } });
    h.clock.advance(1_000);
    await writeBitmap(h, ['10.0.0.5']); // a mirror write: same bits, next version
    const report = await h.run({ settings: { sweepItems: 0 } });
    expect(report.bitmapsChecked).toBe(0);
  });

  it("scans a big window within the run's budget and continues where it stopped", async () => {
    // Prepare: a legacy /19 (two spans of 4,096 bits); the lease of the second span has no bit.
    const h = await reconcilerHarness();
    await h.pool('p', [{ cidr: '10.0.0.0/19', name: 'legacy', legacy: true }]);
    await h.claim('p', { name: 'a', owner: owner('a'), addresses: ['10.0.0.5'] });
    await h.claim('p', { name: 'b', owner: owner('b'), addresses: ['10.0.16.5'] });
    const data = bitmapOf(parseCidr('10.0.0.0/19'), [parseAddress('10.0.0.5').value]).encode();
    await h.api.container.stores.bitmaps.putBitmap({
      pool: 'p',
      rangeName: 'legacy',
      allocation: { range: '10.0.0.0/19', data, version: 1 },
      expected: 'absent',
    });
    // Act: one index item of budget per run: one span per run.
    const first = await h.run({ settings: { countItems: 1, sweepItems: 0 } });
    const between = await h.get(keys.strikes('p', 'legacy'));
    h.clock.advance(1_000);
    const second = await h.run({ settings: { countItems: 1, sweepItems: 0 } });
    // Assess
    expect(first.bitmapsChecked).toBe(1);
    expect(first.repairs.BitmapRepaired).toBe(0);
    expect(between).toMatchObject({ checking: { offset: 4096 } });
    expect(second.repairs.BitmapRepaired).toBe(1);
    expect((await h.get(keys.strikes('p', 'legacy')))!.checking).toBeUndefined();
    const doc = await h.api.container.stores.bitmaps.getBitmap('p', 'legacy');
    const bits = [...Bitmap.decode(doc!.data, legacyWindow(parseCidr('10.0.0.0/19'))).setBits()];
    expect(bits).toEqual([4, 16 * 256 + 4]);
  });
});

describe('Reconciler: row 9, leaked bits', () => {
  it('clears a bit with no lease only at the third consecutive run that sees it (BitmapLeakCleared)', async () => {
    // Prepare: the bitmap holds .7, which no lease backs.
    const h = await legacyPool();
    await h.claim('p', { name: 'a', owner: owner('a'), addresses: ['10.0.0.5'] });
    await writeBitmap(h, ['10.0.0.5', '10.0.0.7']);
    // Act
    const runs = [];
    for (let i = 0; i < 3; i += 1) {
      runs.push(await h.run());
      h.clock.advance(60_000);
    }
    // Assess
    expect(runs.map((r) => r.repairs.BitmapLeakCleared)).toEqual([0, 0, 1]);
    expect(await bitmapHolds(h)).toEqual({ version: 2, addresses: ['10.0.0.5'] });
    expect(await h.get(keys.strikes('p', 'legacy'))).toMatchObject({ strikes: {} });
    const [event] = await h.events('p');
    expect(event).toMatchObject({ reason: 'BitmapLeakCleared', object: 'bitmap/legacy' });
    expect(event!.message).toContain('10.0.0.7');
  });

  it('forgets the strikes of a bit whose lease appears before the third run', async () => {
    const h = await legacyPool();
    await writeBitmap(h, ['10.0.0.7']);
    await h.run();
    h.clock.advance(60_000);
    await h.run();
    expect(await h.get(keys.strikes('p', 'legacy'))).toMatchObject({ strikes: { '6': 2 } });
    h.clock.advance(60_000);
    await h.claim('p', { name: 'late', owner: owner('l'), addresses: ['10.0.0.7'] });
    const third = await h.run();
    expect(third.repairs.BitmapLeakCleared).toBe(0);
    expect(await bitmapHolds(h)).toMatchObject({ addresses: ['10.0.0.7'] });
    expect(await h.get(keys.strikes('p', 'legacy'))).toMatchObject({ strikes: {} });
  });

  it('never undoes an allocation that lands between the third look and the clear (allocation vs leak cleanup)', async () => {
    // Prepare: two strikes already.
    const h = await legacyPool();
    await writeBitmap(h, ['10.0.0.7']);
    await h.run();
    h.clock.advance(60_000);
    await h.run();
    h.clock.advance(60_000);
    // Act: the owner of a new claim takes .7 just before the reconciler's conditional clear.
    let allocated = 0;
    const report = await h.run({
      wrap: (store) =>
        Object.assign(Object.create(store) as ReconcileStore, {
          repairBitmap: async (...args: Parameters<ReconcileStore['repairBitmap']>) => {
            if (allocated === 0)
              allocated = (
                await h.api.call('POST', '/v1/pools/p/claims', {
                  name: 'fresh',
                  owner: owner('f'),
                  addresses: ['10.0.0.7'],
                })
              ).status;
            return store.repairBitmap(...args);
          },
        }),
    });
    // Assess: the clear was refused as a whole; the bit and the fresh lease both stand.
    expect(allocated).toBe(201);
    expect(report.repairs.BitmapLeakCleared).toBe(0);
    expect(await bitmapHolds(h)).toMatchObject({ addresses: ['10.0.0.7'] });
    expect(await h.get(keys.lease('p', '10.0.0.7'))).toMatchObject({ claim: 'fresh' });
    expect(await h.events('p')).toEqual([]);
  });

  it('counts one strike for two runs at once', async () => {
    const h = await legacyPool();
    await writeBitmap(h, ['10.0.0.7']);
    const other = h.api.sibling({ clock: h.clock, viewMaxAgeMs: 0 });
    await Promise.all([
      h.run(),
      reconcile({ ...other.container.deps, settings: testSettings }, { deadlineMs: h.clock.t + 60_000 }),
    ]);
    expect(await h.get(keys.strikes('p', 'legacy'))).toMatchObject({ strikes: { '6': 1 } });
    h.clock.advance(60_000);
    await h.run();
    h.clock.advance(60_000);
    expect((await h.run()).repairs.BitmapLeakCleared).toBe(1);
  });
});

describe('Reconciler: row 10, dual-write off', () => {
  it('deletes the bitmap items of legacy ranges when DisableAllocatorDualWrite=true (BitmapRemoved)', async () => {
    const h = await legacyPool({ FEATURE_GATES: 'MultiCIDRServiceAllocator=true,DisableAllocatorDualWrite=true' });
    await writeBitmap(h, ['10.0.0.7']);
    const first = await h.run();
    const second = await h.run();
    expect(first.repairs.BitmapRemoved).toBe(1);
    expect(second.repairs.BitmapRemoved).toBe(0);
    expect(await bitmapHolds(h)).toBeUndefined();
    expect(await h.events('p')).toEqual([
      expect.objectContaining({ reason: 'BitmapRemoved', object: 'bitmap/legacy' }),
    ]);
  });

  it('keeps the bitmaps in legacy mode, where they allocate, whatever DisableAllocatorDualWrite says', async () => {
    const h = await legacyPool({ FEATURE_GATES: 'MultiCIDRServiceAllocator=false,DisableAllocatorDualWrite=true' });
    const c = await h.claim('p', { name: 'a', owner: owner('a') });
    const report = await h.run();
    expect(report.repairs.BitmapRemoved).toBe(0);
    expect(await bitmapHolds(h)).toMatchObject({ addresses: [c.addresses[0]!.address] });
  });
});
