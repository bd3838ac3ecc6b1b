import type { Principal } from '../../core/access.ts';
import type { IpFamily } from '../../core/ip/address.ts';
import type { Labels } from '../../core/labels.ts';
import { holdingId, type EndReason, type Holding, type HoldingKind } from '../../core/history/holding.ts';
import type {
  HistoryCursors,
  HistoryMark,
  HistoryPosition,
  HistoryScope,
  HistoryStore,
  HoldingBounds,
  HoldingPage,
  RepairEventRef,
} from '../../core/history/ports.ts';
import type { CursorCodec } from './cursor.ts';
import { historyDaysOf } from '../../core/model.ts';
import type { EventReason } from '../../core/use-cases/reconcile-ports.ts';
import { itemToPool, type Item } from './codec.ts';
import { attributeIs, either, isAbsentOrAbove, isAbsentOrBelow, isAfter, itemIsAbsent } from './conditions.ts';
import { Entity, EVENT_SHARDS, keys, SCHEMA_VERSION, type Key } from './keys.ts';
import { parseAddress } from '../../core/ip/address.ts';
import { chunkIndexOf } from '../../core/occupancy/chunk.ts';
import { queryAll, type Query, type Table } from './table.ts';

/** An ended holding's item: under its address (by time), and in the owner index (GSI2) under its owner uid. */
export function holdingToItem(h: Holding, expiresAtSeconds: number): Item {
  const id = holdingId(h);
  return {
    ...keys.holding(h.pool, h.address, id),
    entity: Entity.Holding,
    schema: SCHEMA_VERSION,
    GSI2PK: keys.historyOwner(h.pool, h.owner.uid),
    GSI2SK: `${h.from}#${h.address}`,
    pool: h.pool,
    address: h.address,
    family: h.family,
    range: h.range,
    kind: h.kind,
    claim: h.claim,
    claimUid: h.claimUid,
    ownerUid: h.owner.uid,
    ownerKind: h.owner.kind,
    ownerName: h.owner.name,
    from: h.from,
    ...(h.to !== undefined ? { to: h.to, toExact: h.toExact ?? true } : {}),
    ...(h.endReason !== undefined ? { endReason: h.endReason } : {}),
    ...(h.expiresAt !== undefined ? { expiresAt: h.expiresAt } : {}),
    ...(h.labels ? { labels: h.labels } : {}),
    ...(h.createdBy ? { createdBy: h.createdBy } : {}),
    ...(h.releasedBy ? { releasedBy: h.releasedBy } : {}),
    ttl: expiresAtSeconds,
  };
}

