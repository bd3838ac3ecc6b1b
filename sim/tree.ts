/**
 * The pool tree's invariants (nested pools and grow on demand), pure checks of the table's items, as
 * invariants.ts's are:
 *
 * - no two live claims of the tree hold overlapping space unless one is the other's ancestor: a claim of a pool lies
 *   in a range of that pool, and a range made from a block claim of another pool (`source`) puts its claims under
 *   that claim; a child range's source claim is live and holds exactly the range's CIDR while the range exists;
 * - growth is bounded: a growing pool holds at most `maxBlocks` ranges a family from its parent, and its parent at most
 *   `maxBlocks` claims a family taken for it.
 */
import { familyBits } from '../shared/core/ip/address.ts';
import { prefixOf, RangeState, type Claim, type Range } from '../shared/core/model.ts';
import { Invariant, type Snapshot, type Violation } from './invariants.ts';
import { parsedAddress, parsedCidr } from './parsed.ts';

/** A growing pool of a scenario: its name, its parent and its bound. */
export interface GrowingPool {
  readonly pool: string;
  readonly parent: string;
  readonly maxBlocks: number;
}

interface Space {
  readonly family: string;
  readonly from: bigint;
  readonly to: bigint;
}

const spaceOfCidr = (text: string): Space => {
  const c = parsedCidr(text);
  const size = 1n << BigInt(familyBits(c.family) - c.prefix);
  return { family: c.family, from: c.base, to: c.base + size - 1n };
};

const spaceOf = (a: Claim['addresses'][number]): Space => {
  if (a.prefixLength !== undefined) return spaceOfCidr(prefixOf(a));
  const v = parsedAddress(a.address);
  return { family: v.family, from: v.value, to: v.value };
};

const overlaps = (x: Space, y: Space): boolean => x.family === y.family && x.from <= y.to && y.from <= x.to;
const inside = (x: Space, y: Space): boolean => x.family === y.family && x.from >= y.from && x.to <= y.to;
const live = (c: Claim, nowMs: number, skewMs: number): boolean =>
  c.expiresAt === undefined || c.expiresAt > nowMs + skewMs;
const claimId = (c: { readonly pool: string; readonly name: string }): string => `${c.pool}/${c.name}`;

/** The claims a claim lies under: the source claim of the range holding it, that claim's, and so on up the tree. */
function ancestorsOf(c: Claim, space: Space, s: Snapshot, claims: ReadonlyMap<string, Claim>): Set<string> {
  const out = new Set<string>();
  let pool = c.pool;
  for (let depth = 0; depth < 8; depth += 1) {
    const range = s.ranges.find((r) => r.pool === pool && r.source && inside(space, spaceOfCidr(r.cidr)));
    const parent = range?.source ? claims.get(`${range.source.pool}/${range.source.claim}`) : undefined;
    if (!parent || out.has(claimId(parent))) break;
    out.add(claimId(parent));
    pool = parent.pool;
  }
  return out;
}

/**
 * No two live claims of different pools overlap unless one lies under the other; every range made from a claim
 * (`source`), Ready or Terminating, has that claim in the table, holding exactly the range's CIDR.
 */
export function checkPoolTree(s: Snapshot, nowMs: number, skewMs: number): Violation[] {
  const out: Violation[] = [];
  const claims = new Map(s.claims.map((c) => [claimId(c), c]));
  for (const r of s.ranges) {
    if (!r.source || (r.state !== RangeState.Ready && r.state !== RangeState.Terminating)) continue;
    const source = claims.get(`${r.source.pool}/${r.source.claim}`);
    if (!source || !source.addresses.some((a) => prefixOf(a) === r.cidr))
      out.push({
        invariant: Invariant.PoolTree,
        detail: `range ${r.pool}/${r.name} (${r.cidr}) is made from claim ${r.source.pool}/${r.source.claim}, which ${source ? `holds ${source.addresses.map(prefixOf).join(', ')} instead` : 'is not in the table'}`,
        subjects: [r.name, r.source.claim, r.cidr],
      });
  }
  const held = s.claims
    .filter((c) => live(c, nowMs, skewMs))
    .flatMap((c) => c.addresses.map((a) => ({ claim: c, space: spaceOf(a), text: prefixOf(a) })));
  // By family, then start: a claim overlaps only those after it that start before its end.
  held.sort((x, y) =>
    x.space.family !== y.space.family
      ? x.space.family < y.space.family
        ? -1
        : 1
      : x.space.from < y.space.from
        ? -1
        : x.space.from > y.space.from
          ? 1
          : 0,
  );
  for (let i = 0; i < held.length && out.length === 0; i += 1) {
    const x = held[i]!;
    for (let j = i + 1; j < held.length; j += 1) {
      const y = held[j]!;
      if (y.space.family !== x.space.family || y.space.from > x.space.to) break;
      if (x.claim.pool === y.claim.pool || !overlaps(x.space, y.space)) continue;
      if (ancestorsOf(x.claim, x.space, s, claims).has(claimId(y.claim))) continue;
      if (ancestorsOf(y.claim, y.space, s, claims).has(claimId(x.claim))) continue;
      out.push({
        invariant: Invariant.PoolTree,
        detail: `live claims ${claimId(x.claim)} (${x.text}) and ${claimId(y.claim)} (${y.text}) overlap, and neither lies under the other`,
        subjects: [x.claim.name, y.claim.name, x.text, y.text],
      });
      break;
    }
  }
  return out;
}

/** Each growing pool holds at most maxBlocks ranges a family from its parent; its parent at most maxBlocks claims a family for it. */
export function checkGrowth(s: Snapshot, growing: readonly GrowingPool[]): Violation[] {
  const out: Violation[] = [];
  for (const g of growing) {
    const counts = new Map<string, { ranges: number; claims: number }>();
    const at = (family: string) => counts.get(family) ?? counts.set(family, { ranges: 0, claims: 0 }).get(family)!;
    for (const r of s.ranges as readonly Range[])
      if (r.pool === g.pool && r.source?.pool === g.parent) at(r.family).ranges += 1;
    for (const c of s.claims)
      if (c.pool === g.parent && c.spec.owner.uid === `pool-${g.pool}`)
        for (const family of new Set(c.addresses.map((a) => a.family))) at(family).claims += 1;
    for (const [family, n] of counts)
      if (n.ranges > g.maxBlocks || n.claims > g.maxBlocks)
        out.push({
          invariant: Invariant.GrowthBounded,
          detail: `pool ${g.pool} grew past its bound of ${g.maxBlocks} ${family} blocks from ${g.parent}: ${n.ranges} ranges made from it, ${n.claims} claims taken for it`,
          subjects: [g.pool],
        });
  }
  return out;
}
