import { describe, expect, it } from 'vitest';
import { expiryIndex } from '../../shared/adapters/dynamodb/codec.ts';
import { keys } from '../../shared/adapters/dynamodb/keys.ts';
import { EventReason } from '../../shared/core/use-cases/reconcile-ports.ts';
import type { ReconcileReport } from '../../shared/core/reconciler/reconcile.ts';
import { claimOf, leaseOf, owner, reconcilerHarness, T0 } from '../support/reconciler.ts';

const MIN = 60_000;

describe('Reconciler: row 1, expired claims (found through the expiry index)', () => {
  it('releases a claim expired more than the grace ago, with its leases, and records ClaimExpired', async () => {
    // Prepare
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    const gone = await h.claim('p', { name: 'gone', owner: owner('a'), ttlSeconds: 60 });
    const kept = await h.claim('p', { name: 'kept', owner: owner('b'), ttlSeconds: 600 });
    h.clock.advance(60_000 + 30_000 + 1);
    // Act: the sweep is off, so only the expiry index can find it.
    const report = await h.run({ settings: { sweepItems: 0 } });
    // Assess
    expect(report.repairs.ClaimExpired).toBe(1);
    expect(await h.get(keys.claim('p', 'gone'))).toBeUndefined();
    expect(await h.get(keys.lease('p', gone.addresses[0]!.address))).toBeUndefined();
    expect(await h.get(keys.claim('p', 'kept'))).toBeDefined();
    expect(await h.get(keys.lease('p', kept.addresses[0]!.address))).toBeDefined();
    const events = await h.events('p');
    expect(events).toEqual([
      expect.objectContaining({ reason: 'ClaimExpired', object: 'claim/gone', time: h.clock.iso() }),
    ]);
    expect(events[0]!.message).toContain(gone.addresses[0]!.address);
  });

  it('leaves a claim alone within the grace after its expiry', async () => {
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    await h.claim('p', { name: 'c', owner: owner('a'), ttlSeconds: 60 });
    h.clock.advance(60_000 + 29_000);
    const report = await h.run({ settings: { sweepItems: 0 } });
    expect(report.repairs.ClaimExpired).toBe(0);
    expect(await h.get(keys.claim('p', 'c'))).toBeDefined();
  });

  it('releases the generateName marker with the claim, so the owner can make a new one', async () => {
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    const made = await h.claim('p', { generateName: 'web-', owner: owner('a'), ttlSeconds: 60 });
    h.clock.advance(91_000);
    await h.run({ settings: { sweepItems: 0 } });
    expect(await h.get(keys.claim('p', made.name))).toBeUndefined();
    expect(await h.get(keys.generated('p', 'a', 'web-'))).toBeUndefined();
  });

  it('reads buckets from its checkpoint across hours, and moves the checkpoint only past drained hours', async () => {
    // Prepare: a reconciler that never ran, and claims expiring in three different hours.
    const h = await reconcilerHarness({ ranBefore: false });
    await h.pool('p', ['10.0.0.0/24']);
    await h.claim('p', { name: 'h0', owner: owner('a'), ttlSeconds: 60 });
    await h.claim('p', { name: 'h1', owner: owner('b'), ttlSeconds: 3600 });
    await h.claim('p', { name: 'h2', owner: owner('c'), ttlSeconds: 7200 });
    // Act 1: in hour 0, only h0 is due.
    h.clock.advance(2 * MIN);
    const first = await h.run({ settings: { sweepItems: 0 } });
    // Act 2: two hours later, h1 and h2 are due; the run starts at the checkpoint, not 48 hours back.
    h.clock.advance(2 * 3600_000);
    const second = await h.run({ settings: { sweepItems: 0 } });
    // Assess
    expect(first.repairs.ClaimExpired).toBe(1);
    expect(first.expiry.hoursRead).toBe(49); // the first run looks back 48 hours
    expect(second.repairs.ClaimExpired).toBe(2);
    expect(second.expiry.hoursRead).toBe(3);
    expect(second.expiry.checkpointHour).toBe(Math.floor((h.clock.t - 30_000 - 60_000) / 3600_000));
    expect((await h.events('p')).map((e) => e.object).sort()).toEqual(['claim/h0', 'claim/h1', 'claim/h2']);
  });

  it("moves a renewed claim's leases to the new expiry bucket (so the lease index is never stale)", async () => {
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    const c = await h.claim('p', { name: 'c', owner: owner('a'), ttlSeconds: 60 });
    h.clock.advance(2 * 3600_000);
    expect((await h.api.call('POST', '/v1/pools/p/claims/c/renew', {})).status).toBe(200);
    const address = c.addresses[0]!.address;
    const lease = await h.get(keys.lease('p', address));
    expect(lease).toMatchObject({ expiresAt: h.clock.t + 60_000, ...expiryIndex('p', address, h.clock.t + 60_000) });
    expect(lease!.GSI3SK).toBe(`${String(h.clock.t + 60_000).padStart(15, '0')}#p#${address}`);
  });
});

