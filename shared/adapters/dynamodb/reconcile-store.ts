// Over 300 lines: the ReconcileStore adapter, one method per port method (24); it shrinks with the port's split into role ports.
import { createHash } from 'node:crypto';
import { IpFamily } from '../../core/ip/address.ts';
import { NotReadyError } from '../../core/errors.ts';
import { releasedLease, type Claim, type Hold, type Lease, type PoolView, type Range } from '../../core/model.ts';
import type { Page } from '../../core/ports.ts';
import {
  EVENT_RETENTION_MS,
  type BitmapRepair,
  type Checkpoint,
  type CountSlice,
  type DriftRecord,
  type ExpiredRef,
  type IpamEvent,
  type PoolViewList,
  type ReconcileStore,
  type SweepPage,
  type UsageRecord,
} from '../../core/use-cases/reconcile-ports.ts';
import {
  bitmapToItem,
  eventToItem,
  itemToClaim,
  itemToEvent,
  itemToLease,
  leaseToItem,
  newEventId,
  type Item,
} from './codec.ts';
import {
  bitmapIs,
  both,
  claimUidIs,
  createdNoLaterThan,
  hasExpired,
  hasNoChildren,
  hasNoConsumers,
  belongsToClaim,
  isFreeAt,
  isReleasedLease,
  itemExists,
  itemIsAbsent,
  versionIs,
  type Condition,
} from './conditions.ts';
import type { CursorCodec } from './cursor.ts';
import { countSlice, leaseExists, type CountPosition, type Intervals } from './index-reads.ts';
import { Entity, EVENT_SHARDS, EXPIRY_SHARDS, keys, SCHEMA_VERSION } from './keys.ts';
import type { TablePoolStore } from './pool-store.ts';
import type { Table, WriteOp } from './table.ts';
import { tombstoneItem, tombstonesSince } from './tombstones.ts';
import { dropFreed, freedBumps } from './writes/freed.ts';
import { releaseWithRetries } from './writes/release.ts';
import { endReasonOfRepair } from '../../core/history/recorder.ts';
import type { EndReason } from '../../core/history/holding.ts';
import { leaseRestore } from './writes/restore.ts';

/** Width of the expiry part of GSI3SK (keys.expirySort). */
const EXPIRY_WIDTH = 15;

/** The stages of the sweep inside one pool: claims by shard, then IPv4 leases by shard, then IPv6 leases by shard. */
interface SweepPosition {
  /** Pool. */
  p: string;
  /** Stage index: [0, shards) claims, [shards, 2 shards) IPv4 leases, [2 shards, 3 shards) IPv6 leases. */
  i: number;
  /** Last GSI1SK read in the stage's partition. */
  a?: string;
}

function isSweepPosition(value: unknown): value is SweepPosition {
  const v = value as SweepPosition;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.p === 'string' &&
    Number.isInteger(v.i) &&
    (v.a === undefined || typeof v.a === 'string')
  );
}

/** A count cursor of this engine: key attributes are plain strings (an older cursor, or a damaged one, restarts its shard). */
function countPositionOf(cursor: string | undefined): CountPosition {
  if (cursor === undefined) return { i: 0, s: 0 };
  const parsed = JSON.parse(cursor) as CountPosition;
  const plain = parsed.k === undefined || Object.values(parsed.k).every((v) => typeof v === 'string');
  return plain ? parsed : { i: parsed.i, s: parsed.s };
}

/** The reconciler's reads and repairs on the table. Every repair is conditional and writes its event in the same transaction. */
export class TableReconcileStore implements ReconcileStore {
  readonly expiryShards = EXPIRY_SHARDS;

  constructor(
    private readonly table: Table,
    private readonly shards: number,
    private readonly cursors: CursorCodec,
    private readonly pools: TablePoolStore,
  ) {}

  // ---- reads ----

