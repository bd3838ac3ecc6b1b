import type { IpFamily } from '../../core/ip/address.ts';
import type { Item } from './codec.ts';
import { both, hasNotExpired, isReleasedLease, type Condition } from './conditions.ts';
import { keys, leaseSortKey } from './keys.ts';
import { KEY_ATTRIBUTES, type Query, type Table } from './table.ts';

/**
 * Every read of the sharded listing index (GSI1), in one place. Leases and claims are spread over `shards` index
 * partitions by a hash, so no listing partition is hot; a listing reads every shard and merges in sort-key order.
 */
export type Intervals = readonly (readonly [bigint, bigint])[];

/** The sharded listing index: the table, and how many partitions a listing is spread over. */
export interface ShardedIndex {
  readonly table: Table;
  readonly shards: number;
}

/** A family's address intervals of a pool (which must not overlap where leases are counted). */
export interface LeaseSpan {
  readonly pool: string;
  readonly family: IpFamily;
  readonly intervals: Intervals;
}

/** Which page of a partition: after which sort key, within which sort-key bounds, and how many items at most. */
export interface PageWindow {
  readonly after: string | undefined;
  readonly bounds?: readonly [string, string] | undefined;
  readonly limit: number;
}

/** The GSI1 sort-key bounds of a family's address interval. */
export function addressBounds(family: IpFamily, from: bigint, to: bigint): readonly [string, string] {
  return [leaseSortKey(family, from), leaseSortKey(family, to)];
}

/** One page of one index partition after `after`, up to `limit` items; `more` says whether items may remain. */
export async function indexPage(
  table: Table,
  base: Omit<Query, 'sort' | 'limit' | 'start'>,
  window: PageWindow,
): Promise<{ items: Item[]; more: boolean }> {
  const { after, bounds, limit } = window;
  const [, skName] = KEY_ATTRIBUTES[base.index ?? 'table'];
  const sort = bounds
    ? { between: [after !== undefined && after >= bounds[0] ? after : bounds[0], bounds[1]] as const }
    : after !== undefined
      ? { after }
      : undefined;
  const items: Item[] = [];
  let start: Item | undefined;
  do {
    const page = await table.query({
      ...base,
      ...(sort ? { sort } : {}),
      limit: limit + 1,
      ...(start ? { start } : {}),
    });
    // BETWEEN is inclusive: skip the cursor's own item.
    for (const item of page.items) if (after === undefined || (item[skName] as string) > after) items.push(item);
    start = page.lastKey;
  } while (start && items.length <= limit);
  return { items: items.slice(0, limit), more: items.length > limit || start !== undefined };
}

/** Merges one page from every shard of a sharded listing key, in sort-key order. */
export async function mergeShards(
  index: ShardedIndex,
  partitionOf: (shard: number) => string,
  window: PageWindow,
): Promise<{ items: Item[]; more: boolean }> {
  const { table, shards } = index;
  const { limit } = window;
  const pages = await Promise.all(
    Array.from({ length: shards }, (_, shard) =>
      indexPage(table, { index: 'GSI1', partition: partitionOf(shard) }, window),
    ),
  );
  const all = pages.flatMap((p) => p.items).sort((a, b) => ((a.GSI1SK as string) < (b.GSI1SK as string) ? -1 : 1));
  return { items: all.slice(0, limit), more: all.length > limit || pages.some((p) => p.more) };
}

/**
 * One page of a listing over several index partitions (the shards, or one owner partition), merged in sort-key order,
 * with an optional filter and sort-key bounds. Each partition reads at most `limit + 1` items, filtered ones included, so a page costs
 * what an unfiltered one does however few items pass; the page then ends at the frontier, the smallest sort key up to
 * which every partition not read to its end has been read, and `next` is the last key returned, or the frontier when
 * fewer than `limit + 1` items passed before it. So a page the filter emptied still carries a cursor, and paging on
 * reaches every item:
 *
 *   shard 0  a . . d . . g | . .        (read up to g, '.' filtered out)      frontier = min(g, e) = e
 *   shard 1  . b . e |                  (read up to e)                        page: a, b (d and g read again later)
 *   shard 2  . .                        (read to its end)                     next: e
 */
export async function filteredPage(
  table: Table,
  bases: readonly Omit<Query, 'sort' | 'limit' | 'start' | 'filter'>[],
  window: PageWindow & { readonly filter: Condition | undefined },
): Promise<{ items: Item[]; next?: string }> {
  const { after, bounds, limit, filter } = window;
  const sort = bounds
    ? { between: [after !== undefined && after >= bounds[0] ? after : bounds[0], bounds[1]] as const }
    : after !== undefined
      ? { after }
      : undefined;
  const reads = await Promise.all(
    bases.map(async (base) => {
      const [, skName] = KEY_ATTRIBUTES[base.index ?? 'table'];
      const items: Item[] = [];
      let scanned = 0;
      let start: Item | undefined;
      do {
        const page = await table.query({
          ...base,
          ...(sort ? { sort } : {}),
          ...(filter ? { filter } : {}),
          limit: limit + 1 - scanned,
          ...(start ? { start } : {}),
        });
        // BETWEEN is inclusive: skip the cursor's own item.
        items.push(
          ...(after === undefined ? page.items : page.items.filter((item) => (item[skName] as string) > after)),
        );
        scanned += page.scanned;
        start = page.lastKey;
      } while (start && scanned <= limit);
      return { items, skName, frontier: start ? (start[skName] as string) : undefined };
    }),
  );
  const skName = reads[0]?.skName ?? 'SK';
  const frontiers = reads.flatMap((r) => (r.frontier === undefined ? [] : [r.frontier]));
  const frontier = frontiers.length ? frontiers.reduce((a, b) => (b < a ? b : a)) : undefined;
  const sk = (item: Item) => item[skName] as string;
  const known = reads
    .flatMap((r) => r.items)
    .filter((item) => frontier === undefined || sk(item) <= frontier)
    .sort((a, b) => (sk(a) < sk(b) ? -1 : sk(a) > sk(b) ? 1 : 0));
  if (known.length > limit) return { items: known.slice(0, limit), next: sk(known[limit - 1]!) };
  return { items: known, ...(frontier !== undefined ? { next: frontier } : {}) };
}

