import { formatAddress } from '../ip/address.ts';
import { parseCidr } from '../ip/cidr.ts';
import type { Range } from '../model.ts';
import { Bitmap, addressOfBit } from '../bitmap/bitmap.ts';
import { bitmapOf, bitmapOfDocument, bitmapsMaintained, windowInterval } from '../bitmap/legacy.ts';
import type { RangeAllocation } from '../bitmap/range-allocation.ts';
import { EventReason, type DriftRecord, type IpamEvent, type PoolViewList } from './ports.ts';
import { Phase, SWEEP_CHECKPOINT, type Run, type SweepCheckpoint } from './run.ts';

/**
 * Rows 8-10 of the reconciler's table: legacy bitmaps against the lease items of their window (a bit stands for a
 * lease item that exists, expired or not, as the mirror keeps it).
 *
 * Which ranges are checked (cost follows the work): only legacy ranges, and of those only the ones that can have
 * drifted since their last full check. Every run reads, per legacy range, the bitmap item, its drift record and a
 * COUNT of the window's lease items (the order of utilization's own count); it rebuilds the bitmap from the leases
 * (reading their keys) only when
 *
 *   - the bitmap item is missing or does not stand for the range (another CIDR, bits beyond the window);
 *   - its version moved since the last full check (lease activity: the mirror or a legacy allocation wrote it);
 *   - its number of set bits differs from the number of lease items (a change the mirror never applied);
 *   - leak candidates are waiting for their next strike; or
 *   - the slow sweep finished a cycle since (a bounded backstop for drift that leaves counts equal).
 *
 * A full check, in the order that makes it safe against a mirror round or an allocation running at the same time:
 *
 *   1. read the bitmap (version v)                              before the leases, as the mirror does
 *   2. list the window's lease items (index; eventually consistent)
 *   3. confirm each differing bit with a consistent read of its lease item
 *   4. missing bits (lease, no bit): set at once                 row 8, BitmapRepaired
 *      leaked bits (bit, no lease): one strike per run;          row 9, BitmapLeakCleared
 *      cleared at the N-th consecutive strike
 *   5. write IF the bitmap is still at v AND each set bit's lease still exists AND each cleared bit's lease is
 *      still absent (one transaction with the events): an allocation landing in between cancels it
 *
 * @returns the number of legacy ranges fully checked.
 */
export async function repairBitmaps(run: Run, views: PoolViewList): Promise<number> {
  const legacy = views.flatMap((v) => v.ranges.filter((r) => r.legacy));
  if (legacy.length === 0) return 0;
  if (!bitmapsMaintained(run.deps.gates)) {
    for (const range of legacy) {
      if (run.out(Phase.Drift)) break;
      await run.attempt(`remove bitmap ${range.pool}/${range.name}`, () => removeBitmap(run, range));
    }
    return 0;
  }
  const cycle = (await run.deps.reconcile.getCheckpoint<SweepCheckpoint>(SWEEP_CHECKPOINT))?.value.cycles ?? 0;
  let checked = 0;
  for (const range of legacy) {
    if (run.out(Phase.Drift)) break;
    await run.attempt(`check bitmap ${range.pool}/${range.name}`, async () => {
      if (await checkRange(run, range, cycle)) checked += 1;
      return true;
    });
  }
  return checked;
}

/** Row 10: dual-write is off, so the bitmap item goes (at the version read, so a concurrent writer is noticed). */
async function removeBitmap(run: Run, range: Range): Promise<boolean> {
  const doc = await run.deps.bitmaps.getBitmap(range.pool, range.name);
  if (!doc) return true;
  const event: IpamEvent = {
    pool: range.pool,
    time: run.iso(),
    reason: EventReason.BitmapRemoved,
    object: `bitmap/${range.name}`,
    message: `Dual-write is off (DisableAllocatorDualWrite=true): the legacy bitmap of range ${range.name} (${range.cidr}, version ${doc.version}) was deleted.`,
  };
  run.done(event, (await run.deps.reconcile.removeBitmap(range.pool, range.name, doc.version, event)) === 'removed');
  return true;
}

/** Whether a legacy range can have drifted since its last full check (see repairBitmaps). */
export function needsFullCheck(doc: RangeAllocation | undefined, bitmap: Bitmap | undefined, record: DriftRecord | undefined, leaseItems: bigint, cycle: number): boolean {
  if (!doc || !bitmap || !record) return true;
  return doc.version !== record.checkedVersion || BigInt(bitmap.count()) !== leaseItems || Object.keys(record.strikes).length > 0 || record.checkedCycle < cycle;
}

/** What a full check decided: bits to set, bits to clear, and the strikes to remember. */
export interface DriftPlan {
  readonly set: readonly number[];
  readonly clear: readonly number[];
  readonly strikes: Readonly<Record<string, number>>;
}

/**
 * Rows 8-9, pure: confirmed missing bits are set; confirmed leaked bits get one more strike when this run may strike,
 * and are cleared once they reach `threshold`; a bit that is no longer leaked loses its strikes.
 */
export function planDrift(missing: readonly number[], leaked: readonly number[], previous: Readonly<Record<string, number>>, mayStrike: boolean, threshold: number): DriftPlan {
  const strikes: Record<string, number> = {};
  const clear: number[] = [];
  for (const bit of leaked) {
    const count = (previous[String(bit)] ?? 0) + (mayStrike ? 1 : 0);
    if (mayStrike && count >= threshold) clear.push(bit);
    else if (count > 0) strikes[String(bit)] = count;
  }
  return { set: [...missing], clear, strikes };
}

/** Checks written per transaction (DynamoDB takes 100 items: the bitmap, its events, and these). */
const CHECKS_PER_WRITE = 90;