describe('Reconciler: rows 3-5, orphaned and wrong leases', () => {
  it('releases a lease whose claim is gone once it is older than the grace, never younger (LeaseOrphaned)', async () => {
    // Prepare: two orphans without TTL, one old and one young (only the sweep can find leases without TTL).
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    await h.putLease(leaseOf('p', '10.0.0.5', '10.0.0.0-24', 'ghost', 'uid-ghost', T0 - 61_000));
    await h.putLease(leaseOf('p', '10.0.0.6', '10.0.0.0-24', 'ghost2', 'uid-ghost2', T0 - 59_000));
    // Act
    const report = await h.run();
    // Assess
    expect(report.repairs.LeaseOrphaned).toBe(1);
    expect(await h.get(keys.lease('p', '10.0.0.5'))).toBeUndefined();
    expect(await h.get(keys.lease('p', '10.0.0.6'))).toBeDefined();
    expect(await h.events('p')).toEqual([
      expect.objectContaining({ reason: 'LeaseOrphaned', object: 'lease/10.0.0.5' }),
    ]);
    // Two seconds later the young one is old enough.
    h.clock.advance(2_000);
    expect((await h.run()).repairs.LeaseOrphaned).toBe(1);
    expect(await h.get(keys.lease('p', '10.0.0.6'))).toBeUndefined();
  });

  it('releases a lease held by another incarnation of its claim (same name, other uid)', async () => {
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    const c = await h.claim('p', { name: 'web', owner: owner('a'), addresses: ['10.0.0.9'] });
    await h.putLease(leaseOf('p', '10.0.0.20', '10.0.0.0-24', 'web', 'old-incarnation', T0 - 120_000));
    const report = await h.run();
    expect(report.repairs.LeaseOrphaned).toBe(1);
    expect(await h.get(keys.lease('p', '10.0.0.20'))).toBeUndefined();
    expect((await h.get(keys.lease('p', '10.0.0.9')))!.claimUid).toBe(c.uid);
    expect((await h.events('p'))[0]!.message).toContain('another uid');
  });

  it('releases a lease whose claim (same uid) does not list its address', async () => {
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    const c = await h.claim('p', { name: 'web', owner: owner('a'), addresses: ['10.0.0.9'] });
    await h.putLease(leaseOf('p', '10.0.0.21', '10.0.0.0-24', 'web', c.uid, T0 - 120_000));
    const report = await h.run();
    expect(report.repairs.LeaseOrphaned).toBe(1);
    expect(await h.get(keys.lease('p', '10.0.0.21'))).toBeUndefined();
    expect(await h.get(keys.lease('p', '10.0.0.9'))).toBeDefined();
    expect((await h.events('p'))[0]!.message).toContain('does not list');
  });

  it('finds expired orphans through the lease expiry index, with the sweep off', async () => {
    // Prepare: a claim was made again over its expired self (another uid, another address); the old lease is left.
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    await h.claim('p', { name: 'web', owner: owner('a'), addresses: ['10.0.0.30'], ttlSeconds: 60 });
    h.clock.advance(61_000);
    const again = await h.claim('p', { name: 'web', owner: owner('a'), addresses: ['10.0.0.31'], ttlSeconds: 600 });
    h.clock.advance(30_000);
    // Act
    const report = await h.run({ settings: { sweepItems: 0 } });
    // Assess: the old lease is gone, the new claim keeps its address.
    expect(report.repairs.LeaseOrphaned).toBe(1);
    expect(report.repairs.ClaimExpired).toBe(0);
    expect(await h.get(keys.lease('p', '10.0.0.30'))).toBeUndefined();
    expect((await h.get(keys.lease('p', '10.0.0.31')))!.claimUid).toBe(again.uid);
  });

  it('keeps an expired orphan found through the index while it is younger than the grace, and takes it later', async () => {
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    await h.putLease(leaseOf('p', '10.0.0.40', '10.0.0.0-24', 'ghost', 'uid-ghost', T0, T0 + 1_000));
    h.clock.advance(31_000 + 1_000);
    const early = await h.run({ settings: { sweepItems: 0 } });
    expect(early.repairs.LeaseOrphaned).toBe(0);
    expect(await h.get(keys.lease('p', '10.0.0.40'))).toBeDefined();
    h.clock.advance(30_000);
    const later = await h.run({ settings: { sweepItems: 0 } });
    expect(later.repairs.LeaseOrphaned).toBe(1);
    expect(await h.get(keys.lease('p', '10.0.0.40'))).toBeUndefined();
  });
});

