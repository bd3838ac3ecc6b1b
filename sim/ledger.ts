/**
 * The client ledger: what each simulated client was told (every claim answered 201 or 200, every renewal answered
 * 200, every release it sent and every 204), and the checks that hold the world to it. The table-only invariants
 * (invariants.ts) compare the table with itself; these compare it with the answers, so a store that loses what it
 * promised (an early expiry, a claim reported committed that never was, a renewed claim released by the reconciler)
 * breaks one of them even when the table stays self-consistent.
 *
 * A claim is *held* from the answer that told its client so until the first of: the client sends a release for it,
 * its owner's release begins (DELETE /owners/{uid}, which releases it on the client's behalf), its pool's deletion
 * begins, or its expiry as answered (the last renewal's) minus the run's clock skew (a lease's "absent or expired"
 * condition is judged by the writer's clock). The documented allowance is the expiry itself: a client that renews
 * after it has missed its own schedule; a renewal answered 200 makes the claim held again until the new expiry.
 *
 * Times are epoch milliseconds of the run's virtual clock.
 */
import type { Item } from '../shared/adapters/dynamodb/codec.ts';
import { itemToBitmap } from '../shared/adapters/dynamodb/codec.ts';
import { Entity } from '../shared/adapters/dynamodb/keys.ts';
import { Bitmap, addressOfBit, legacyWindow } from '../shared/core/bitmap/bitmap.ts';
import { intervalsSize, mergeIntervals, type Interval } from '../shared/core/base/intervals.ts';
import { hostInterval } from '../shared/core/base/pool-geometry.ts';
import { familyBits, formatAddress } from '../shared/core/ip/address.ts';
import { parsedAddress, parsedCidr } from './parsed.ts';
import {
  capacity,
  hostAt,
  hostOffset,
  isHostOf,
  lastAddress,
  slotFloor,
  slotted,
  type Cidr,
} from '../shared/core/ip/cidr.ts';
import { forEachHeld } from '../shared/core/occupancy/chunk.ts';
import { itemToChunk } from '../shared/adapters/dynamodb/occupancy-store.ts';
import { RangeState } from '../shared/core/model.ts';
import { Invariant, type AnsweredClaim, type Snapshot, type Violation } from './invariants.ts';

interface Held {
  readonly pool: string;
  readonly name: string;
  readonly uid: string;
  readonly owner: string;
  readonly addresses: readonly string[];
  expiresAt: number | undefined;
  toldAtMs: number;
  /** When the client stopped counting on it (release sent, owner or pool released). */
  letGoAtMs: number | undefined;
}

const keyOf = (pool: string, name: string): string => `${pool}/${name}`;

/** What the ledger needs of a claim answer. */
export interface Told {
  readonly claim: AnsweredClaim;
  /** The client received the answer. */
  readonly atMs: number;
  /** The attempt that was answered arrived at its container (for the range-deletion promise). */
  readonly arrivedAtMs: number;
  /** 201: the request created the claim. */
  readonly created: boolean;
}

export class ClientLedger {
  private readonly held = new Map<string, Held>();
  /** The holder the ledger last told about an address (`pool/address`). */
  private readonly holderOf = new Map<string, Held>();
  /** Ranges whose DELETE was answered, with when. */
  private readonly deletedRanges: { pool: string; cidr: Cidr; text: string; atMs: number }[] = [];
  /** Answers recorded. */
  answers = 0;

  constructor(private readonly skewMs: number) {}

  private holding(h: Held, atMs: number): boolean {
    return h.letGoAtMs === undefined && (h.expiresAt === undefined || h.expiresAt - this.skewMs > atMs);
  }