  async expiredRefs(
    bucket: { readonly hour: number; readonly shard: number },
    read: { readonly cutoffMs: number; readonly limit: number; readonly after?: string },
  ): Promise<{ refs: ExpiredRef[]; next?: string }> {
    const { hour, shard } = bucket;
    const { cutoffMs, limit, after } = read;
    // GSI3SK starts with the zero-padded expiry, so "sort key below the padded cutoff + 1" is "expired at the cutoff":
    // the query reads only expired entries, however many live ones share the bucket.
    const upper = String(cutoffMs + 1).padStart(EXPIRY_WIDTH, '0');
    const page = await this.table.query({
      index: 'GSI3',
      partition: keys.expiryBucket(hour * 3_600_000, shard),
      sort: { before: upper },
      limit,
      ...(after !== undefined ? { start: JSON.parse(after) as Item } : {}),
    });
    const refs: ExpiredRef[] = [];
    for (const item of page.items) {
      const [, pool, ...rest] = (item.GSI3SK as string).split('#');
      const id = rest.join('#');
      if (pool === undefined || id === '') continue;
      const pk = item.PK as string;
      if (pk.startsWith('CLAIM#')) refs.push({ kind: 'claim', pool, name: id });
      else if (pk.startsWith('LEASE#')) refs.push({ kind: 'lease', pool, address: id });
    }
    return { refs, ...(page.lastKey ? { next: JSON.stringify(page.lastKey) } : {}) };
  }

  async getClaims(refs: readonly { pool: string; name: string }[]): Promise<Claim[]> {
    return (await this.table.batchGet(refs.map((r) => keys.claim(r.pool, r.name))))
      .filter((i) => i.entity === Entity.Claim)
      .map(itemToClaim);
  }

  async getLeases(refs: readonly { pool: string; address: string }[]): Promise<Lease[]> {
    return (await this.table.batchGet(refs.map((r) => keys.lease(r.pool, r.address))))
      .filter((i) => i.entity === Entity.Lease)
      .map(itemToLease);
  }

  async listPoolViews(): Promise<PoolViewList> {
    const views: PoolView[] = [];
    let start: Item | undefined;
    do {
      const page = await this.table.query({
        index: 'GSI1',
        partition: keys.poolsListing(),
        ...(start ? { start } : {}),
      });
      for (const item of page.items) {
        const view = await this.pools.getPoolView(item.name as string);
        if (view) views.push(view);
      }
      start = page.lastKey;
    } while (start);
    return views;
  }

  async listEvents(pool: string, sinceIso: string, limit: number, cursor?: string): Promise<Page<IpamEvent>> {
    const listing = ['events', pool];
    const before =
      cursor === undefined
        ? undefined
        : this.cursors.decode(listing, cursor, (v): v is { k: string } => typeof (v as { k?: unknown })?.k === 'string')
            .k;
    // A cursor older than the retention window points before its start: nothing of that listing is left to read.
    if (before !== undefined && before <= sinceIso) return { items: [] };
    // Newest first from each listing shard (the index's sort key is the event's time and id, unique across shards), then
    // merged: the newest `limit` of the shards' newest `limit + 1` are the newest of the pool. The time bound in the
    // key condition leaves out events whose TTL deletion is still pending.
    const shards = await Promise.all(
      Array.from({ length: EVENT_SHARDS }, async (_, shard) => {
        const items: Item[] = [];
        let start: Item | undefined;
        do {
          const page = await this.table.query({
            index: 'GSI1',
            partition: keys.eventsListing(pool, shard),
            sort: { between: [sinceIso, before ?? '\uffff'] },
            descending: true,
            limit: limit + 1,
            ...(start ? { start } : {}),
          });
          for (const item of page.items) if (before === undefined || (item.GSI1SK as string) < before) items.push(item);
          start = page.lastKey;
        } while (start && items.length <= limit);
        return { items, more: start !== undefined };
      }),
    );
    const items = shards.flatMap((s) => s.items).sort((a, b) => ((a.GSI1SK as string) < (b.GSI1SK as string) ? 1 : -1));
    const page = items.slice(0, limit);
    const more = items.length > limit || shards.some((s) => s.more);
    return {
      items: page.map(itemToEvent),
      ...(more && page.length
        ? { nextCursor: this.cursors.encode(listing, { k: page[page.length - 1]!.GSI1SK as string }) }
        : {}),
    };
  }