describe('Reconciler: rows 6-7, missing leases and duplicates', () => {
  it('writes back the lease of a held claim that lists an address with no lease (LeaseNotAllocated)', async () => {
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    const c = await h.claim('p', { name: 'web', owner: owner('a'), addresses: ['10.0.0.7'], ttlSeconds: 3600 });
    await h.remove(keys.lease('p', '10.0.0.7'));
    h.clock.advance(61_000);
    const report = await h.run();
    expect(report.repairs.LeaseNotAllocated).toBe(1);
    const lease = await h.get(keys.lease('p', '10.0.0.7'));
    expect(lease).toMatchObject({ claim: 'web', claimUid: c.uid, expiresAt: T0 + 3600_000, ownerUid: 'a' });
    expect((await h.api.call('GET', '/v1/pools/p/addresses/10.0.0.7')).body).toMatchObject({ claim: 'web' });
    expect(await h.events('p')).toEqual([
      expect.objectContaining({ reason: 'LeaseNotAllocated', object: 'lease/10.0.0.7' }),
    ]);
  });

  it('reports an address another held claim holds as DuplicateAllocation and changes nothing', async () => {
    // Prepare: claim "b" lists 10.0.0.8, which claim "a" holds.
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    const a = await h.claim('p', { name: 'a', owner: owner('a'), addresses: ['10.0.0.8'] });
    await h.putClaim(claimOf('p', 'b', 'uid-b', [{ address: '10.0.0.8', range: '10.0.0.0-24' }], T0 - 120_000));
    // Act
    const report = await h.run();
    // Assess
    expect(report.repairs.DuplicateAllocation).toBe(1);
    expect((await h.get(keys.lease('p', '10.0.0.8')))!.claimUid).toBe(a.uid);
    expect(await h.get(keys.claim('p', 'b'))).toBeDefined();
    const [event] = await h.events('p');
    expect(event).toMatchObject({ reason: 'DuplicateAllocation', object: 'lease/10.0.0.8' });
    expect(event!.message).toContain('claim a');
  });

  it('takes back an address whose only lease is an expired one of another claim', async () => {
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    await h.putClaim(claimOf('p', 'b', 'uid-b', [{ address: '10.0.0.11', range: '10.0.0.0-24' }], T0 - 120_000));
    await h.putLease(leaseOf('p', '10.0.0.11', '10.0.0.0-24', 'old', 'uid-old', T0 - 600_000, T0 - 1_000));
    const report = await h.run({ settings: { expiredClaimGraceMs: 3600_000 } });
    expect(report.repairs.LeaseNotAllocated).toBe(1);
    expect((await h.get(keys.lease('p', '10.0.0.11')))!.claimUid).toBe('uid-b');
  });

  it('leaves claims younger than the grace alone (their writes may be in flight)', async () => {
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    await h.putClaim(claimOf('p', 'b', 'uid-b', [{ address: '10.0.0.12', range: '10.0.0.0-24' }], T0 - 1_000));
    const report = await h.run();
    expect(report.repairs.LeaseNotAllocated).toBe(0);
    expect(await h.get(keys.lease('p', '10.0.0.12'))).toBeUndefined();
  });
});