/** The lease-listing queries of a family's intervals: one per interval and shard. */
function leaseQueries(span: LeaseSpan, shards: number): Query[] {
  const { pool, family, intervals } = span;
  return intervals.flatMap(([from, to]) =>
    Array.from(
      { length: shards },
      (_, shard): Query => ({
        index: 'GSI1',
        partition: keys.leasesListing(pool, family, shard),
        sort: { between: addressBounds(family, from, to) },
      }),
    ),
  );
}

/** Addresses with a lease not expired at `nowMs` in the intervals (sort keys only are read). */
export async function takenAddresses(index: ShardedIndex, span: LeaseSpan, nowMs: number): Promise<bigint[]> {
  const { table, shards } = index;
  const out: bigint[] = [];
  await Promise.all(
    leaseQueries(span, shards).map(async (query) => {
      let start: Item | undefined;
      do {
        const page = await table.query({
          ...query,
          filter: hasNotExpired(nowMs),
          attributes: ['GSI1SK'],
          ...(start ? { start } : {}),
        });
        for (const item of page.items) out.push(BigInt(`0x${item.GSI1SK as string}`));
        start = page.lastKey;
      } while (start);
    }),
  );
  return out;
}

/** Counts leases not expired at `nowMs` in the intervals (which must not overlap); `releasedOnly`: the Released ones. */
export async function countLeases(
  index: ShardedIndex,
  span: LeaseSpan,
  nowMs: number,
  releasedOnly = false,
): Promise<bigint> {
  const { table, shards } = index;
  const filter = releasedOnly ? both(hasNotExpired(nowMs), isReleasedLease()) : hasNotExpired(nowMs);
  const counts = await Promise.all(
    leaseQueries(span, shards).map(async (query) => {
      let count = 0;
      let start: Item | undefined;
      do {
        const page = await table.query({ ...query, filter, countOnly: true, ...(start ? { start } : {}) });
        count += page.count;
        start = page.lastKey;
      } while (start);
      return count;
    }),
  );
  return BigInt(counts.reduce((a, b) => a + b, 0));
}

/** Whether any lease item (expired ones included) lies in the intervals: one item read at most per shard and interval. */
export async function leaseExists(index: ShardedIndex, span: LeaseSpan): Promise<boolean> {
  const { table, shards } = index;
  const pages = await Promise.all(
    leaseQueries(span, shards).map((query) => table.query({ ...query, attributes: ['GSI1SK'], limit: 1 })),
  );
  return pages.some((page) => page.items.length > 0);
}

/** Where a bounded count stands: interval, shard, and the shard's last key read. */
export interface CountPosition {
  i: number;
  s: number;
  k?: Item;
}

/**
 * Counts leases in the intervals, reading about `limit` index items from `position` on: `unexpired` is the count,
 * `scanned` the lease items read per interval (expired ones included), `cost` what was read.
 */
export async function countSlice(
  index: ShardedIndex,
  span: LeaseSpan,
  slice: { readonly nowMs: number; readonly limit: number; readonly from: CountPosition },
): Promise<{ unexpired: number; scanned: number[]; cost: number; next?: CountPosition }> {
  const { table, shards } = index;
  const { pool, family, intervals } = span;
  const { nowMs, limit, from } = slice;
  let position = from;
  const scanned = intervals.map(() => 0);
  let unexpired = 0;
  let cost = 0;
  while (cost < limit && position.i < intervals.length) {
    const [lo, hi] = intervals[position.i]!;
    const page = await table.query({
      index: 'GSI1',
      partition: keys.leasesListing(pool, family, position.s),
      sort: { between: addressBounds(family, lo, hi) },
      filter: hasNotExpired(nowMs),
      countOnly: true,
      limit: Math.max(1, limit - cost),
      ...(position.k ? { start: position.k } : {}),
    });
    unexpired += page.count;
    scanned[position.i]! += page.scanned;
    cost += Math.max(1, page.scanned);
    if (page.lastKey) position = { ...position, k: page.lastKey };
    else if (position.s + 1 < shards) position = { i: position.i, s: position.s + 1 };
    else position = { i: position.i + 1, s: 0 };
  }
  return { unexpired, scanned, cost, ...(position.i < intervals.length ? { next: position } : {}) };
}
