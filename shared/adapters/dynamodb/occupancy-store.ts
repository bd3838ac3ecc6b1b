import { Bitmap } from '../../core/bitmap/bitmap.ts';
import type { IpFamily } from '../../core/ip/address.ts';
import { CHUNK_SIZE, type OccupancyChunk } from '../../core/occupancy/chunk.ts';
import { ownerIdentity, type LeaseExpiry, type OccupancyStore } from '../../core/occupancy/ports.ts';
import type { RangeSeals, UsedUpSeal, UsedUpSeals } from '../../core/used-up/ports.ts';
import type { Random } from '../../core/ports.ts';
import { cryptoRandom } from '../system.ts';
import type { Item } from './codec.ts';
import { itemExists, itemIsAbsent, both, versionIs } from './conditions.ts';
import { chunkSortKey, Entity, keys, SCHEMA_VERSION } from './keys.ts';
import { queryAll, type Table } from './table.ts';
import { freedKeys, rangeSealsOf, sealsOnlyOf, sealWrite } from './writes/freed.ts';
import { stampRangeGeneration, transactRangeChange } from './writes/range-generation.ts';

/** A chunk's item; the bitmaps in Go's big.Int byte order as the legacy bitmaps (an empty `expiring` is left out). */
export function chunkToItem(chunk: OccupancyChunk): Item {
  const expiring = chunk.expiring.count() > 0 ? { expiring: chunk.expiring.encode() } : {};
  return {
    ...keys.chunk(chunk.pool, chunk.family, chunk.index),
    entity: Entity.Chunk,
    schema: SCHEMA_VERSION,
    pool: chunk.pool,
    family: chunk.family,
    index: chunk.index.toString(),
    bits: chunk.bits.encode(),
    ...expiring,
    used: chunk.bits.count(),
    version: chunk.version,
    asOf: chunk.asOf,
    ...(chunk.historyThrough !== undefined ? { historyThrough: chunk.historyThrough } : {}),
  };
}

export function itemToChunk(item: Item): OccupancyChunk {
  const bytes = (name: string): Uint8Array =>
    item[name] instanceof Uint8Array ? (item[name] as Uint8Array) : new Uint8Array(0);
  return {
    pool: item.pool as string,
    family: item.family as IpFamily,
    index: BigInt(item.index as string),
    bits: Bitmap.decode(bytes('bits'), CHUNK_SIZE),
    expiring: Bitmap.decode(bytes('expiring'), CHUNK_SIZE),
    version: item.version as number,
    asOf: item.asOf as string,
    ...(typeof item.historyThrough === 'number' ? { historyThrough: item.historyThrough } : {}),
  };
}

/**
 * The occupancy summary on the table (one item per chunk, a pool family's chunks in one partition), and the used-up
 * seals of ranges (writes/freed.ts).
 */
export class TableOccupancyStore implements OccupancyStore, UsedUpSeals {
  constructor(
    private readonly table: Table,
    private readonly random: Pick<Random, 'uid'> = cryptoRandom,
  ) {}

  async readChunks(pool: string, family: IpFamily, span: readonly [bigint, bigint]): Promise<OccupancyChunk[]> {
    const items = await queryAll(this.table, {
      partition: keys.occupancy(pool, family),
      sort: { between: [chunkSortKey(family, span[0]), chunkSortKey(family, span[1])] },
    });
    return items.filter((i) => i.entity === Entity.Chunk).map(itemToChunk);
  }

  async getChunk(pool: string, family: IpFamily, index: bigint): Promise<OccupancyChunk | undefined> {
    const item = await this.table.get(keys.chunk(pool, family, index));
    return item ? itemToChunk(item) : undefined;
  }

  async putChunk(chunk: OccupancyChunk, expected: number | 'absent'): Promise<'written' | 'changed'> {
    const condition = expected === 'absent' ? itemIsAbsent() : both(itemExists(), versionIs(expected));
    return (await this.table.write({ kind: 'put', item: chunkToItem(chunk), condition })).ok ? 'written' : 'changed';
  }

  async leaseStates(pool: string, addresses: readonly string[]): Promise<ReadonlyMap<string, LeaseExpiry>> {
    if (addresses.length === 0) return new Map();
    const items = await this.table.batchGet(
      addresses.map((a) => keys.lease(pool, a)),
      ['address', 'entity', 'expiresAt', 'state', 'ownerKind', 'ownerName', 'createdBy', 'range'],
    );
    return new Map(
      items
        .filter((i) => i.entity === Entity.Lease)
        .map((i) => {
          const expiry: LeaseExpiry =
            typeof i.expiresAt === 'number' ? { expiring: true, expiresAt: i.expiresAt } : { expiring: false };
          const heldFor =
            i.state === 'Released'
              ? {
                  heldFor: ownerIdentity({
                    kind: String(i.ownerKind ?? ''),
                    name: String(i.ownerName ?? ''),
                    ...(creatorArnOf(i) !== undefined ? { creatorArn: creatorArnOf(i) } : {}),
                  }),
                }
              : {};
          return [
            i.address as string,
            { ...expiry, ...heldFor, ...(typeof i.range === 'string' ? { range: i.range } : {}) },
          ];
        }),
    );
  }

  async readSeals(pool: string, ranges: readonly string[], only?: 'seals'): Promise<ReadonlyMap<string, RangeSeals>> {
    if (ranges.length === 0) return new Map();
    if (only === 'seals')
      return sealsOnlyOf(pool, ranges, await this.table.batchGet(ranges.map((range) => keys.seals(pool, range))));
    return rangeSealsOf(pool, ranges, await this.table.batchGet(freedKeys(pool, ranges)));
  }

  async seal(pool: string, range: string, part: string, seal: UsedUpSeal): Promise<void> {
    await this.table.write(sealWrite(pool, range, part, seal));
  }

  /**
   * Sets the pool's summarySince under a new range generation: a container keeps its pool view for as long as the
   * generation it was read with stays current (createClaim), so every change of the view changes the generation.
   * A fresh id, as for range changes: two runs that set it in the same millisecond must not write equal values
   * around a range change, or a view read between them would pass for current.
   */
  async markSummarized(pool: string, sinceIso: string): Promise<void> {
    await transactRangeChange(this.table, [
      {
        kind: 'update',
        key: keys.pool(pool),
        update: { setIfAbsent: { summarySince: sinceIso } },
        condition: itemExists(),
      },
      ...stampRangeGeneration(pool, this.random.uid()),
    ]);
  }
}

/** The ARN of the principal that created a lease's claim, from its item (absent: an unsigned request). */
function creatorArnOf(item: Readonly<Record<string, unknown>>): string | undefined {
  const arn = (item.createdBy as { arn?: unknown } | undefined)?.arn;
  return typeof arn === 'string' ? arn : undefined;
}
