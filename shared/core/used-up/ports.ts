/**
 * The "used up" rule's port: seals on bands read used up, and the freed counters every write that frees an address
 * bumps in its own transaction (the adapter: writes/freed.ts; tests/unit/freed-audit.test.ts checks every write the
 * contract suites make against that rule). The rule itself is in rule.ts.
 */
/** The two bands of a range (KEP-3070): dynamic picks take the upper band first, the lower one only once it is used up. */
export const BandName = { Upper: 'upper', Lower: 'lower' } as const;
export type BandName = (typeof BandName)[keyof typeof BandName];

/**
 * A record that a band of a range was read used up: every address of it held by an unexpired lease, read
 * consistently while the range's freed counters stood at `freed`. Every write that frees an address of the range for
 * anyone (a release, an owner release, a reconciler release, a renewal to an earlier expiry or a first one, a
 * replaced claim's leases held for its owner) bumps one of those counters in its own transaction, and the only other
 * way an address gets free is time: so while the counters still read `freed` and it is before `until`, each address
 * of the band is held (writes/freed.ts says as of when).
 */
export interface UsedUpSeal {
  /**
   * The freed counters when the band was read, of its range and of every range overlapping it (a lease taken through
   * an overlapping range bumps that range's counter when it is freed): one digest of them all (countersOf), so a
   * seal read with other counters, or naming other ranges, does not hold.
   */
  readonly freed: string;
  /** The earliest expiry of the leases read (a TTL, or a reuse delay's end); absent when none expires. */
  readonly until?: number;
  /** What the band was (the range's incarnation, its offsets, the exclusions in it; a digest): a seal of another shape says nothing. */
  readonly shape: string;
  /** Owner identities with a Released lease in the band (free for them), as digests (holderDigest); 'many' past a few. */
  readonly holders: readonly string[] | 'many';
}

/** A range's freed counters and the seals on its bands' parts (by part name: `upper_0`...), read consistently together. */
export interface RangeSeals {
  readonly freed: readonly number[];
  readonly seals: Readonly<Record<string, UsedUpSeal>>;
}

/** The used-up seals of ranges (TableOccupancyStore is the adapter). */
export interface UsedUpSeals {
  /**
   * The freed counters and seals of a pool's ranges: one consistent bulk read (FREED_SHARDS + 1 items a range). With
   * `only` 'seals', the seals items alone (one a range; `freed` left empty), for a decision that keeps the counters
   * it read earlier in its call (withSealsOf).
   */
  readSeals(pool: string, ranges: readonly string[], only?: 'seals'): Promise<ReadonlyMap<string, RangeSeals>>;
  /**
   * Writes the seal of a part of a band of `range`, unconditionally (writes/freed.ts says why that is enough): a seal
   * at counters that have moved since is written too, and no reader trusts it.
   */
  seal(pool: string, range: string, part: string, seal: UsedUpSeal): Promise<void>;
}