  /** A claim answered 201 or 200 (create), or 200 (renew: `claim` carries the new expiry). */
  told(t: Told): Violation[] {
    this.answers += 1;
    const c = t.claim;
    const key = keyOf(c.pool, c.name);
    const addresses = c.addresses.map((a) => a.address);
    const out: Violation[] = [];
    if (t.created) {
      for (const d of this.deletedRanges) {
        const inside = d.pool === c.pool ? addresses.find((a) => isHostOf(d.cidr, parsedAddress(a))) : undefined;
        if (inside && t.arrivedAtMs > d.atMs) {
          out.push({
            invariant: Invariant.NoClaimInDeletedRange,
            detail: `claim ${c.name} was answered 201 with ${inside} of range ${d.text}, whose DELETE was answered ${Math.round(t.arrivedAtMs - d.atMs)} ms before the request arrived`,
            subjects: [c.name, inside, d.text],
          });
        }
      }
    }
    const previous = this.held.get(key);
    const entry: Held =
      previous && previous.uid === c.uid
        ? previous
        : {
            pool: c.pool,
            name: c.name,
            uid: c.uid,
            owner: c.owner,
            addresses,
            expiresAt: undefined,
            toldAtMs: t.atMs,
            letGoAtMs: undefined,
          };
    entry.expiresAt = c.expiresAt;
    entry.toldAtMs = t.atMs;
    entry.letGoAtMs = undefined;
    this.held.set(key, entry);
    for (const a of addresses) {
      const other = this.holderOf.get(`${c.pool}/${a}`);
      if (other && other.uid !== c.uid && this.holding(other, t.atMs)) {
        out.push({
          invariant: Invariant.NoAddressToldTwice,
          detail: `${a} was told to claim ${c.name} (${c.uid}) while claim ${other.name} (${other.uid}) was told it holds it until ${other.expiresAt === undefined ? 'released' : `${Math.round(other.expiresAt - t.atMs)} ms from now`}`,
          subjects: [a, c.name, other.name],
        });
      }
      this.holderOf.set(`${c.pool}/${a}`, entry);
    }
    return out;
  }

  /** The client sent a release of the claim (or stopped counting on it): from now it may be gone. */
  letGo(pool: string, name: string, atMs: number): void {
    const h = this.held.get(keyOf(pool, name));
    if (h && h.letGoAtMs === undefined) h.letGoAtMs = atMs;
  }

  /** An owner's release began: its claims may be gone from now. */
  letGoOwner(pool: string, owner: string, atMs: number): void {
    for (const h of this.held.values())
      if (h.pool === pool && h.owner === owner && h.letGoAtMs === undefined) h.letGoAtMs = atMs;
  }

  /** A pool's deletion began: its claims may be gone from now. */
  letGoPool(pool: string, atMs: number): void {
    for (const h of this.held.values()) if (h.pool === pool && h.letGoAtMs === undefined) h.letGoAtMs = atMs;
  }

  /** A range's DELETE was answered: no claim answered 201 to a request arriving later may hold one of its addresses. */
  rangeDeleted(pool: string, cidr: string, atMs: number): void {
    this.deletedRanges.push({ pool, cidr: parsedCidr(cidr), text: cidr, atMs });
  }

  /**
   * A release answered 204: the claim's leases went with it in the release's transaction (the address is free at
   * once), so no lease naming that incarnation is left.
   */
  released(pool: string, name: string, leaseOf: (pool: string, address: string) => Item | undefined): Violation[] {
    const h = this.held.get(keyOf(pool, name));
    if (!h) return [];
    const left = h.addresses.filter((a) => {
      const lease = leaseOf(pool, a);
      return lease !== undefined && lease.claimUid === h.uid && lease.state !== 'Released';
    });
    return left.length
      ? [
          {
            invariant: Invariant.ReleasedAddressFree,
            detail: `claim ${name} (${h.uid}) was released (204) and its lease of ${left.join(', ')} is still in the table`,
            subjects: [name, ...left],
          },
        ]
      : [];
  }

  /** A renewal answered 404 (or with a lost claim): a claim still held by the ledger when the request was sent. */
  renewRefused(pool: string, name: string, sentAtMs: number, detail: string): Violation[] {
    const h = this.held.get(keyOf(pool, name));
    if (!h || !this.holding(h, sentAtMs)) return [];
    return [
      {
        invariant: Invariant.HeldClaimStaysHeld,
        detail: `claim ${name} (${h.uid}), told held until ${h.expiresAt === undefined ? 'released' : `${Math.round(h.expiresAt - sentAtMs)} ms after the renewal was sent`}, was refused its renewal: ${detail}`,
        subjects: [name, ...h.addresses],
      },
    ];
  }

