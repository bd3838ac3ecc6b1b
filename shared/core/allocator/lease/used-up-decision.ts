import { NotReadyError } from '../../errors.ts';
import type { RangeSeals, UsedUpSeals } from '../../used-up/ports.ts';
import { TUNING } from '../tuning.ts';
import {
  BandReading,
  bandValues,
  countersOf,
  NO_SEALS,
  partsOf,
  sealHolds,
  withSealsOf,
  type Band,
} from '../../used-up/rule.ts';
import { randomOf, type CallContext, type Choice, type FamilyPick } from './context.ts';
import { readFree } from './read-leases.ts';

/** A "used up" decision's answer: a free address of the bands, or none free at any moment it read them. */
export type UsedUpDecision = { readonly kind: 'free'; readonly choice: Choice } | { readonly kind: 'usedUp' };

/**
 * Stage "decide used up": a free address of `bands`, or usedUp when every band is used up as this call read it: each
 * address read held at some moment inside this call, so an address free for the whole call is found (as by a scan).
 * Read through a read of the ranges' seals and freed counters (one consistent bulk read, or the seals alone when this
 * call read those counters already: readCounters) in which the seal of every part of every band holds (used-up/rule.ts:
 * a band is cut into up to TUNING.sealParts parts, sealed one by one). A part without one is read in bulk
 * (confirmFree) after the counters were read; read used up, it is sealed at those counters (a plain write:
 * writes/freed.ts says why a seal at counters moved since misleads no reader). The part read next is a random one
 * among those the last read shows unsealed (of the first band that has any: upper bands first), and the seals are read
 * again after each part: callers deciding at once share the reading of a band instead of each reading all of it. The
 * answer is used up once every part was read used up in this call or holds in the last read.
 */
export async function decideUsedUp(pick: FamilyPick, bands: readonly Band[]): Promise<UsedUpDecision> {
  const { call } = pick;
  const { ports } = call.env;
  const seals = ports.seals ?? NO_SEALS;
  // A band without addresses (a range too small for a lower band) is used up without a read.
  const bandParts = bands.filter((b) => b.to > b.from).map((b) => partsOf(b));
  const parts = bandParts.flat();
  if (parts.length === 0) return { kind: 'usedUp' };
  const ranges = [...new Set(parts.flatMap((p) => p.counters))];
  const budget = { read: 0 };
  const holds = (read: ReadonlyMap<string, RangeSeals>, part: Band) =>
    sealHolds(read, part, call.owner, ports.clock.nowMs());
  let read = await readCounters(call, seals, ranges);
  // Parts read used up in bulk in this call: decided, whatever their seals say now (a seal write lost to another
  // caller's, or one that cannot hold, such as a part held for too many owners, changes nothing about that read).
  const done = new Set<Band>();
  const hasOpen = (last: ReadonlyMap<string, RangeSeals>): boolean =>
    parts.some((part) => !done.has(part) && !holds(last, part));
  for (;;) {
    // Every part was read used up in this call or holds in the last read: each of its addresses was held at a moment
    // inside this call, so none was free for the whole of it. That is the decision.
    const open = bandParts
      .map((band) => band.filter((part) => !done.has(part) && !holds(read, part)))
      .find((band) => band.length > 0);
    if (!open) return { kind: 'usedUp' };
    const part = randomOf(call.env, open);
    done.add(part);
    const reading = new BandReading();
    const choice = await confirmFree(pick, part, reading, budget);
    if (choice) return { kind: 'free', choice };
    // Free only among this claim's own picks (a batch that cannot grow) is not used up: no seal. Nor is a part
    // holding a lease taken through a range the band's counters leave out (removed since, or newer than the view):
    // that lease's release would bump a counter no seal of the band records. A preview (dryRun) writes nothing.
    if (!reading.open && !reading.foreign && call.dryRun !== true)
      await seals.seal(call.pool, part.range.range.name, part.part, reading.sealAt(countersOf(read, part), part));
    // What others sealed meanwhile: the seals alone (one key a range, not the 100 of its counters), checked against
    // the counters read at the start of this call. Not when no part is left open in the last read (the part just read
    // was the last): a later read could only vouch for parts already decided, and a warm RangeFull would pay a request
    // for nothing.
    if (parts.length === 1 || !ports.seals || !hasOpen(read)) continue;
    read = withSealsOf(read, await seals.readSeals(call.pool, ranges, 'seals'));
  }
}