  async getCheckpoint<T>(name: string): Promise<Checkpoint<T> | undefined> {
    const item = await this.table.get(keys.checkpoint(name));
    return item ? { value: item.value as T, version: item.version as number } : undefined;
  }

  async saveCheckpoint<T>(name: string, value: T, expectedVersion: number | undefined): Promise<boolean> {
    return this.putVersioned(
      { ...keys.checkpoint(name), entity: Entity.Checkpoint, schema: SCHEMA_VERSION, name, value },
      expectedVersion,
    );
  }

  async sweep(cursor: string | undefined, limit: number): Promise<SweepPage> {
    let position: SweepPosition | undefined;
    if (cursor !== undefined) {
      const parsed: unknown = JSON.parse(cursor);
      position = isSweepPosition(parsed) ? parsed : undefined;
    }
    position ??= await this.poolAfter(undefined);
    const claims: Claim[] = [];
    const leases: Lease[] = [];
    while (position !== undefined && claims.length + leases.length < limit) {
      const { partition, kind } = this.sweepPartition(position);
      const page = await this.table.query({
        index: 'GSI1',
        partition,
        ...(position.a !== undefined ? { sort: { after: position.a } } : {}),
        limit: limit - claims.length - leases.length,
      });
      for (const item of page.items) {
        if (kind === 'claims' && item.entity === Entity.Claim) claims.push(itemToClaim(item));
        if (kind === 'leases' && item.entity === Entity.Lease) leases.push(itemToLease(item));
      }
      if (page.lastKey && page.items.length)
        position = { ...position, a: page.items[page.items.length - 1]!.GSI1SK as string };
      else if (position.i + 1 < 3 * this.shards) position = { p: position.p, i: position.i + 1 };
      else position = await this.poolAfter(position.p);
    }
    return { claims, leases, ...(position !== undefined ? { next: JSON.stringify(position) } : {}) };
  }

  leaseExists(pool: string, family: IpFamily, intervals: Intervals): Promise<boolean> {
    return leaseExists({ table: this.table, shards: this.shards }, { pool, family, intervals });
  }

  async countSlice(
    span: { readonly pool: string; readonly family: IpFamily; readonly intervals: Intervals },
    page: { readonly nowMs: number; readonly limit: number; readonly cursor?: string },
  ): Promise<CountSlice> {
    const { nowMs, limit, cursor } = page;
    const slice = await countSlice({ table: this.table, shards: this.shards }, span, {
      nowMs,
      limit,
      from: countPositionOf(cursor),
    });
    return {
      unexpired: slice.unexpired,
      scanned: slice.scanned,
      cost: slice.cost,
      ...(slice.next ? { cursor: JSON.stringify(slice.next) } : {}),
    };
  }

  async getUsage(pool: string): Promise<Map<string, Checkpoint<UsageRecord>>> {
    let start: Item | undefined;
    const out = new Map<string, Checkpoint<UsageRecord>>();
    do {
      const page = await this.table.query({
        partition: keys.usagePartition(pool),
        consistent: true,
        ...(start ? { start } : {}),
      });
      for (const i of page.items)
        if (i.entity === Entity.Usage)
          out.set(i.range as string, { value: i.record as UsageRecord, version: i.version as number });
      start = page.lastKey;
    } while (start);
    return out;
  }

  async saveUsage(
    pool: string,
    rangeName: string,
    record: UsageRecord,
    expectedVersion: number | undefined,
  ): Promise<boolean> {
    return this.putVersioned(
      { ...keys.usage(pool, rangeName), entity: Entity.Usage, schema: SCHEMA_VERSION, pool, range: rangeName, record },
      expectedVersion,
    );
  }