describe('Reconciler: rows 11-12, Terminating ranges', () => {
  it('removes a Terminating range once the grace passed and no lease depends on it alone (RangeFinalized)', async () => {
    // Prepare: both ranges hold a lease when their deletion is asked for, so both become Terminating.
    const h = await reconcilerHarness();
    await h.pool('p', [
      { cidr: '10.0.0.0/25', name: 'narrow' },
      { cidr: '10.1.0.0/24', name: 'lonely' },
    ]);
    await h.claim('p', { name: 'in-narrow', owner: owner('a'), addresses: ['10.0.0.5'] });
    const held = await h.claim('p', { name: 'in-lonely', owner: owner('b'), addresses: ['10.1.0.5'] });
    expect((await h.api.call('DELETE', '/v1/pools/p/ranges/narrow')).status).toBe(202);
    expect((await h.api.call('DELETE', '/v1/pools/p/ranges/lonely')).status).toBe(202);
    // A Ready range that covers "narrow" now holds its lease too, so nothing depends on "narrow" alone.
    await h.pool('q', []);
    expect((await h.api.call('POST', '/v1/pools/p/ranges', { cidr: '10.0.0.0/24', name: 'wide' })).status).toBe(201);
    // Act 1: within the grace nothing happens.
    h.clock.advance(9_000);
    const early = await h.run();
    // Act 2: after the grace, "narrow" goes; "lonely" waits for its lease.
    h.clock.advance(2_000);
    const late = await h.run();
    // Assess
    expect(early.repairs.RangeFinalized).toBe(0);
    expect(late.repairs.RangeFinalized).toBe(1);
    expect(await h.get(keys.range('p', 'narrow'))).toBeUndefined();
    expect(await h.get(keys.range('p', 'lonely'))).toMatchObject({ state: 'Terminating' });
    expect(await h.events('p')).toEqual([
      expect.objectContaining({ reason: 'RangeFinalized', object: 'range/narrow' }),
    ]);
    // Act 3: the lease goes, the range follows.
    expect((await h.api.call('DELETE', `/v1/pools/p/claims/${held.name}`)).status).toBe(204);
    expect((await h.run()).repairs.RangeFinalized).toBe(1);
    expect(await h.get(keys.range('p', 'lonely'))).toBeUndefined();
  });

  it('does not remove a range that was made again and deleted again within the new grace', async () => {
    const h = await reconcilerHarness();
    await h.pool('p', [{ cidr: '10.1.0.0/24', name: 'r' }]);
    await h.claim('p', { name: 'c', owner: owner('a'), addresses: ['10.1.0.5'] });
    await h.api.call('DELETE', '/v1/pools/p/ranges/r');
    h.clock.advance(20_000);
    const stale = (await h.api.container.deps.reconcile.listPoolViews())[0]!.ranges[0]!;
    // The range's deletion is requested again later (as after being made again): the stale view must not finalize it.
    await h.put({ ...(await h.get(keys.range('p', 'r')))!, deletionRequestedAt: h.clock.iso() });
    const outcome = await h.api.container.deps.reconcile.finalizeRange(stale, {
      pool: 'p',
      time: h.clock.iso(),
      reason: EventReason.RangeFinalized,
      object: 'range/r',
      message: 'test',
    });
    expect(outcome).toBe('changed');
    expect(await h.get(keys.range('p', 'r'))).toBeDefined();
    expect(await h.events('p')).toEqual([]);
  });
});

describe('Reconciler: utilization', () => {
  it('reports size, used and free for every range, idle and Terminating ones included', async () => {
    const h = await reconcilerHarness();
    await h.pool('p', [
      { cidr: '10.0.0.0/29', name: 'busy' },
      { cidr: '10.2.0.0/30', name: 'idle' },
    ]);
    await h.pool('q', [{ cidr: 'fd00::/120', name: 'six' }]);
    await h.claim('p', { name: 'a', owner: owner('a'), addresses: ['10.0.0.1'] });
    await h.claim('p', { name: 'b', owner: owner('b'), addresses: ['10.0.0.2'] });
    const report = await h.run();
    const countedAt = h.clock.t;
    expect(report.utilization).toEqual([
      {
        pool: 'p',
        range: 'busy',
        cidr: '10.0.0.0/29',
        family: 'IPv4',
        state: 'Ready',
        legacy: false,
        size: 6n,
        used: 2n,
        free: 4n,
        countedAt,
      },
      {
        pool: 'p',
        range: 'idle',
        cidr: '10.2.0.0/30',
        family: 'IPv4',
        state: 'Ready',
        legacy: false,
        size: 2n,
        used: 0n,
        free: 2n,
        countedAt,
      },
      {
        pool: 'q',
        range: 'six',
        cidr: 'fd00::/120',
        family: 'IPv6',
        state: 'Ready',
        legacy: false,
        size: 255n,
        used: 0n,
        free: 255n,
        countedAt,
      },
    ]);
  });

  it('counts within a budget per run: a big count continues over runs, and the last complete count is published meanwhile', async () => {
    // Prepare: 12 leases in "big" (4 shards of the listing index), none in "small".
    const h = await reconcilerHarness();
    await h.pool('p', [
      { cidr: '10.0.0.0/24', name: 'big' },
      { cidr: '10.9.0.0/30', name: 'small' },
    ]);
    for (let i = 1; i <= 12; i += 1)
      await h.putLease(leaseOf('p', `10.0.0.${i}`, 'big', `c${i}`, `u${i}`, T0, T0 + 3600_000));
    // Act: a budget of 10 index items per run.
    const runs: ReconcileReport[] = [];
    for (let i = 0; i < 4; i += 1) {
      runs.push(await h.run({ settings: { countItems: 10, sweepItems: 0 } }));
      if (i === 0) expect((await h.get(keys.usage('p', 'big')))!.record).toMatchObject({ pass: { startedAt: T0 } });
      h.clock.advance(1_000);
    }
    // Assess: "big" (12 items) cannot be counted in one run, so the first run publishes no count of it, its pass is
    // saved, and a later run completes it; every range is counted again later.
    const of = (r: (typeof runs)[number], name: string) => r.utilization.find((u) => u.range === name);
    expect(of(runs[0]!, 'big')).toBeUndefined();
    const firstBig = runs.findIndex((r) => of(r, 'big') !== undefined);
    expect(firstBig).toBeGreaterThan(0);
    expect(of(runs[firstBig]!, 'big')).toMatchObject({ used: 12n, free: 242n, countedAt: T0 + firstBig * 1_000 });
    expect(of(runs[3]!, 'small')).toMatchObject({ used: 0n, free: 2n });
    expect(runs.slice(firstBig).every((r) => of(r, 'big')?.used === 12n)).toBe(true);
    expect(runs.every((r) => r.complete)).toBe(true);
  });
});