export function itemToHolding(item: Item): Holding {
  return {
    pool: item.pool as string,
    address: item.address as string,
    family: item.family as IpFamily,
    range: item.range as string,
    kind: item.kind as HoldingKind,
    claim: item.claim as string,
    claimUid: (item.claimUid as string | undefined) ?? '',
    owner: { kind: item.ownerKind as string, name: item.ownerName as string, uid: item.ownerUid as string },
    from: item.from as string,
    ...(typeof item.to === 'string' ? { to: item.to, toExact: item.toExact !== false } : {}),
    ...(typeof item.endReason === 'string' ? { endReason: item.endReason as EndReason } : {}),
    ...(typeof item.expiresAt === 'number' ? { expiresAt: item.expiresAt } : {}),
    ...(item.labels !== undefined ? { labels: item.labels as Labels } : {}),
    ...(item.createdBy !== undefined ? { createdBy: item.createdBy as Principal } : {}),
    ...(item.releasedBy !== undefined ? { releasedBy: item.releasedBy as Principal } : {}),
  };
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The address history on the table (keys.ts: holding, history mark). */
export class TableHistoryStore implements HistoryStore, HistoryCursors {
  constructor(
    private readonly table: Table,
    private readonly cursors: CursorCodec,
  ) {}

  encode(scope: HistoryScope, position: HistoryPosition): string {
    return this.cursors.encode(scope, position);
  }

  decode(scope: HistoryScope, cursor: string): HistoryPosition {
    return this.cursors.decode(scope, cursor, isHistoryPosition);
  }

  async putHolding(holding: Holding, expiresAtSeconds: number): Promise<void> {
    // A redelivered change finds its item with an end no later (the same one, or an earlier bound): nothing to write.
    await this.table.write({
      kind: 'put',
      item: holdingToItem(holding, expiresAtSeconds),
      condition: either(itemIsAbsent(), isAfter('to', holding.to ?? '')),
    });
  }

  async repairEvents(
    pool: string,
    span: { readonly fromMs: number; readonly toMs: number; readonly claimUids?: readonly string[] },
  ): Promise<readonly RepairEventRef[]> {
    const between: [string, string] = [iso(span.fromMs), `${iso(span.toMs)}\uffff`];
    const attributes = ['claimUid', 'reason', 'time', 'principal', 'addresses'];
    const partitions = span.claimUids
      ? [...new Set(span.claimUids)].map((uid) => ({ partition: keys.eventsOfClaim(pool, uid), consistent: true }))
      : Array.from({ length: EVENT_SHARDS }, (_, shard) => ({
          index: 'GSI1' as const,
          partition: keys.eventsListing(pool, shard),
        }));
    const items = (
      await Promise.all(partitions.map((p) => queryAll(this.table, { ...p, sort: { between }, attributes })))
    ).flat();
    return items
      .filter((i) => typeof i.claimUid === 'string' && typeof i.time === 'string')
      .map((i) => ({
        claimUid: i.claimUid as string,
        reason: i.reason as EventReason,
        atMs: Date.parse(i.time as string),
        ...(typeof i.principal === 'string' ? { principal: i.principal } : {}),
        ...(Array.isArray(i.addresses) ? { addresses: i.addresses as string[] } : {}),
      }));
  }

  async historyDays(pool: string): Promise<number | undefined> {
    const item = await this.table.get(keys.pool(pool));
    // A pool being deleted, or gone, keeps no history: nothing would ever read it (a later pool of the name reads
    // only holdings that began after its creation).
    return item && item.state === undefined ? historyDaysOf(itemToPool(item)) : 0;
  }

  async advanceMark(pool: string, throughMs: number): Promise<void> {
    await this.table.write({
      kind: 'update',
      key: keys.historyMark(pool),
      update: { set: { ...markItem(pool), through: throughMs } },
      condition: isAbsentOrBelow('through', throughMs),
    });
  }

  async notePending(pool: string, sinceMs: number, address: string, holding: string): Promise<void> {
    await this.table.write({
      kind: 'update',
      key: keys.historyMark(pool),
      update: { set: { ...markItem(pool), pendingSince: sinceMs, pendingAddress: address, pendingHolding: holding } },
      condition: isAbsentOrAbove('pendingSince', sinceMs),
    });
  }

  async clearPending(pool: string, sinceMs: number): Promise<void> {
    await this.table.write({
      kind: 'update',
      key: keys.historyMark(pool),
      update: { remove: ['pendingSince', 'pendingAddress', 'pendingHolding'] },
      condition: attributeIs('pendingSince', sinceMs),
    });
  }

  async hasHolding(pool: string, address: string, holding: string): Promise<boolean> {
    return (await this.table.get(keys.holding(pool, address, holding))) !== undefined;
  }

  async advanceGapCheck(pool: string, throughMs: number): Promise<void> {
    await this.table.write({
      kind: 'update',
      key: keys.historyMark(pool),
      update: { set: { ...markItem(pool), gapCheckedThrough: throughMs } },
      condition: isAbsentOrBelow('gapCheckedThrough', throughMs),
    });
  }

  async mark(pool: string, near: readonly string[] = []): Promise<HistoryMark | undefined> {
    const chunks = new Map<string, Key>();
    for (const text of near) {
      const address = parseAddress(text);
      const key = keys.chunk(pool, address.family, chunkIndexOf(address.value));
      chunks.set(key.SK, key);
    }
    // Any chunk's mark is true for the whole pool: a few bound the read (a chunk is up to 4 KB, a read unit each).
    const items = await this.table.batchGet(
      [keys.historyMark(pool), ...[...chunks.values()].slice(0, MARK_CHUNKS_READ)],
      ['entity', 'through', 'gapCheckedThrough', 'pendingSince', 'pendingAddress', 'pendingHolding', 'historyThrough'],
    );
    const item = items.find((i) => i.entity === Entity.HistoryMark);
    const marked = items
      .filter((i) => i.entity === Entity.Chunk && typeof i.historyThrough === 'number')
      .map((i) => i.historyThrough as number);
    const mark = item ? markOf(item) : undefined;
    const through = Math.max(mark?.through ?? -Infinity, ...marked);
    if (!mark && marked.length === 0) return undefined;
    return { ...mark, ...(Number.isFinite(through) ? { through } : {}) };
  }

  async marks(): Promise<ReadonlyMap<string, HistoryMark>> {
    const items = await queryAll(this.table, { partition: keys.historyMarks(), consistent: true });
    return new Map(items.map((i) => [i.pool as string, markOf(i)]));
  }

  async addressHoldings(
    pool: string,
    address: string,
    limit: number,
    bounds: HoldingBounds = {},
  ): Promise<HoldingPage> {
    if (isEmpty(bounds)) return { items: [] };
    const page = await this.table.query({
      partition: keys.history(pool, address),
      ...sortWithin(bounds),
      descending: true,
      consistent: true,
      limit,
    });
    const items = page.items
      .filter((i) => bounds.before === undefined || (i.SK as string) < bounds.before)
      .map(itemToHolding);
    return {
      items,
      ...(page.lastKey && items.length ? { next: page.items[page.items.length - 1]!.SK as string } : {}),
    };
  }

  async addressHoldingAfter(pool: string, address: string, after: string): Promise<Holding | undefined> {
    const page = await this.table.query({
      partition: keys.history(pool, address),
      sort: { after },
      consistent: true,
      limit: 1,
    });
    return page.items[0] ? itemToHolding(page.items[0]) : undefined;
  }

  async ownerHoldings(pool: string, ownerUid: string, limit: number, bounds: HoldingBounds = {}): Promise<HoldingPage> {
    if (isEmpty(bounds)) return { items: [] };
    const page = await this.table.query({
      index: 'GSI2',
      partition: keys.historyOwner(pool, ownerUid),
      ...sortWithin(bounds),
      descending: true,
      limit,
    });
    const items = page.items
      .filter((i) => bounds.before === undefined || (i.GSI2SK as string) < bounds.before)
      .map(itemToHolding);
    return {
      items,
      ...(page.lastKey && items.length ? { next: page.items[page.items.length - 1]!.GSI2SK as string } : {}),
    };
  }
}

/**
 * A holding listing's key condition. Both sort keys start with the holding's `from` (ISO time), so "began at or after
 * `since`" is a key bound: an earlier pool's holdings under the same name are never read, not only never shown.
 * BETWEEN includes its upper end, which `before` excludes: the caller drops that one item.
 */
function sortWithin(bounds: HoldingBounds): Pick<Query, 'sort'> {
  if (bounds.since !== undefined && bounds.before !== undefined)
    return { sort: { between: [bounds.since, bounds.before] } };
  if (bounds.since !== undefined) return { sort: { after: bounds.since } };
  if (bounds.before !== undefined) return { sort: { before: bounds.before } };
  return {};
}

/** Bounds no holding lies in (DynamoDB refuses a BETWEEN whose upper bound is below its lower one). */
function isEmpty(bounds: HoldingBounds): boolean {
  return bounds.since !== undefined && bounds.before !== undefined && bounds.before <= bounds.since;
}

/** Most summary chunks a history read looks at for the pool's mark. */
export const MARK_CHUNKS_READ = 16;

const markItem = (pool: string) => ({ entity: Entity.HistoryMark, schema: SCHEMA_VERSION, pool });

function markOf(item: Item): HistoryMark {
  const number = (name: string) => (typeof item[name] === 'number' ? { [name]: item[name] as number } : {});
  const text = (name: string) => (typeof item[name] === 'string' ? { [name]: item[name] as string } : {});
  return {
    ...number('through'),
    ...number('gapCheckedThrough'),
    ...number('pendingSince'),
    ...text('pendingAddress'),
    ...text('pendingHolding'),
  };
}

function isHistoryPosition(value: unknown): value is HistoryPosition {
  const v = value as { k?: unknown; n?: unknown } | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.k === 'string' &&
    v.k.length <= 1024 &&
    (v.n === undefined || (typeof v.n === 'string' && v.n.length <= 64))
  );
}