/**
 * The freed counters and seals of `ranges` for a decision: one bulk read, or, when this call has read all their
 * counters already (`call.counters`, filled here), the seals alone (one key a range instead of 100). The rule asks for
 * one read of the counters inside the request, not one per decision: counters read at any moment of the call vouch
 * for seals read after them (writes/freed.ts), so a request that falls to a lower band and later decides the whole
 * family reads a range's counters once.
 */
async function readCounters(
  call: CallContext,
  seals: UsedUpSeals,
  ranges: readonly string[],
): Promise<ReadonlyMap<string, RangeSeals>> {
  const { counters } = call;
  if (call.env.ports.seals && ranges.every((range) => counters.has(range))) {
    return withSealsOf(
      new Map(ranges.map((range) => [range, { freed: counters.get(range)!, seals: {} }])),
      await seals.readSeals(call.pool, ranges, 'seals'),
    );
  }
  const read = await seals.readSeals(call.pool, ranges);
  for (const [range, { freed }] of read) counters.set(range, freed);
  return read;
}

/**
 * Reads the leases of a band (or a part of one) from a random offset with wrap-around, in waves of TUNING.confirmWave
 * doubling to TUNING.confirmWaveMax lease keys, each wave one consistent bulk read, until a wave finds an address free
 * for this owner: no lease item, one past its expiry, or a Released one held for this owner. It picks among the free
 * ones of that wave, never one of `chosen` (this claim's other picks), one not in flight in this container if it
 * can; undefined when every address was read taken or chosen. Each address is read during this call, so an
 * address free for the whole call is found. What it reads taken joins the hint (as a collision would) and
 * `reading` (for a seal), what it reads free joins `verified`.
 * @throws NotReadyError when the decision has read more than TUNING.confirmLimit addresses (`budget`) and none was free
 */
async function confirmFree(
  pick: FamilyPick,
  band: Band,
  reading: BandReading,
  budget: { read: number },
): Promise<Choice | undefined> {
  const { call, family } = pick;
  const { ports } = call.env;
  let wave: number = TUNING.confirmWave;
  const values = bandValues(band, band.from + (band.to > band.from ? ports.random.below(band.to - band.from) : 0n));
  for (;;) {
    const batch: bigint[] = [];
    while (batch.length < wave) {
      const next = values.next();
      if (next.done) break;
      batch.push(next.value);
    }
    if (batch.length === 0) return undefined;
    if ((budget.read += batch.length) > TUNING.confirmLimit)
      throw new NotReadyError(
        "The pool's view shows its ranges used up, and they are too large to confirm that in one request; retry shortly.",
      );
    const candidates = batch.map((value) => ({ value, range: band.range, explicit: false }));
    const unheld = await readFree(pick, candidates, (state) => reading.taken(state, band.counters), new Set());
    if (unheld.length > 0) reading.open = true;
    for (const f of unheld) pick.verified.add(f.value);
    const free = unheld.filter((f) => !pick.chosen.has(f.value));
    if (free.length > 0) {
      const inFlight = ports.hints.inFlight(call.pool, family);
      const idle = free.filter((f) => !inFlight.has(f.value));
      const among = idle.length > 0 ? idle : free;
      return among[Number(ports.random.below(BigInt(among.length)))];
    }
    wave = Math.min(2 * wave, TUNING.confirmWaveMax);
  }
}
