// Over 300 lines: the bitmap drift repair and its plan, one decision table with the pass that applies it.
import { formatAddress } from '../ip/address.ts';
import { parseCidr, type Cidr } from '../ip/cidr.ts';
import type { Interval } from '../base/intervals.ts';
import type { Range } from '../model.ts';
import { addressOfBit, bitOf, type Bitmap } from '../bitmap/bitmap.ts';
import { bitmapOf, bitmapOfDocument, bitmapsMaintained, windowInterval } from '../bitmap/legacy.ts';
import type { RangeAllocation } from '../bitmap/range-allocation.ts';
import {
  type Checkpoint,
  type DriftRecord,
  type PoolViewList,
  type UsageRecord,
} from '../use-cases/reconcile-ports.ts';
import { EventReason, type IpamEvent } from '../events.ts';
import type { UsageByRange } from './usage.ts';
import { Phase, RETRIES, SWEEP_CHECKPOINT, type Run, type SweepCheckpoint } from './run.ts';

/**
 * Rows 8-10 of the reconciler's table: legacy bitmaps against the lease items of their window (a bit stands for a
 * lease item that exists, expired or not, as the mirror keeps it).
 *
 * Which ranges are checked (cost follows the work): only legacy ranges, and of those only the ones that can have
 * drifted. Per legacy range a run reads the bitmap item and its drift record; the number of lease items in the
 * window comes free with utilization's count (usage.ts). It scans the window's leases only when
 *
 *   - the bitmap item is missing or does not stand for the range (another CIDR, bits beyond the window);
 *   - a count completed since the last comparison disagrees with the bitmap's set bits (a lease change the mirror
 *     never applied: drift always shows there, except a missed insert and a missed removal that cancel out);
 *   - leak candidates are waiting for their next strike, or a scan is under way; or
 *   - the slow sweep finished a cycle since the last full scan (the backstop for drift that leaves the counts equal).
 *
 * (A moved bitmap version is not a reason: it means the mirror is working.) A scan reads at most `countItems` lease
 * items per run, a window at a time, and continues in the next run from its offset. Per run, in the order that makes
 * it safe against a mirror round or an allocation running at the same time:
 *
 *   1. read the bitmap (version v)                              before the leases, as the mirror does
 *   2. list the lease items of the next spans of the window (index; eventually consistent)
 *   3. confirm each differing bit with a consistent read of its lease item
 *   4. missing bits (lease, no bit): set at once                 row 8, BitmapRepaired
 *      leaked bits (bit, no lease): one strike per run;          row 9, BitmapLeakCleared
 *      cleared at the N-th consecutive strike
 *   5. write IF the bitmap is still at v AND each set bit's lease still exists AND each cleared bit's lease is
 *      still absent (one transaction with the events): an allocation landing in between cancels it
 *
 * @returns the number of legacy ranges whose window was scanned (in part or whole) in this run.
 */
