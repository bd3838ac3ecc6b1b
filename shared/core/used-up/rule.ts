import { createHash } from 'node:crypto';
import { hostAt, slotFloor } from '../ip/cidr.ts';
import { formatAddress } from '../ip/address.ts';
import type { LeaseExpiry } from '../occupancy/ports.ts';
import type { BandName, RangeSeals, UsedUpSeal, UsedUpSeals } from './ports.ts';
import { intervalHolding, type Interval } from '../base/intervals.ts';
import type { ParsedRange } from '../base/pool-geometry.ts';
import { SEAL_TUNING } from './tuning.ts';

/** Offsets [from, to) of a range, minus exclusions: a band, or a part of one (what one seal covers). */
export interface Band {
  readonly name: BandName;
  /** Which seal covers it: the band's name, then `_<k>` for its k-th part (partsOf). */
  readonly part: string;
  readonly range: ParsedRange;
  /** The ranges whose freed counters cover the band: its own, and every range of the pool overlapping it. */
  readonly counters: readonly string[];
  readonly from: bigint;
  readonly to: bigint;
  readonly excluded: readonly Interval[];
}

/** The parts of a band (see SEAL_TUNING.sealParts), in offset order. */
export function partsOf(band: Band): Band[] {
  const width = band.to - band.from;
  const fit = width / SEAL_TUNING.sealPartMin;
  const n = fit < BigInt(SEAL_TUNING.sealParts) ? fit : BigInt(SEAL_TUNING.sealParts);
  if (n <= 1n) return [{ ...band, part: `${band.name}_0` }];
  return Array.from({ length: Number(n) }, (_, k) => ({
    ...band,
    part: `${band.name}_${k}`,
    from: band.from + (width * BigInt(k)) / n,
    to: band.from + (width * BigInt(k + 1)) / n,
  }));
}

/** The band's addresses from offset `start`, wrapping around to `from`, skipping excluded intervals in one step each. */
export function* bandValues(band: Band, start: bigint): Generator<bigint> {
  const { range, from, to, excluded } = band;
  for (const [lo, hi] of [
    [start, to],
    [from, start],
  ] as const) {
    let offset = lo;
    while (offset < hi) {
      const value = hostAt(range.cidr, offset);
      const exclusion = intervalHolding(excluded, value);
      if (exclusion) {
        offset = slotFloor(range.cidr, exclusion[1]) + 1n;
        continue;
      }
      yield value;
      offset += 1n;
    }
  }
}

/**
 * What a band is, as a seal records it: the range's incarnation (a range re-created under its name is another one),
 * its offsets, and the exclusions that cut it, as 16 hex digits of a SHA-256 of them (the exclusions cutting a part
 * are as many as the pool has, and a seal must stay small: docs/decisions/0003-seal-parts-and-digests.md). A seal of another shape (an exclusion
 * lifted, a window moved) says nothing about this band; two shapes share a digest with odds of about 2^-64.
 */
export function shapeOf(band: Band): string {
  let shape = shapes.get(band);
  if (shape === undefined) shapes.set(band, (shape = sha16(shapeText(band))));
  return shape;
}

