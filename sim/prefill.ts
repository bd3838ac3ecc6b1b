/**
 * A range made full before a run, written straight into the table: for each taken position its claim and lease items,
 * as the API writes them, and the occupancy summary the stream function would have written for those leases
 * (SummaryMirror.settleChunk from absent chunks: a bit per lease item, none expiring, version 1), so the allocator
 * reads it as in production; in legacy mode also the range's bitmap item. Shared by the projection and the
 * comparison, which fill their pools the same way.
 */
import { bitmapToItem, claimToItem, leaseToItem } from '../shared/adapters/dynamodb/codec.ts';
import { chunkToItem } from '../shared/adapters/dynamodb/occupancy-store.ts';
import type { MemoryTable } from '../shared/adapters/memory/memory-table.ts';
import { Bitmap, legacyWindow } from '../shared/core/bitmap/bitmap.ts';
import { formatAddress } from '../shared/core/ip/address.ts';
import { hostAt, type Cidr } from '../shared/core/ip/cidr.ts';
import type { Claim, Owner } from '../shared/core/model.ts';
import { bitOf, chunkIndexOf, emptyChunk, type OccupancyChunk } from '../shared/core/occupancy/chunk.ts';

export interface Prefill {
  readonly memory: MemoryTable;
  readonly pool: string;
  /** The range's positions: its addresses, or its blocks (`prefixLength` set) as `slotted` lists them. */
  readonly cidr: Cidr;
  readonly rangeName: string;
  /** The taken positions, as offsets into `cidr`. */
  readonly offsets: readonly (number | bigint)[];
  readonly owner: Owner;
  readonly nowIso: string;
  readonly shards: number;
  /** A block range's block size: each claim and lease holds a block. */
  readonly prefixLength?: number;
  /** The legacy range's CIDR text: the bitmap item is written too (its window of the offsets). */
  readonly bitmapRange?: string;
}

export async function prefillRange(p: Prefill): Promise<void> {
  const { memory, pool, cidr, rangeName, owner, nowIso } = p;
  const chunks = new Map<bigint, OccupancyChunk>();
  const prefix = p.prefixLength === undefined ? {} : { prefixLength: p.prefixLength };
  for (const [i, o] of p.offsets.entries()) {
    const value = hostAt(cidr, BigInt(o));
    const index = chunkIndexOf(value);
    let chunk = chunks.get(index);
    if (!chunk) chunks.set(index, (chunk = { ...emptyChunk(pool, cidr.family, index), version: 1, asOf: nowIso }));
    chunk.bits.set(bitOf(value));
    const address = formatAddress({ family: cidr.family, value });
    const claim: Claim = {
      pool,
      name: `pre-${i}`,
      uid: `pre-${i}`,
      spec: { owner, ipFamilyPolicy: 'SingleStack', ipFamilies: [], addresses: [] },
      addresses: [{ address, family: cidr.family, range: rangeName, ...prefix }],
      createdAt: nowIso,
      version: 1,
    };
    await memory.write({ kind: 'put', item: claimToItem(claim, p.shards) });
    const lease = { pool, address, family: cidr.family, range: rangeName, claim: claim.name };
    await memory.write({
      kind: 'put',
      item: leaseToItem({ ...lease, claimUid: claim.uid, owner, createdAt: nowIso, ...prefix }, p.shards),
    });
  }
  for (const chunk of chunks.values()) await memory.write({ kind: 'put', item: chunkToItem(chunk) });
  if (p.bitmapRange === undefined) return;
  const window = legacyWindow(cidr);
  const bits = Bitmap.empty(window);
  for (const o of p.offsets) if (BigInt(o) < window) bits.set(Number(o));
  await memory.write({
    kind: 'put',
    item: bitmapToItem({ pool, rangeName, allocation: { range: p.bitmapRange, data: bits.encode(), version: 1 } }),
  });
}