  async getDriftRecord(pool: string, rangeName: string): Promise<Checkpoint<DriftRecord> | undefined> {
    const item = await this.table.get(keys.strikes(pool, rangeName));
    if (!item) return undefined;
    const value: DriftRecord = {
      strikes: (item.strikes as Record<string, number> | undefined) ?? {},
      checkedCycle: (item.checkedCycle as number | undefined) ?? -1,
      comparedAt: (item.comparedAt as number | undefined) ?? 0,
      observedAt: (item.observedAt as number | undefined) ?? 0,
      ...(item.checking ? { checking: item.checking as { offset: number } } : {}),
    };
    return { value, version: item.version as number };
  }

  async saveDriftRecord(
    pool: string,
    rangeName: string,
    record: DriftRecord,
    expectedVersion: number | undefined,
  ): Promise<boolean> {
    return this.putVersioned(
      {
        ...keys.strikes(pool, rangeName),
        entity: Entity.Strikes,
        schema: SCHEMA_VERSION,
        pool,
        range: rangeName,
        ...record,
      },
      expectedVersion,
    );
  }

  /** Puts an item at the next version if it is still at `expectedVersion` (undefined: absent); false when someone else moved it. */
  private async putVersioned(item: Item, expectedVersion: number | undefined): Promise<boolean> {
    const condition = expectedVersion === undefined ? itemIsAbsent() : versionIs(expectedVersion);
    return (await this.table.write({ kind: 'put', item: { ...item, version: (expectedVersion ?? 0) + 1 }, condition }))
      .ok;
  }

  async repairBitmap(repair: BitmapRepair, events: readonly IpamEvent[]): Promise<'written' | 'changed'> {
    const verdicts = await this.table.transact([
      // The bitmap exactly as read: a mirror write or a legacy allocation in between makes this a no-op.
      { kind: 'put', item: bitmapToItem(repair), condition: bitmapIs(repair.expected) },
      // A bit is set only for a lease that still exists, and cleared only for one that still does not: an allocation
      // landing meanwhile cancels the whole write, and its own stream record sets its bit.
      ...repair.leasesPresent.map(
        (a): WriteOp => ({ kind: 'check', key: keys.lease(repair.pool, a), condition: itemExists() }),
      ),
      ...repair.leasesAbsent.map(
        (a): WriteOp => ({ kind: 'check', key: keys.lease(repair.pool, a), condition: itemIsAbsent() }),
      ),
      ...events.map((e) => eventPut(e)),
    ]);
    return verdicts ? 'changed' : 'written';
  }

  async removeBitmap(
    pool: string,
    rangeName: string,
    version: number,
    event: IpamEvent,
  ): Promise<'removed' | 'changed'> {
    const verdicts = await this.table.transact([
      { kind: 'delete', key: keys.bitmap(pool, rangeName), condition: bitmapIs({ version }) },
      { kind: 'delete', key: keys.strikes(pool, rangeName) },
      eventPut(event),
    ]);
    return verdicts ? 'changed' : 'removed';
  }

  // ---- repairs: each conditional, each with its event in the same transaction ----

  releaseExpiredClaim(claim: Claim, cutoffMs: number, event: IpamEvent, hold?: Hold): Promise<'released' | 'changed'> {
    return this.release(
      claim,
      // Never one with consumers: it is held until the last one leaves, whatever expiry it carries.
      both(claimUidIs(claim.uid), versionIs(claim.version), hasExpired(cutoffMs), hasNoConsumers()),
      event,
      hold,
    );
  }

  releaseClaim(
    claim: Claim,
    event: IpamEvent,
    hold?: Hold,
    options: { readonly unconsumed?: boolean } = {},
  ): Promise<'released' | 'changed'> {
    // `unconsumed`: not a claim that has consumers (an owner's release leaves those to their last consumer).
    return this.release(
      claim,
      options.unconsumed ? both(claimUidIs(claim.uid), hasNoConsumers()) : claimUidIs(claim.uid),
      event,
      hold,
    );
  }