/** Rows 8-9 for one legacy range; true when it was fully checked. */
async function checkRange(run: Run, range: Range, cycle: number): Promise<boolean> {
  const { bitmaps, reconcile: store, store: leases, settings } = run.deps;
  const cidr = parseCidr(range.cidr);
  const window = windowInterval(cidr);
  if (!window) return false;
  // 1. The bitmap first, then everything about the leases.
  const doc = await bitmaps.getBitmap(range.pool, range.name);
  const current = doc ? bitmapOfDocument(doc, { range, cidr }) : undefined;
  const record = await store.getDriftRecord(range.pool, range.name);
  const items = await leases.countLeases(range.pool, range.family, [window], 0);
  if (!needsFullCheck(doc, current, record?.value, items, cycle)) return false;
  // 2. The window's lease items, as the index has them.
  const expected = bitmapOf(cidr, await leases.takenAddresses(range.pool, range.family, [window], 0));
  const base = current ?? Bitmap.empty(expected.size);
  const diff = { missing: [] as number[], leaked: [] as number[] };
  expected.forEachSet((bit) => {
    if (!base.has(bit)) diff.missing.push(bit);
  });
  base.forEachSet((bit) => {
    if (!expected.has(bit)) diff.leaked.push(bit);
  });
  // 3. Each difference confirmed by a consistent read (the index may lag a write of the last moments).
  const addressOf = (bit: number) => formatAddress({ family: range.family, value: addressOfBit(cidr, bit) });
  const holders = await bitmaps.leaseHolders(range.pool, [...diff.missing, ...diff.leaked].map(addressOf));
  const missing = diff.missing.filter((bit) => holders.has(addressOf(bit)));
  const leaked = diff.leaked.filter((bit) => !holders.has(addressOf(bit)));
  // 4. One strike per run: a run that started before another run's check does not strike again.
  const mayStrike = record === undefined || record.value.observedAt < run.startedAt;
  const plan = planDrift(missing, leaked, record?.value.strikes ?? {}, mayStrike, settings.leakStrikes);
  // 5. Write, in chunks of conditions, each chunk at the version the previous one wrote.
  let version = doc?.version;
  const bitmap = base.clone();
  const unreadable = doc !== undefined && current === undefined;
  if (!doc || unreadable) {
    // No bitmap (or one of another CIDR): written whole from the leases, as the mirror does when it finds none.
    // (An empty bitmap for a range without leases is bookkeeping, not a repair: it is written without an event.)
    const event = doc || expected.count() > 0 ? bitmapEvent(run, range, EventReason.BitmapRepaired, doc ? `stood for ${doc.range}, not ${range.cidr}; it was rebuilt` : 'was missing; it was built', expected.count(), []) : undefined;
    const written = await store.repairBitmap(
      { pool: range.pool, rangeName: range.name, allocation: { range: range.cidr, data: expected.encode(), version: (version ?? 0) + 1 }, expected: doc ? { version: doc.version } : 'absent', leasesPresent: [], leasesAbsent: [] },
      event ? [event] : [],
    );
    if (written !== 'written') return true;
    if (event) run.done(event, true);
    version = (version ?? 0) + 1;
  } else {
    const changes = [...plan.set.map((bit) => ({ bit, set: true })), ...plan.clear.map((bit) => ({ bit, set: false }))];
    for (let i = 0; i < changes.length; i += CHECKS_PER_WRITE) {
      const chunk = changes.slice(i, i + CHECKS_PER_WRITE);
      for (const c of chunk) {
        if (c.set) bitmap.set(c.bit);
        else bitmap.clear(c.bit);
      }
      const set = chunk.filter((c) => c.set).map((c) => addressOf(c.bit));
      const cleared = chunk.filter((c) => !c.set).map((c) => addressOf(c.bit));
      const events = [
        ...(set.length ? [bitmapEvent(run, range, EventReason.BitmapRepaired, 'missed the bits of existing leases; they were set', set.length, set)] : []),
        ...(cleared.length ? [bitmapEvent(run, range, EventReason.BitmapLeakCleared, `held bits with no lease for ${settings.leakStrikes} consecutive runs; they were cleared`, cleared.length, cleared)] : []),
      ];
      const written = await store.repairBitmap(
        { pool: range.pool, rangeName: range.name, allocation: { range: range.cidr, data: bitmap.encode(), version: version! + 1 }, expected: { version: version! }, leasesPresent: set, leasesAbsent: cleared },
        events,
      );
      // Lost to a concurrent writer: the next run reads again (strikes are not saved, so none is counted twice).
      if (written === 'changed') return true;
      for (const e of events) run.done(e, true);
      version = version! + 1;
    }
  }
  if (mayStrike) {
    await store.saveDriftRecord(range.pool, range.name, { strikes: plan.strikes, checkedVersion: version!, checkedCycle: cycle, observedAt: run.now() }, record?.version);
  }
  return true;
}

/** Addresses listed in an event's message; the count says how many there were in all. */
const LISTED = 8;

function bitmapEvent(run: Run, range: Range, reason: EventReason, what: string, count: number, addresses: readonly string[]): IpamEvent {
  const listed = addresses.length ? ` (${addresses.slice(0, LISTED).join(', ')}${addresses.length > LISTED ? `, and ${addresses.length - LISTED} more` : ''})` : '';
  return {
    pool: range.pool,
    time: run.iso(),
    reason,
    object: `bitmap/${range.name}`,
    message: `The legacy bitmap of range ${range.name} (${range.cidr}) ${what}: ${count} bit${count === 1 ? '' : 's'}${listed}.`,
  };
}