describe('Reconciler: the slow sweep', () => {
  it('visits every pool in bounded slices and resumes from its persisted cursor', async () => {
    // Prepare: 3 pools, each with 4 orphans older than the grace (no TTL: only the sweep finds them).
    const h = await reconcilerHarness();
    for (const name of ['a', 'b', 'c']) {
      await h.pool(name, ['10.0.0.0/24']);
      for (let i = 1; i <= 4; i += 1)
        await h.putLease(leaseOf(name, `10.0.0.${i}`, '10.0.0.0-24', `x${i}`, `uid-x${i}`, T0 - 3600_000));
    }
    // Act: 5 items per run.
    const runs = [];
    for (let i = 0; i < 3; i += 1) runs.push(await h.run({ settings: { sweepItems: 5 } }));
    // Assess: 12 orphans need 3 runs of 5; the cycle completes in the third.
    expect(runs.map((r) => r.sweep.checked)).toEqual([5, 5, 2]);
    expect(runs.map((r) => r.sweep.cycleCompleted)).toEqual([false, false, true]);
    expect(runs.reduce((n, r) => n + r.repairs.LeaseOrphaned, 0)).toBe(12);
    for (const name of ['a', 'b', 'c']) expect(await h.events(name)).toHaveLength(4);
  });
});

describe('Reconciler: bounded and resumable', () => {
  it('stops at its deadline and the next run finishes the work', async () => {
    // Prepare: 20 expired claims; the clock moves 1 s at every release, and the deadline is 5 s away.
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    for (let i = 0; i < 20; i += 1) await h.claim('p', { name: `c${i}`, owner: owner(`o${i}`), ttlSeconds: 60 });
    h.clock.advance(91_000);
    const deadline = h.clock.t + 5_000;
    const ticking = (store: import('../../shared/core/use-cases/reconcile-ports.ts').ReconcileStore) =>
      Object.assign(Object.create(store) as typeof store, {
        releaseExpiredClaim: async (...args: Parameters<typeof store.releaseExpiredClaim>) => {
          h.clock.advance(1_000);
          return store.releaseExpiredClaim(...args);
        },
      });
    // Act
    const first = await h.run({ deadlineMs: deadline, wrap: ticking, settings: { sweepItems: 0 } });
    const second = await h.run({ settings: { sweepItems: 0 } });
    // Assess
    expect(first.complete).toBe(false);
    expect(first.stoppedIn).toBe('expiry');
    expect(first.repairs.ClaimExpired).toBeGreaterThan(0);
    expect(first.repairs.ClaimExpired).toBeLessThan(20);
    expect(first.utilization).toEqual([]);
    expect(second.complete).toBe(true);
    expect(first.repairs.ClaimExpired + second.repairs.ClaimExpired).toBe(20);
    expect(await h.events('p')).toHaveLength(20);
  });
});