export async function repairBitmaps(run: Run, views: PoolViewList, usage: UsageByRange): Promise<number> {
  const legacy = views.flatMap((v) => v.ranges.filter((r) => r.legacy));
  if (legacy.length === 0) return 0;
  if (!bitmapsMaintained(run.deps.gates)) {
    for (const range of legacy) {
      if (run.out(Phase.Drift)) break;
      await run.attempt(`remove bitmap ${range.pool}/${range.name}`, () => removeBitmap(run, range));
    }
    return 0;
  }
  // Which sweep cycle the scans compare with; without it (after the retries) the drift check waits for the next run.
  const sweep = await run.read('read sweep checkpoint for drift', () =>
    run.deps.reconcile.getCheckpoint<SweepCheckpoint>(SWEEP_CHECKPOINT),
  );
  if (!sweep.ok) return 0;
  const cycle = sweep.value?.value.cycles ?? 0;
  const budget = { left: run.deps.settings.countItems };
  let checked = 0;
  for (const range of legacy) {
    if (run.out(Phase.Drift)) break;
    await run.attempt(`check bitmap ${range.pool}/${range.name}`, async () => {
      if (await checkRange(run, range, { cycle, usage: usage.get(`${range.pool}/${range.name}`), budget }))
        checked += 1;
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

/** What is known of a legacy range before its scan: its bitmap, its drift record and its latest count. */
export interface RangeState {
  readonly doc: RangeAllocation | undefined;
  readonly bitmap: Bitmap | undefined;
  readonly record: DriftRecord | undefined;
  readonly usage: UsageRecord | undefined;
}

/** Whether a legacy range can have drifted since its last full scan (see repairBitmaps). */
export function needsScan(state: RangeState, cycle: number): boolean {
  const { doc, bitmap, record, usage } = state;
  if (!doc || !bitmap || !record) return true;
  if (record.checking !== undefined || Object.keys(record.strikes).length > 0 || record.checkedCycle < cycle)
    return true;
  const counted =
    usage?.countedAt !== undefined && usage.windowItems !== undefined && usage.countedAt > record.comparedAt;
  return counted && usage.windowItems !== bitmap.count();
}

/** What a full check decided: bits to set, bits to clear, and the strikes to remember. */
export interface DriftPlan {
  readonly set: readonly number[];
  readonly clear: readonly number[];
  readonly strikes: Readonly<Record<string, number>>;
}

/** What a check of a legacy range found, and what it may do about it. */
export interface DriftCheck {
  /** Bits of existing leases the bitmap does not have (confirmed). */
  readonly missing: readonly number[];
  /** Bits the bitmap has with no lease (confirmed). */
  readonly leaked: readonly number[];
  /** The strikes remembered from earlier runs, per bit. */
  readonly previous: Readonly<Record<string, number>>;
  /** This run may strike (no other run's check started after it). */
  readonly mayStrike: boolean;
  /** Strikes at which a leaked bit is cleared. */
  readonly threshold: number;
  /** Whether a bit lies in the spans scanned (default: all). */
  readonly scanned?: (bit: number) => boolean;
}

/**
 * Rows 8-9, pure: confirmed missing bits are set; confirmed leaked bits get one more strike when this run may strike,
 * and are cleared once they reach `threshold`. Strikes of bits in the scanned spans that are no longer leaked are
 * dropped; strikes of bits outside them are kept for the scan to reach them.
 */
export function planDrift(check: DriftCheck): DriftPlan {
  const { missing, leaked, previous, mayStrike, threshold, scanned = () => true } = check;
  const strikes: Record<string, number> = {};
  for (const [bit, count] of Object.entries(previous)) if (!scanned(Number(bit))) strikes[bit] = count;
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
/** Bits of the window listed per index read: a span's lease items are read from every shard at once. */
const SPAN_BITS = 4096;

/** What one legacy range's check reads before it decides: its bitmap, its drift record, and whether strikes count. */
interface RangeCheck {
  readonly run: Run;
  readonly range: Range;
  readonly cidr: Cidr;
  readonly cycle: number;
  readonly record: Checkpoint<DriftRecord> | undefined;
  /** Whether this run may strike (no other run checked the range since this one started). */
  readonly mayStrike: boolean;
  readonly comparedAt: number;
}

/** Rows 8-9 for one legacy range; true when its window was scanned (in part or whole). */
async function checkRange(
  run: Run,
  range: Range,
  scan: { readonly cycle: number; readonly usage: UsageRecord | undefined; readonly budget: { left: number } },
): Promise<boolean> {
  const { cycle, usage, budget } = scan;
  const { bitmaps, reconcile: store } = run.deps;
  const cidr = parseCidr(range.cidr);
  const window = windowInterval(cidr);
  if (!window) return false;
  // 1. The bitmap first, then everything about the leases.
  // Reads are retried within the run when they fail transiently (RETRIES.read), as a phase's reads are.
  const doc = await run.retrying(() => bitmaps.getBitmap(range.pool, range.name), RETRIES.read);
  const current = doc ? bitmapOfDocument(doc, { range, cidr }) : undefined;
  const record = await run.retrying(() => store.getDriftRecord(range.pool, range.name), RETRIES.read);
  if (!needsScan({ doc, bitmap: current, record: record?.value, usage }, cycle) || budget.left <= 0) return false;
  const check: RangeCheck = {
    run,
    range,
    cidr,
    cycle,
    record,
    mayStrike: record === undefined || record.value.observedAt < run.startedAt,
    comparedAt: usage?.countedAt ?? record?.value.comparedAt ?? 0,
  };
  if (!doc || !current) {
    await rebuildBitmap(check, { doc, window, budget });
    return true;
  }
  // 2. The next spans of the window, as the index has them, within the run's budget.
  const from = record?.value.checking?.offset ?? 0;
  const { offset, diff } = await scanSpans(check, { bitmap: current, from, budget });
  const finished = offset >= current.size;
  // 3. Each difference confirmed by a consistent read (the index may lag a write of the last moments).
  const addressOf = (bit: number) => formatAddress({ family: range.family, value: addressOfBit(cidr, bit) });
  const holders = await bitmaps.leaseHolders(range.pool, [...diff.missing, ...diff.leaked].map(addressOf));
  // 4. One strike per run: a run that started before another run's check does not strike again.
  const plan = planDrift({
    missing: diff.missing.filter((bit) => holders.has(addressOf(bit))),
    leaked: diff.leaked.filter((bit) => !holders.has(addressOf(bit))),
    previous: record?.value.strikes ?? {},
    mayStrike: check.mayStrike,
    threshold: run.deps.settings.leakStrikes,
    scanned: (bit) => bit >= from && bit < offset,
  });
  // 5. Write, in chunks of conditions, each chunk at the version the previous one wrote.
  const changes = [
    ...plan.set.map((bit) => ({ bit, set: true })),
    ...(check.mayStrike ? plan.clear : []).map((bit) => ({ bit, set: false })),
  ];
  if (!(await writeChanges(check, { bitmap: current.clone(), version: doc.version, changes, addressOf }))) return true;
  if (check.mayStrike) {
    await store.saveDriftRecord(
      range.pool,
      range.name,
      {
        strikes: plan.strikes,
        checkedCycle: finished ? cycle : (record?.value.checkedCycle ?? -1),
        comparedAt: check.comparedAt,
        observedAt: run.now(),
        ...(finished ? {} : { checking: { offset } }),
      },
      record?.version,
    );
  }
  return true;
}

/**
 * No bitmap (or one of another CIDR): written whole from the leases, as the mirror does when it finds none (a partial
 * bitmap could let a legacy-mode allocator hand out an address that is held).
 */
async function rebuildBitmap(
  check: RangeCheck,
  args: { readonly doc: RangeAllocation | undefined; readonly window: Interval; readonly budget: { left: number } },
): Promise<void> {
  const { run, range, cidr, record } = check;
  const { doc, window, budget } = args;
  const { reconcile: store, leases } = run.deps;
  const expected = bitmapOf(cidr, await leases.takenAddresses(range.pool, range.family, [window], 0));
  budget.left -= expected.count() + 1;
  // (An empty bitmap for a range without leases is bookkeeping, not a repair: it is written without an event.)
  const event =
    doc || expected.count() > 0
      ? bitmapEvent(run, range, {
          reason: EventReason.BitmapRepaired,
          what: doc ? `stood for ${doc.range}, not ${range.cidr}; it was rebuilt` : 'was missing; it was built',
          count: expected.count(),
          addresses: [],
        })
      : undefined;
  const written = await store.repairBitmap(
    {
      pool: range.pool,
      rangeName: range.name,
      allocation: { range: range.cidr, data: expected.encode(), version: (doc?.version ?? 0) + 1 },
      expected: doc ? { version: doc.version } : 'absent',
      leasesPresent: [],
      leasesAbsent: [],
    },
    event ? [event] : [],
  );
  if (written !== 'written') return;
  if (event) run.done(event, true);
  if (check.mayStrike)
    await store.saveDriftRecord(
      range.pool,
      range.name,
      { strikes: {}, checkedCycle: check.cycle, comparedAt: check.comparedAt, observedAt: run.now() },
      record?.version,
    );
}

/** Compares the bitmap with the index, span by span from `from`, while the budget and the run allow. */
async function scanSpans(
  check: RangeCheck,
  args: { readonly bitmap: Bitmap; readonly from: number; readonly budget: { left: number } },
): Promise<{ offset: number; diff: { missing: number[]; leaked: number[] } }> {
  const { run, range, cidr } = check;
  const { bitmap, budget } = args;
  let offset = args.from;
  const diff = { missing: [] as number[], leaked: [] as number[] };
  while (offset < bitmap.size && budget.left > 0 && !run.out(Phase.Drift)) {
    const end = Math.min(offset + SPAN_BITS, bitmap.size);
    const present = new Set<number>();
    const values = await run.deps.leases.takenAddresses(
      range.pool,
      range.family,
      [[addressOfBit(cidr, offset), addressOfBit(cidr, end - 1)]],
      0,
    );
    budget.left -= values.length + 1;
    for (const value of values) {
      const bit = bitOf(cidr, value);
      if (bit !== undefined) present.add(bit);
    }
    for (let bit = offset; bit < end; bit += 1) {
      const set = bitmap.has(bit);
      if (present.has(bit) && !set) diff.missing.push(bit);
      else if (set && !present.has(bit)) diff.leaked.push(bit);
    }
    offset = end;
  }
  return { offset, diff };
}

/** Writes the bit changes in chunks, each with its events; false when a concurrent writer moved the bitmap. */
async function writeChanges(
  check: RangeCheck,
  args: {
    readonly bitmap: Bitmap;
    readonly version: number;
    readonly changes: readonly { readonly bit: number; readonly set: boolean }[];
    readonly addressOf: (bit: number) => string;
  },
): Promise<boolean> {
  const { run, range } = check;
  const { bitmap, changes, addressOf } = args;
  let version = args.version;
  for (let i = 0; i < changes.length; i += CHECKS_PER_WRITE) {
    const chunk = changes.slice(i, i + CHECKS_PER_WRITE);
    for (const c of chunk) {
      if (c.set) bitmap.set(c.bit);
      else bitmap.clear(c.bit);
    }
    const set = chunk.filter((c) => c.set).map((c) => addressOf(c.bit));
    const cleared = chunk.filter((c) => !c.set).map((c) => addressOf(c.bit));
    const events = chunkEvents(check, { set, cleared });
    const written = await run.deps.reconcile.repairBitmap(
      {
        pool: range.pool,
        rangeName: range.name,
        allocation: { range: range.cidr, data: bitmap.encode(), version: version + 1 },
        expected: { version },
        leasesPresent: set,
        leasesAbsent: cleared,
      },
      events,
    );
    // Lost to a concurrent writer: the next run reads again (strikes are not saved, so none is counted twice).
    if (written === 'changed') return false;
    for (const e of events) run.done(e, true);
    version += 1;
  }
  return true;
}

/** The events of one chunk: bits set for existing leases, bits cleared after their strikes. */
function chunkEvents(check: RangeCheck, bits: { readonly set: string[]; readonly cleared: string[] }): IpamEvent[] {
  const { run, range } = check;
  return [
    ...(bits.set.length
      ? [
          bitmapEvent(run, range, {
            reason: EventReason.BitmapRepaired,
            what: 'missed the bits of existing leases; they were set',
            count: bits.set.length,
            addresses: bits.set,
          }),
        ]
      : []),
    ...(bits.cleared.length
      ? [
          bitmapEvent(run, range, {
            reason: EventReason.BitmapLeakCleared,
            what: `held bits with no lease for ${run.deps.settings.leakStrikes} consecutive runs; they were cleared`,
            count: bits.cleared.length,
            addresses: bits.cleared,
          }),
        ]
      : []),
  ];
}

/** Addresses listed in an event's message; the count says how many there were in all. */
const LISTED = 8;

function bitmapEvent(
  run: Run,
  range: Range,
  report: {
    readonly reason: EventReason;
    readonly what: string;
    readonly count: number;
    readonly addresses: readonly string[];
  },
): IpamEvent {
  const { reason, what, count, addresses } = report;
  const listed = addresses.length
    ? ` (${addresses.slice(0, LISTED).join(', ')}${addresses.length > LISTED ? `, and ${addresses.length - LISTED} more` : ''})`
    : '';
  return {
    pool: range.pool,
    time: run.iso(),
    reason,
    object: `bitmap/${range.name}`,
    message: `The legacy bitmap of range ${range.name} (${range.cidr}) ${what}: ${count} bit${count === 1 ? '' : 's'}${listed}.`,
  };
}