  /**
   * Every claim the ledger holds is in the table as that incarnation, with an expiry no earlier than its client was
   * told. Entries nobody holds any more are dropped.
   */
  check(s: Snapshot, nowMs: number): Violation[] {
    const claims = new Map(s.claims.map((c) => [keyOf(c.pool, c.name), c]));
    const out: Violation[] = [];
    for (const [key, h] of this.held) {
      if (!this.holding(h, nowMs)) {
        this.held.delete(key);
        continue;
      }
      const c = claims.get(key);
      if (!c || c.uid !== h.uid) {
        out.push({
          invariant: Invariant.HeldClaimStaysHeld,
          detail: `claim ${h.name} (${h.uid}) was told held ${Math.round(nowMs - h.toldAtMs)} ms ago${h.expiresAt === undefined ? '' : ` until ${Math.round(h.expiresAt - nowMs)} ms from now`} and ${c ? `the table holds ${c.uid} instead` : 'is not in the table'}`,
          subjects: [h.name, ...h.addresses],
        });
      } else if (
        h.expiresAt !== undefined &&
        c.expiresAt !== undefined &&
        c.expiresAt < h.expiresAt - 2 * this.skewMs
      ) {
        // Two writers' clocks differ by up to twice the skew: a renewal in flight on a container whose clock is
        // behind may write an expiry that much earlier than the one its client was last told (skew quick seed 2).
        out.push({
          invariant: Invariant.HeldClaimStaysHeld,
          detail: `claim ${h.name} (${h.uid}) was told it expires at +${Math.round(h.expiresAt - nowMs)} ms; the table says +${Math.round(c.expiresAt - nowMs)} ms`,
          subjects: [h.name, ...h.addresses],
        });
      }
    }
    return out;
  }
}

/**
 * Free positions of each pool family, kept from the commit log, and the moments each family had none. A position is
 * what the pool hands out: a host address of a Ready range, or in a block pool (the range's blockPrefixLength) an
 * aligned block of it, whose lease item is keyed by the block's first address. It is free when it has no lease item
 * at all (an expired or orphaned lease counts as taken until it is removed) and holds no address the pool excludes
 * (an excluded address is never handed out dynamically, nor a block holding one). A RangeFull answer must overlap a
 * moment with none.
 */
/** How long FreeAddresses keeps an address's lease changes: longer than any request (the gateway gives up at 30 s). */
const TOGGLES_KEPT_MS = 60_000;

interface TrackedRange {
  readonly pool: string;
  readonly family: string;
  /** The range's CIDR, slotted in blocks for a block pool's range (capacity, hostAt, hostOffset count positions). */
  readonly cidr: Cidr;
  readonly ready: boolean;
  readonly readySince: number;
}

/** Addresses a position of the range spans: one, or a block's. */
const spanOf = (cidr: Cidr): bigint =>
  cidr.slot === undefined ? 1n : 1n << BigInt(familyBits(cidr.family) - cidr.slot);

export class FreeAddresses {
  private readonly ranges = new Map<string, TrackedRange>();
  /** Per pool: its exclusions (fixed at its creation; a pool created again may have others). */
  private readonly excluded = new Map<string, readonly Cidr[]>();
  private readonly leased = new Map<string, Set<bigint>>();
  /** Per pool family and address: when its lease item came or went, over the last TOGGLES_KEPT_MS. */
  private readonly toggles = new Map<string, Map<bigint, number[]>>();
  private readonly free = new Map<string, bigint>();
  private readonly empty = new Map<string, { from: number; to?: number }[]>();

  private adjust(pool: string, family: string, by: bigint, atMs: number): void {
    const id = `${pool}|${family}`;
    const before = this.free.get(id) ?? 0n;
    const after = before + by;
    this.free.set(id, after);
    const spans = this.empty.get(id) ?? [{ from: -Infinity }];
    this.empty.set(id, spans);
    const open = spans.at(-1);
    if (after === 0n && open?.to !== undefined) spans.push({ from: atMs });
    else if (after > 0n && open && open.to === undefined) open.to = atMs;
  }

  /** Whether the position at `value` holds an address its pool excludes. */
  private isExcluded(r: TrackedRange, value: bigint): boolean {
    const last = value + spanOf(r.cidr) - 1n;
    return (this.excluded.get(r.pool) ?? []).some(
      (c) => c.family === r.family && c.base <= last && lastAddress(c) >= value,
    );
  }