  async releaseLease(
    lease: Lease,
    createdBeforeIso: string,
    event: IpamEvent,
    hold?: Hold,
  ): Promise<'released' | 'changed'> {
    const condition = both(belongsToClaim(lease.claimUid), createdNoLaterThan(createdBeforeIso));
    const release: WriteOp = hold
      ? {
          kind: 'put',
          item: leaseToItem(releasedLease(lease, hold, endReasonOfRepair(event.reason)), this.shards),
          condition,
        }
      : { kind: 'delete', key: keys.lease(lease.pool, lease.address), condition };
    const verdicts = await this.table.transact([
      release,
      eventPut(event),
      ...freedBumps(lease.pool, [lease.range], lease.claimUid),
    ]);
    return verdicts ? 'changed' : 'released';
  }

  async dropReleased(lease: Lease, nowMs: number): Promise<'released' | 'changed'> {
    // Still Released and over its delay: a claim that took the address back meanwhile replaced the item.
    const { ok } = await this.table.write({
      kind: 'delete',
      key: keys.lease(lease.pool, lease.address),
      condition: both(isReleasedLease(), hasExpired(nowMs)),
    });
    return ok ? 'released' : 'changed';
  }

  async restoreLease(
    claim: Claim,
    lease: Lease,
    nowMs: number,
    event: IpamEvent,
  ): Promise<'restored' | 'taken' | 'claimChanged'> {
    const { ops, decode } = leaseRestore({ claim, lease, nowMs, shards: this.shards }, { event, id: newEventId() });
    const verdicts = await this.table.transact(ops);
    if (!verdicts) return 'restored';
    const verdict = decode(verdicts);
    if (verdict === 'conflict')
      throw new NotReadyError('A concurrent write touched this lease; retried within the run, then by later runs.');
    return verdict;
  }

  async finalizeRange(range: Range, event: IpamEvent): Promise<'finalized' | 'changed'> {
    // The range (with its legacy lock), its bitmap, strikes and usage, and the event: all or none; then its freed
    // counters and seals (dropFreed: too many for the transaction, and a leftover is harmless).
    const outcome = await this.pools.removeRange(range, [
      { kind: 'delete', key: keys.bitmap(range.pool, range.name) },
      { kind: 'delete', key: keys.strikes(range.pool, range.name) },
      { kind: 'delete', key: keys.usage(range.pool, range.name) },
      eventPut(event),
    ]);
    if (outcome !== 'removed') return 'changed';
    await dropFreed(this.table, range.pool, [range.name]);
    return 'finalized';
  }

  async reportOnce(event: IpamEvent, what: string, nowMs: number): Promise<boolean> {
    // The marker expires with the event: a finding still there a day later is reported again.
    const expiresAt = nowMs + EVENT_RETENTION_MS;
    const marker = {
      ...keys.report(event.pool, what),
      entity: Entity.Report,
      schema: SCHEMA_VERSION,
      pool: event.pool,
      what,
      expiresAt,
      ttl: Math.ceil(expiresAt / 1000),
    };
    return (
      (await this.table.transact([{ kind: 'put', item: marker, condition: isFreeAt(nowMs) }, eventPut(event)])) ===
      undefined
    );
  }

  async markOwnerGone(pool: string, ownerUid: string, nowMs: number): Promise<void> {
    // One item per report, keyed by time: a later run reads only the last minutes of them. The uid's hash keeps two
    // owners reported in the same millisecond apart, and the same owner reported twice in it one item.
    // The mark by uid beside it, in one transaction: a claim for the uid reads that one item (ownerReportedGoneAt).
    const uidHash = ownerUidHash(ownerUid);
    const refused = await this.table.transact([
      {
        kind: 'put',
        item: tombstoneItem(Entity.OwnerGone, nowMs, (at) => keys.ownerGone(pool, at, uidHash), {
          pool,
          uid: ownerUid,
        }),
      },
      {
        kind: 'put',
        item: {
          ...tombstoneItem(Entity.OwnerMark, nowMs, () => keys.ownerMark(pool, uidHash), { pool, uid: ownerUid }),
          atMs: nowMs,
        },
      },
    ]);
    // Unconditional puts are refused only by a concurrent transaction on the same items: the client repeats the report.
    if (refused) throw new NotReadyError(`The report of owner ${ownerUid} collided with another; repeat it.`);
  }