/** 16 hex digits of a SHA-256: what a seal records of a text whose length it must not carry. */
function sha16(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

/**
 * An owner identity as a seal lists it among its holders: a digest (sha16), since identities are long and a seals
 * item holds 32 of them in each part and must stay far under 400 KB (docs/decisions/0003-seal-parts-and-digests.md). An owner whose digest
 * equals a holder's is taken for that holder: the seal does not hold for it, and it reads the part (never the other
 * way round).
 */
export function holderDigest(identity: string): string {
  if (identity !== lastHolder.identity) lastHolder = { identity, digest: sha16(identity) };
  return lastHolder.digest;
}

/** The last owner digested: one decision checks the seal of every part for the same owner. */
let lastHolder = { identity: '', digest: sha16('') };

/** Shapes by part: a decision checks each part's seal in every read of it. */
const shapes = new WeakMap<Band, string>();

function shapeText(band: Band): string {
  const { range, from, to, excluded } = band;
  if (to <= from) return `${range.range.createdAt}|${range.range.cidr}|empty`;
  const first = hostAt(range.cidr, from);
  const last = hostAt(range.cidr, to - 1n);
  const cuts = excluded
    .filter(([lo, hi]) => lo <= last && hi >= first)
    .map(
      ([lo, hi]) =>
        `${formatAddress({ family: range.cidr.family, value: lo })}-${formatAddress({ family: range.cidr.family, value: hi })}`,
    );
  return `${range.range.createdAt}|${range.range.cidr}|${from}-${to}|${cuts.join(',')}`;
}

/**
 * Whether a seal read with its range's counters says the band is used up for this owner now: same shape, no counter
 * moved since it was written (nothing in the range freed since), no lease it read expired yet, and none of its
 * Released leases held for this owner (free for it).
 */
export function sealHolds(read: ReadonlyMap<string, RangeSeals>, band: Band, owner: string, nowMs: number): boolean {
  const seal = read.get(band.range.range.name)?.seals[band.part];
  if (!seal) return false;
  return (
    seal.shape === shapeOf(band) &&
    (seal.until === undefined || nowMs < seal.until) &&
    seal.freed === countersOf(read, band) &&
    seal.holders !== 'many' &&
    !seal.holders.includes(holderDigest(owner))
  );
}

/**
 * The counters of `read` with the seals of a later read of the seals alone. Checking a seal against counters read
 * before it was read loses nothing: it holds only where those counters equal the ones it records, and then each
 * address it covers was held at a moment between that counter read and the seal's read, both in this call
 * (writes/freed.ts). It saves reading every counter shard again to see what other callers sealed meanwhile.
 */
export function withSealsOf(
  read: ReadonlyMap<string, RangeSeals>,
  later: ReadonlyMap<string, RangeSeals>,
): Map<string, RangeSeals> {
  return new Map([...read].map(([range, r]) => [range, { freed: r.freed, seals: later.get(range)?.seals ?? {} }]));
}

/**
 * A counter's shards as a seal records them: 16 hex digits of a SHA-256 of the values, so a seal stays small whatever
 * the shard count (99 values of up to 7 digits for each of the counters it names made a seal of a band overlapped by
 * 30 ranges ~20 KB, and a seals item of 32 such parts past DynamoDB's 400 KB). Two different arrays share a digest
 * with odds of about 2^-64.
 */
export function countersDigest(shards: readonly number[]): string {
  let digest = digests.get(shards);
  if (digest === undefined) digests.set(shards, (digest = sha16(shards.join(','))));
  return digest;
}

/**
 * Digests by the array read: one read's counters are checked against the seal of every part (up to SEAL_TUNING.sealParts a
 * band), and a read's arrays are never changed (RangeSeals.freed is readonly), so each is hashed once.
 */
const digests = new WeakMap<readonly number[], string>();

/**
 * The counters a seal of this band records, as read: one digest over every counter it names (its range's and each
 * overlapping range's), so a seal's size does not grow with the ranges overlapping the band (a digest each made a
 * seal ~36 bytes a range: a /19 overlapped by 360 ranges had 13 KB seals, and its seals item passed DynamoDB's 400 KB).
 */
export function countersOf(read: ReadonlyMap<string, RangeSeals>, band: Band): string {
  return digestOfCounters(band.counters.map((counter) => [counter, read.get(counter)?.freed ?? []]));
}

/** One digest of named counters (16 hex digits of a SHA-256 of each name and its shards' digest), whatever their order. */
export function digestOfCounters(counters: readonly (readonly [string, readonly number[]])[]): string {
  const named = counters.map(([name, shards]) => `${name}=${countersDigest(shards)}`).sort();
  return sha16(named.join(';'));
}

/** What a bulk read of a band saw, for its seal: the earliest expiry and the holders among its leases. */
export class BandReading {
  until: number | undefined;
  private readonly holders = new Set<string>();
  /** A free address was seen (or one this claim picked): the band is not used up. */
  open = false;
  /** A lease was taken through a range whose counter the band does not record: a seal could miss its release. */
  foreign = false;

  /** A lease read taken; `counters` are the ranges whose counters the band's seal records. */
  taken(lease: LeaseExpiry, counters: readonly string[]): void {
    const { expiresAt } = lease;
    if (expiresAt !== undefined && (this.until === undefined || expiresAt < this.until)) this.until = expiresAt;
    if (lease.heldFor !== undefined) this.holders.add(lease.heldFor);
    if (lease.range !== undefined && !counters.includes(lease.range)) this.foreign = true;
  }

  sealAt(freed: string, band: Band): UsedUpSeal {
    const holders = this.holders.size > SEAL_TUNING.sealHoldersMax ? 'many' : [...this.holders].map(holderDigest);
    return { freed, shape: shapeOf(band), holders, ...(this.until !== undefined ? { until: this.until } : {}) };
  }
}

/** No seals (a store without them): every "used up" decision reads its bands in bulk. */
export const NO_SEALS: UsedUpSeals = {
  readSeals: async () => new Map(),
  seal: async () => undefined,
};
