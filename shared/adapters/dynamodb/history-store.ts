import type { Principal } from '../../core/access.ts';
import type { IpFamily } from '../../core/ip/address.ts';
import type { Labels } from '../../core/labels.ts';
import { holdingId, type EndReason, type Holding, type HoldingKind } from '../../core/history/holding.ts';
import type { HistoryCursors, HistoryMark, HistoryPosition, HistoryScope, HistoryStore, HoldingPage, RepairEventRef } from '../../core/history/ports.ts';
import type { CursorCodec } from './cursor.ts';
import { historyDaysOf } from '../../core/model.ts';
import type { EventReason } from '../../core/reconciler/ports.ts';
import { itemToPool, type Item } from './codec.ts';
import { both, either, isAbsentOrBelow, isAfter, itemExists, itemIsAbsent } from './conditions.ts';
import { Entity, keys, SCHEMA_VERSION } from './keys.ts';
import { queryAll, type Table } from './table.ts';

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
  constructor(private readonly table: Table, private readonly cursors: CursorCodec) {}

  encode(scope: HistoryScope, position: HistoryPosition): string {
    return this.cursors.encode(scope, position);
  }

  decode(scope: HistoryScope, cursor: string): HistoryPosition {
    return this.cursors.decode(scope, cursor, isHistoryPosition);
  }

  async putHolding(holding: Holding, expiresAtSeconds: number): Promise<void> {
    // A redelivered change finds its item with an end no later (the same one, or an earlier bound): nothing to write.
    await this.table.write({ kind: 'put', item: holdingToItem(holding, expiresAtSeconds), condition: either(itemIsAbsent(), isAfter('to', holding.to ?? '')) });
  }

  async repairEvents(pool: string, fromMs: number, toMs: number): Promise<readonly RepairEventRef[]> {
    const items = await queryAll(this.table, { partition: keys.events(pool), sort: { between: [iso(fromMs), `${iso(toMs)}\uffff`] }, consistent: true, attributes: ['claimUid', 'reason', 'time', 'principal', 'addresses'] });
    return items
      .filter((i) => typeof i.claimUid === 'string' && typeof i.time === 'string')
      .map((i) => ({ claimUid: i.claimUid as string, reason: i.reason as EventReason, atMs: Date.parse(i.time as string), ...(typeof i.principal === 'string' ? { principal: i.principal } : {}), ...(Array.isArray(i.addresses) ? { addresses: i.addresses as string[] } : {}) }));
  }

  async historyDays(pool: string): Promise<number | undefined> {
    const item = await this.table.get(keys.pool(pool));
    return item ? historyDaysOf(itemToPool(item)) : undefined;
  }

  async advanceMark(pool: string, mark: HistoryMark): Promise<void> {
    await this.table.write({
      kind: 'update',
      key: keys.historyMark(pool),
      update: { set: { entity: Entity.HistoryMark, schema: SCHEMA_VERSION, pool, through: mark.through, lagMs: mark.lagMs, writtenAt: mark.writtenAt } },
      condition: isAbsentOrBelow('through', mark.through),
    });
  }

  async advanceGapCheck(pool: string, throughMs: number): Promise<void> {
    await this.table.write({ kind: 'update', key: keys.historyMark(pool), update: { set: { gapCheckedThrough: throughMs } }, condition: both(itemExists(), isAbsentOrBelow('gapCheckedThrough', throughMs)) });
  }

  async mark(pool: string): Promise<HistoryMark | undefined> {
    const item = await this.table.get(keys.historyMark(pool));
    return item ? markOf(item) : undefined;
  }

  async marks(): Promise<ReadonlyMap<string, HistoryMark>> {
    const items = await queryAll(this.table, { partition: keys.historyMarks(), consistent: true });
    return new Map(items.map((i) => [i.pool as string, markOf(i)]));
  }

  async addressHoldings(pool: string, address: string, limit: number, before?: string): Promise<HoldingPage> {
    const page = await this.table.query({ partition: keys.history(pool, address), ...(before !== undefined ? { sort: { before } } : {}), descending: true, consistent: true, limit });
    const items = page.items.map(itemToHolding);
    return { items, ...(page.lastKey && items.length ? { next: page.items[page.items.length - 1]!.SK as string } : {}) };
  }

  async addressHoldingAfter(pool: string, address: string, after: string): Promise<Holding | undefined> {
    const page = await this.table.query({ partition: keys.history(pool, address), sort: { after }, consistent: true, limit: 1 });
    return page.items[0] ? itemToHolding(page.items[0]) : undefined;
  }

  async ownerHoldings(pool: string, ownerUid: string, limit: number, before?: string): Promise<HoldingPage> {
    const page = await this.table.query({ index: 'GSI2', partition: keys.historyOwner(pool, ownerUid), ...(before !== undefined ? { sort: { before } } : {}), descending: true, limit });
    const items = page.items.map(itemToHolding);
    return { items, ...(page.lastKey && items.length ? { next: page.items[page.items.length - 1]!.GSI2SK as string } : {}) };
  }
}

function markOf(item: Item): HistoryMark {
  return { through: item.through as number, lagMs: (item.lagMs as number | undefined) ?? 0, writtenAt: (item.writtenAt as number | undefined) ?? 0, ...(typeof item.gapCheckedThrough === 'number' ? { gapCheckedThrough: item.gapCheckedThrough } : {}) };
}

function isHistoryPosition(value: unknown): value is HistoryPosition {
  const v = value as { k?: unknown; n?: unknown } | null;
  return typeof v === 'object' && v !== null && typeof v.k === 'string' && v.k.length <= 1024 && (v.n === undefined || (typeof v.n === 'string' && v.n.length <= 64));
}