  /** The range's positions holding an excluded address, counted by offset (overlapping exclusions once). */
  private excludedCount(r: TrackedRange): bigint {
    const last = capacity(r.cidr) - 1n;
    const offsets: Interval[] = [];
    for (const c of this.excluded.get(r.pool) ?? []) {
      if (c.family !== r.family || c.base > lastAddress(r.cidr) || lastAddress(c) < r.cidr.base) continue;
      const from = slotFloor(r.cidr, c.base > r.cidr.base ? c.base : r.cidr.base);
      const to = slotFloor(r.cidr, lastAddress(c) < lastAddress(r.cidr) ? lastAddress(c) : lastAddress(r.cidr));
      const clipped: Interval = [from < 0n ? 0n : from, to > last ? last : to];
      if (clipped[0] <= clipped[1]) offsets.push(clipped);
    }
    return intervalsSize(mergeIntervals(offsets));
  }

  private rangeFree(r: TrackedRange): bigint {
    let taken = this.excludedCount(r);
    for (const v of this.leased.get(`${r.pool}|${r.family}`) ?? [])
      if (hostOffset(r.cidr, v) !== undefined && !this.isExcluded(r, v)) taken += 1n;
    return capacity(r.cidr) - taken;
  }

  /** The free positions of the pool's Ready ranges leave the count while `change` runs, and come back after it. */
  private recount(pool: string, atMs: number, change: () => void): void {
    const ready = [...this.ranges.values()].filter((r) => r.ready && r.pool === pool);
    for (const r of ready) this.adjust(r.pool, r.family, -this.rangeFree(r), atMs);
    change();
    for (const r of ready) this.adjust(r.pool, r.family, this.rangeFree(r), atMs);
  }

  /** One committed item change (pools' exclusions, ranges and leases matter). */
  commit(before: Item | undefined, after: Item | undefined, atMs: number): void {
    const item = after ?? before;
    if (!item) return;
    if (item.entity === Entity.Pool) {
      const exclude = ((after?.exclude as string[] | undefined) ?? []).map((text) => parsedCidr(text));
      const old = this.excluded.get(item.name as string) ?? [];
      if (exclude.length || old.length)
        this.recount(item.name as string, atMs, () => this.excluded.set(item.name as string, exclude));
    } else if (item.entity === Entity.Range) {
      const id = `${item.pool as string}/${item.name as string}`;
      const old = this.ranges.get(id);
      if (old?.ready) this.adjust(old.pool, old.family, -this.rangeFree(old), atMs);
      if (!after) {
        this.ranges.delete(id);
        return;
      }
      const cidr = slotted(
        parsedCidr(after.cidr as string),
        after.blockPrefixLength === undefined ? undefined : Number(after.blockPrefixLength),
      );
      if (capacity(cidr) === 0n) return;
      const r: TrackedRange = {
        pool: after.pool as string,
        family: cidr.family,
        cidr,
        ready: after.state === RangeState.Ready,
        readySince: old?.ready && after.state === RangeState.Ready ? old.readySince : atMs,
      };
      this.ranges.set(id, r);
      if (r.ready) this.adjust(r.pool, r.family, this.rangeFree(r), atMs);
      else this.adjust(r.pool, r.family, 0n, atMs);
    } else if (item.entity === Entity.Lease && Boolean(before) !== Boolean(after)) {
      const address = parsedAddress(item.address as string);
      const id = `${item.pool as string}|${address.family}`;
      const set = this.leased.get(id) ?? new Set<bigint>();
      this.leased.set(id, set);
      if (after) set.add(address.value);
      else set.delete(address.value);
      const byAddress = this.toggles.get(id) ?? new Map<bigint, number[]>();
      this.toggles.set(id, byAddress);
      const times = byAddress.get(address.value) ?? [];
      byAddress.set(address.value, times);
      times.push(atMs);
      while (times[0]! < atMs - TOGGLES_KEPT_MS) times.shift();
      const counted = [...this.ranges.values()].some(
        (r) =>
          r.ready &&
          r.pool === item.pool &&
          r.family === address.family &&
          hostOffset(r.cidr, address.value) !== undefined &&
          !this.isExcluded(r, address.value),
      );
      if (counted) this.adjust(item.pool as string, address.family, after ? -1n : 1n, atMs);
    }
  }

  /** A position as the answer names it: an address, or a block with its prefix length. */
  private named(r: TrackedRange, value: bigint): string {
    const address = formatAddress({ family: r.family as 'IPv4' | 'IPv6', value });
    return r.cidr.slot === undefined ? address : `${address}/${r.cidr.slot}`;
  }

