/**
 * Capacity units by DynamoDB's rules, on the plain items the stores write (MemoryTable's form), sized by the one
 * pricer (aws-emulation/item-size.ts: attribute name bytes + value bytes; numbers by significant digits):
 *
 *   write (put, update)    1 unit per started KB of max(size before, size after)      transactions: x2
 *   delete, check          1 unit per started KB of the size before (at least 1)      transactions: x2
 *   failed condition       billed as if written
 *   index entry            1 unit per started KB of the projected entry, per index whose entry the write adds,
 *                          changes or removes (a key change: a delete and a put, 2 writes); not doubled
 *   GetItem, BatchGetItem  1 unit per started 4 KB of each item (consistent)
 *   Query                  1 unit per started 4 KB of the items read (before filters), halved when eventual
 */
import type { Item } from '../shared/adapters/dynamodb/codec.ts';
import { KEY_ATTRIBUTES, type IndexName, type QueryPage } from '../shared/adapters/dynamodb/table.ts';
import { plainItemSize, readUnits, writeUnits } from '../aws-emulation/item-size.ts';
import { remembered } from './parsed.ts';

/** An item's size by DynamoDB's rules. */
export const itemBytes = (item: Item): number => plainItemSize(item);

/** How a call sizes items: `itemBytes`, or one that remembers each item it sized (`sizing`). */
export type Sizer = (item: Item) => number;

/**
 * A sizer that remembers each item it sized, for one call: a write sizes its items before and after, for the table's
 * units and again for each index entry, and the same objects come back several times. Only for items nobody changes
 * while the call lasts (the stored ones MemoryTable gives out, the call's own operations). `known` answers sizes
 * already taken (of stored items), undefined for the rest.
 */
export function sizing(known?: (item: Item) => number | undefined): Sizer {
  return remembered((item: Item) => known?.(item) ?? itemBytes(item));
}

export function writeUnitsOf(before: Item | undefined, after: Item | undefined, size: Sizer = itemBytes): number {
  return writeUnits(Math.max(before ? size(before) : 0, after ? size(after) : 0));
}

export function readUnitsOf(bytes: number, consistent: boolean): number {
  return readUnits(bytes, consistent);
}

/** Bytes assumed per index entry read by a count-only query (lease and claim entries are 250-400 bytes). */
const COUNTED_ENTRY_BYTES = 300;

/** A query page's read units: sizes of what it returned, scaled to what it read (filters and projections). */
export function queryReadUnits(page: QueryPage, consistent: boolean): number {
  if (page.scanned === 0) return readUnits(0, consistent);
  const returned = page.items.reduce((sum, item) => sum + itemBytes(item), 0);
  const perItem = page.items.length ? Math.max(returned / page.items.length, 100) : COUNTED_ENTRY_BYTES;
  return readUnits(perItem * page.scanned, consistent);
}

const INDEXES: readonly IndexName[] = ['GSI1', 'GSI2', 'GSI3'];
/** GSI3 projects keys only (infra/table.json). */
const KEYS_ONLY: ReadonlySet<IndexName> = new Set(['GSI3']);

function entryOf(
  item: Item | undefined,
  index: IndexName,
  size: Sizer,
): { pk: string; sk: string; bytes: number } | undefined {
  if (!item) return undefined;
  const [pkName, skName] = KEY_ATTRIBUTES[index];
  const pk = item[pkName];
  const sk = item[skName];
  if (typeof pk !== 'string' || typeof sk !== 'string') return undefined;
  const bytes = KEYS_ONLY.has(index) ? itemBytes({ PK: item.PK, SK: item.SK, [pkName]: pk, [skName]: sk }) : size(item);
  return { pk, sk, bytes };
}

/** The index partitions a write's entries land in, with their units. */
export function indexEntries(
  before: Item | undefined,
  after: Item | undefined,
  size: Sizer = itemBytes,
): { partition: string; units: number }[] {
  const out: { partition: string; units: number }[] = [];
  for (const index of INDEXES) {
    const old = entryOf(before, index, size);
    const next = entryOf(after, index, size);
    if (!old && !next) continue;
    if (old && next && old.pk === next.pk && old.sk === next.sk) {
      // A keys-only entry whose keys did not change is not rewritten.
      if (!KEYS_ONLY.has(index))
        out.push({ partition: `${index}|${next.pk}`, units: writeUnits(Math.max(old.bytes, next.bytes)) });
      continue;
    }
    if (old) out.push({ partition: `${index}|${old.pk}`, units: writeUnits(old.bytes) });
    if (next) out.push({ partition: `${index}|${next.pk}`, units: writeUnits(next.bytes) });
  }
  return out;
}