  async ownerReportedGoneAt(pool: string, ownerUid: string): Promise<number | undefined> {
    const item = await this.table.get(keys.ownerMark(pool, ownerUidHash(ownerUid)));
    return item?.uid === ownerUid && typeof item.atMs === 'number' ? item.atMs : undefined;
  }

  ownersGoneSince(pool: string, sinceMs: number): Promise<string[]> {
    return tombstonesSince(this.table, {
      partition: keys.ownersGone(pool),
      entity: Entity.OwnerGone,
      field: 'uid',
      sinceMs,
    });
  }

  poolsDeletedSince(sinceMs: number): Promise<string[]> {
    // The same query reads the deletions not finished (keys.poolTerminating sorts after every time): no read of its own.
    return tombstonesSince(this.table, {
      partition: keys.poolsGone(),
      entity: [Entity.PoolGone, Entity.PoolTerminating],
      field: 'pool',
      sinceMs,
    });
  }

  // ---- helpers ----

  /** Deletes the claim (under `claimCondition`), its marker and the leases it still holds, with the event. */
  private async release(
    claim: Claim,
    claimCondition: Condition,
    event: IpamEvent,
    hold?: Hold,
  ): Promise<'released' | 'changed'> {
    // Never a claim whose block is another pool's range (Claim.children): 'changed', as for a claim renewed meanwhile.
    const outcome = await releaseWithRetries(this.table, claim, {
      condition: both(claimCondition, hasNoChildren()),
      extras: () => ({
        event: { event, id: newEventId() },
        ...(hold ? { hold: { hold, shards: this.shards }, ...endReasonOf(event) } : {}),
      }),
    });
    // The claim changed (renewed, released, replaced): the caller's view is stale and there is nothing to do.
    if (outcome === 'claimChanged') return 'changed';
    if (outcome === 'released') return 'released';
    throw new NotReadyError(
      `Claim ${claim.name} kept changing while it was being released; retried within the run, then by later runs.`,
    );
  }

  private sweepPartition(position: SweepPosition): { partition: string; kind: 'claims' | 'leases' } {
    const stage = Math.floor(position.i / this.shards);
    const shard = position.i % this.shards;
    if (stage === 0) return { partition: keys.claimsListing(position.p, shard), kind: 'claims' };
    return {
      partition: keys.leasesListing(position.p, stage === 1 ? IpFamily.IPv4 : IpFamily.IPv6, shard),
      kind: 'leases',
    };
  }

  /** The first stage of the pool after `pool` in name order (the first pool for undefined), or undefined at the end. */
  private async poolAfter(pool: string | undefined): Promise<SweepPosition | undefined> {
    const page = await this.table.query({
      index: 'GSI1',
      partition: keys.poolsListing(),
      ...(pool !== undefined ? { sort: { after: pool } } : {}),
      limit: 1,
    });
    const next = page.items[0]?.GSI1SK as string | undefined;
    return next === undefined ? undefined : { p: next, i: 0 };
  }
}

/** The end reason a repair writes on the Released leases it leaves (the address history reads it). */
function endReasonOf(event: IpamEvent): { endReason?: EndReason } {
  const reason = endReasonOfRepair(event.reason);
  return reason ? { endReason: reason } : {};
}

/** An event's put: a fresh id, so a repair's event is written exactly once with it. */
function eventPut(event: IpamEvent): WriteOp {
  return { kind: 'put', item: eventToItem(event, newEventId()), condition: itemIsAbsent() };
}

/** An owner uid's key part: a uid may be 253 characters, its hash keeps keys short (two uids of one hash: the uid is compared). */
function ownerUidHash(ownerUid: string): string {
  return createHash('sha256').update(ownerUid).digest('hex').slice(0, 16);
}