  /** The Ready ranges' positions of the pool family that hold no excluded address, in order. */
  private *positions(pool: string, family: string, readyBy = Infinity): Generator<[TrackedRange, bigint]> {
    for (const r of this.ranges.values()) {
      if (!r.ready || r.readySince > readyBy || r.pool !== pool || r.family !== family) continue;
      for (let offset = 0n; offset < capacity(r.cidr); offset += 1n) {
        const v = hostAt(r.cidr, offset);
        if (!this.isExcluded(r, v)) yield [r, v];
      }
    }
  }

  /** The pool's family's free positions now (a few of them, for a violation's detail). */
  freeNow(pool: string, family: string, limit = 5): { count: bigint; some: string[] } {
    const count = this.free.get(`${pool}|${family}`) ?? 0n;
    const some: string[] = [];
    const leased = this.leased.get(`${pool}|${family}`) ?? new Set<bigint>();
    for (const [r, v] of this.positions(pool, family)) {
      if (some.length >= limit) break;
      if (!leased.has(v)) some.push(this.named(r, v));
    }
    return { count, some };
  }

  /**
   * A position of the pool's family that had no lease item for the whole of [fromMs, toMs] (a window within the last
   * TOGGLES_KEPT_MS), in a range Ready all along; undefined when each had one at some moment of it.
   */
  freeThroughout(pool: string, family: string, fromMs: number, toMs: number): string | undefined {
    const id = `${pool}|${family}`;
    const leased = this.leased.get(id) ?? new Set<bigint>();
    const byAddress = this.toggles.get(id);
    for (const [r, v] of this.positions(pool, family, fromMs)) {
      const times = byAddress?.get(v) ?? [];
      if (times.some((t) => t >= fromMs && t <= toMs)) continue;
      // No change within the window: its state then is its state now, undone by each change since.
      const changedSince = times.filter((t) => t > toMs).length;
      if (leased.has(v) === (changedSince % 2 === 1)) return this.named(r, v);
    }
    return undefined;
  }

  /** Whether the pool's family had no free position at some moment of [fromMs, toMs]. */
  hadNone(pool: string, family: string, fromMs: number, toMs: number): boolean {
    const spans = this.empty.get(`${pool}|${family}`) ?? [{ from: -Infinity }];
    return spans.some((s) => s.from <= toMs && (s.to === undefined || s.to >= fromMs));
  }
}

/**
 * A RangeFull answer: its pool and family, what the pool hands out (the error's word), its request's window at the
 * container (epoch ms), and what was asked.
 */
export interface RangeFullAnswer {
  readonly pool: string;
  readonly family: string;
  readonly unit: 'address' | 'block';
  readonly fromMs: number;
  readonly toMs: number;
  readonly what: string;
}

/**
 * A RangeFull answer given over [fromMs, toMs] while one position of its family (a host address, or a block of a
 * block pool) had no lease item all along: the allocator's promise (a "used up" decision reads each position during
 * the request, so one free for the whole request is found; core/allocator/lease/used-up-decision.ts). A violation.
 */
export function checkRangeFull(free: FreeAddresses, answer: RangeFullAnswer): Violation[] {
  const { pool, family, fromMs, toMs, what } = answer;
  const position = free.freeThroughout(pool, family, fromMs, toMs);
  if (position === undefined) return [];
  return [
    {
      invariant: Invariant.RangeFullExact,
      detail: `${what} was answered RangeFull (${family}) while ${position} of pool ${pool} had no lease throughout the request (${Math.round(toMs - fromMs)} ms)`,
      subjects: [what.split(' ')[1] ?? what, position],
    },
  ];
}

/**
 * A RangeFull answer that no moment of its request bears out: the family's free count never reached zero over
 * [fromMs, toMs], though no single position was free all along (checkRangeFull). Not a promise of the allocator, whose
 * reads of many positions are not one snapshot (a release behind its read and a claim ahead of it); the run counts
 * them and prints the first (World's notes).
 */
export function rangeFullWithoutFullMoment(free: FreeAddresses, answer: RangeFullAnswer): string | undefined {
  const { pool, family, unit, fromMs, toMs, what } = answer;
  if (free.hadNone(pool, family, fromMs, toMs)) return undefined;
  const now = free.freeNow(pool, family);
  const position = unit === 'block' ? 'block' : 'host address';
  return `${what} was answered RangeFull (${family}) while pool ${pool} had a free ${family} ${position} at every moment of the request, never the same one throughout (${Math.round(toMs - fromMs)} ms; ${now.count} free at its end: ${now.some.join(', ')})`;
}

