import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { itemSize, utf8Length, valueSize, type WireItem } from '../../aws-emulation/item-size.ts';
import type { TableSchema } from './schema.ts';

/** What the ledger remembers of a stored item: its size, and for each index its key and entry size (if it is in it). */
export interface LedgerEntry {
  readonly size: number;
  /** Per index of the schema: `pk\u0000sk` of the entry, or undefined when the item is not in the index. */
  readonly indexKeys: readonly (string | undefined)[];
  readonly indexSizes: readonly number[];
}

interface PartitionStats {
  count: number;
  bytes: number;
}

const SEP = '\u0000';

/**
 * The sizes of the items stored in the benchmark's tables, learnt from every write that goes through a metered
 * client (set-up writes included). DynamoDB bills a write on the larger of the item before and after, a delete or a
 * failed condition on the item that was there, and an index write on the entry it changes: none of that is in the
 * request, so the meter looks it up here. Per partition totals size the items a filtered or projected Query reads
 * without returning them.
 */
export class SizeLedger {
  private readonly items = new Map<string, LedgerEntry>();
  private readonly partitions = new Map<string, PartitionStats>();

  constructor(private readonly schema: TableSchema) {}

  keyOf(table: string, key: WireItem): string {
    return `${table}${SEP}${key[this.schema.pk]?.S ?? ''}${SEP}${key[this.schema.sk]?.S ?? ''}`;
  }

  get(table: string, key: WireItem): LedgerEntry | undefined {
    return this.items.get(this.keyOf(table, key));
  }

  /** The entry an item would have once written. */
  entryOf(item: WireItem): LedgerEntry {
    const size = itemSize(item);
    const indexKeys: (string | undefined)[] = [];
    const indexSizes: number[] = [];
    for (const index of this.schema.indexes) {
      const pk = item[index.pk]?.S;
      const sk = item[index.sk]?.S;
      if (pk === undefined || sk === undefined) {
        indexKeys.push(undefined);
        indexSizes.push(0);
        continue;
      }
      indexKeys.push(`${pk}${SEP}${sk}`);
      indexSizes.push(
        index.projection === 'KEYS_ONLY'
          ? this.keysSize(item, [this.schema.pk, this.schema.sk, index.pk, index.sk])
          : size,
      );
    }
    return { size, indexKeys, indexSizes };
  }

  private keysSize(item: WireItem, names: readonly string[]): number {
    let size = 0;
    for (const name of new Set(names)) {
      const value: AttributeValue | undefined = item[name];
      if (value !== undefined) size += utf8Length(name) + valueSize(value);
    }
    return size;
  }

  /** Records the item now stored under `key` (undefined: deleted). */
  set(table: string, key: WireItem, entry: LedgerEntry | undefined): void {
    const id = this.keyOf(table, key);
    const old = this.items.get(id);
    if (old) this.account(table, key, old, -1);
    if (entry) {
      this.items.set(id, entry);
      this.account(table, key, entry, 1);
    } else {
      this.items.delete(id);
    }
  }

  private account(table: string, key: WireItem, entry: LedgerEntry, sign: 1 | -1): void {
    this.bump(`${table}${SEP}${SEP}${key[this.schema.pk]?.S ?? ''}`, entry.size, sign);
    entry.indexKeys.forEach((indexKey, i) => {
      if (indexKey === undefined) return;
      const pk = indexKey.slice(0, indexKey.indexOf(SEP));
      this.bump(`${table}${SEP}${this.schema.indexes[i]!.name}${SEP}${pk}`, entry.indexSizes[i]!, sign);
    });
  }

  private bump(id: string, bytes: number, sign: 1 | -1): void {
    const stats = this.partitions.get(id) ?? { count: 0, bytes: 0 };
    stats.count += sign;
    stats.bytes += sign * bytes;
    if (stats.count <= 0) this.partitions.delete(id);
    else this.partitions.set(id, stats);
  }

  /** Average entry size of a table or index partition (undefined when nothing is known of it). */
  averageSize(table: string, index: string | undefined, pk: string): number | undefined {
    const stats = this.partitions.get(`${table}${SEP}${index ?? ''}${SEP}${pk}`);
    return stats && stats.count > 0 ? stats.bytes / stats.count : undefined;
  }

  /** Average item size over a whole table (a Scan's estimate for items it filters out). */
  averageTableSize(table: string): number | undefined {
    let count = 0;
    let bytes = 0;
    for (const [id, stats] of this.partitions) {
      if (!id.startsWith(`${table}${SEP}${SEP}`)) continue;
      count += stats.count;
      bytes += stats.bytes;
    }
    return count > 0 ? bytes / count : undefined;
  }

  /** Forgets a table's items (the harness drops tables between runs). */
  forgetTable(table: string): void {
    for (const id of this.items.keys()) if (id.startsWith(`${table}${SEP}`)) this.items.delete(id);
    for (const id of this.partitions.keys()) if (id.startsWith(`${table}${SEP}`)) this.partitions.delete(id);
  }
}