/**
 * The stream function's projections during load: each range's occupancy summary bits, and each Ready legacy
 * range's bitmap, equal the lease items of its hosts except for addresses whose lease changed less than `boundMs`
 * ago. Returns the violations and the age of the oldest difference seen (for the printout).
 */
export class ProjectionLag {
  private readonly decoded = new WeakMap<Item, Set<string>>();
  /** Oldest difference seen, ms. */
  maxLagMs = 0;

  constructor(private readonly boundMs: number) {}

  private chunkAddresses(item: Item, family: string): Set<string> {
    let set = this.decoded.get(item);
    if (!set) {
      const chunk = itemToChunk(item);
      const found = new Set<string>();
      forEachHeld(chunk, [[0n, (1n << 128n) - 1n]], (value) =>
        found.add(formatAddress({ family: family as 'IPv4' | 'IPv6', value })),
      );
      set = found;
      this.decoded.set(item, set);
    }
    return set;
  }

  check(
    s: Snapshot,
    chunks: readonly Item[],
    lastChange: ReadonlyMap<string, number>,
    nowMs: number,
    sinceMs: number,
  ): Violation[] {
    const out: Violation[] = [];
    const summaryOf = new Map<string, Set<string>>();
    for (const chunk of chunks) {
      const id = `${chunk.pool as string}|${chunk.family as string}`;
      const set = summaryOf.get(id) ?? new Set<string>();
      for (const a of this.chunkAddresses(chunk, chunk.family as string)) set.add(a);
      summaryOf.set(id, set);
    }
    const leasedOf = new Map<string, string[]>();
    for (const l of s.leases) {
      const list = leasedOf.get(l.pool) ?? [];
      list.push(l.address);
      leasedOf.set(l.pool, list);
    }
    const judge = (
      what: string,
      range: string,
      pool: string,
      leased: ReadonlySet<string>,
      set: ReadonlySet<string>,
      within: (a: string) => boolean,
    ): void => {
      for (const [a, missing] of [
        ...[...leased].filter((x) => !set.has(x)).map((x) => [x, true] as const),
        ...[...set].filter((x) => within(x) && !leased.has(x)).map((x) => [x, false] as const),
      ]) {
        const age = Math.round(nowMs - Math.max(sinceMs, lastChange.get(`${pool}/${a}`) ?? sinceMs));
        if (age > this.maxLagMs) this.maxLagMs = age;
        if (age > this.boundMs && out.length === 0) {
          out.push({
            invariant: Invariant.ProjectionLagBounded,
            detail: `${what} of ${range} ${missing ? 'lacks the bit of lease' : 'has a bit without a lease at'} ${a}, whose lease last changed ${age} ms ago (bound ${this.boundMs} ms)`,
            subjects: [range, a],
          });
        }
      }
    };
    for (const range of s.ranges) {
      const cidr = parsedCidr(range.cidr);
      const hosts = hostInterval(cidr);
      if (!hosts) continue;
      const inside = (a: string): boolean => {
        const x = parsedAddress(a);
        return x.family === cidr.family && x.value >= hosts[0] && x.value <= hosts[1];
      };
      const leased = new Set((leasedOf.get(range.pool) ?? []).filter(inside));
      const summary = new Set([...(summaryOf.get(`${range.pool}|${cidr.family}`) ?? [])].filter(inside));
      judge('occupancy summary', range.name, range.pool, leased, summary, inside);
      if (range.legacy && range.state === RangeState.Ready) {
        const item = s.bitmaps.find((b) => b.pool === range.pool && b.name === range.name);
        if (!item) continue;
        const window = legacyWindow(cidr);
        const set = new Set<string>();
        Bitmap.decode(itemToBitmap(item).data, window).forEachSet((bit) =>
          set.add(formatAddress({ family: cidr.family, value: addressOfBit(cidr, bit) })),
        );
        const first = addressOfBit(cidr, 0);
        const last = addressOfBit(cidr, Number(window) - 1);
        const inWindow = (a: string): boolean => {
          const x = parsedAddress(a);
          return x.family === cidr.family && x.value >= first && x.value <= last;
        };
        judge(
          'bitmap',
          range.name,
          range.pool,
          new Set((leasedOf.get(range.pool) ?? []).filter(inWindow)),
          set,
          inWindow,
        );
      }
    }
    return out;
  }
}
