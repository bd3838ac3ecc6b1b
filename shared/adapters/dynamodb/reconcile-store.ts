import { randomUUID } from 'node:crypto';
import {
  GetItemCommand,
  PutItemCommand,
  QueryCommand,
  type AttributeValue,
  type CancellationReason,
  type DynamoDBClient,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { familyBits, IpFamily } from '../../core/ip/address.ts';
import { NotReadyError } from '../../core/errors.ts';
import { RangeState, type Claim, type Lease, type PoolView, type Range } from '../../core/model.ts';
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
} from '../../core/reconciler/ports.ts';
import { Index } from '../../../infra/table.ts';
import { itemToClaim, itemToLease, itemToPool, itemToRange, leaseToItem, type Item } from './codec.ts';
import {
  attributeIs,
  both,
  claimUidIs,
  createdNoLaterThan,
  either,
  hasExpired,
  heldByClaim,
  itemExists,
  itemIsAbsent,
  versionIs,
  type Condition,
} from './conditions.ts';
import { bitmapIs, bitmapToItem } from './bitmap-store.ts';
import { CursorCodec } from './cursor.ts';
import { conditionParams, marshallOpts, TableGateway, translateError } from './table-gateway.ts';
import { Entity, EXPIRY_SHARDS, keys, SCHEMA_VERSION } from './keys.ts';

export interface DynamoReconcileStoreOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** Shards of the listing index (the same as DynamoStore's). */
  readonly shards: number;
  /** Secret for signing event-listing cursors. */
  readonly cursorSecret: string;
}

const failed = (reason: CancellationReason | undefined): boolean => reason?.Code === 'ConditionalCheckFailed';
const conflicted = (reasons: readonly CancellationReason[]): boolean => reasons.some((r) => r.Code === 'TransactionConflict');

/** The event's item: kept 24 hours by DynamoDB's TTL (and filtered by time when listed, since TTL deletion is lazy). */
export function eventToItem(event: IpamEvent, id: string): Item {
  return {
    ...keys.event(event.pool, event.time, id),
    entity: Entity.Event,
    schema: SCHEMA_VERSION,
    pool: event.pool,
    time: event.time,
    reason: event.reason,
    object: event.object,
    message: event.message,
    ttl: Math.ceil((Date.parse(event.time) + EVENT_RETENTION_MS) / 1000),
  };
}

export function itemToEvent(item: Item): IpamEvent {
  return { pool: item.pool as string, time: item.time as string, reason: item.reason as IpamEvent['reason'], object: item.object as string, message: item.message as string };
}

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

/** Where a bounded count stands: interval, shard, and the shard's LastEvaluatedKey. */
interface CountPosition {
  i: number;
  s: number;
  k?: Record<string, AttributeValue>;
}

function isSweepPosition(value: unknown): value is SweepPosition {
  const v = value as SweepPosition;
  return typeof v === 'object' && v !== null && typeof v.p === 'string' && Number.isInteger(v.i) && (v.a === undefined || typeof v.a === 'string');
}

/** The one class that speaks DynamoDB for the reconciler's ReconcileStore port. */
export class DynamoReconcileStore implements ReconcileStore {
  readonly expiryShards = EXPIRY_SHARDS;
  private readonly client: DynamoDBClient;
  private readonly table: string;
  private readonly shards: number;
  private readonly db: TableGateway;
  private readonly cursors: CursorCodec;

  constructor(options: DynamoReconcileStoreOptions) {
    this.client = options.client;
    this.table = options.tableName;
    this.shards = options.shards;
    this.db = new TableGateway(options.client, options.tableName);
    this.cursors = new CursorCodec(options.cursorSecret);
  }

  // ---- reads ----

  async expiredRefs(hour: number, shard: number, cutoffMs: number, limit: number, after?: string): Promise<{ refs: ExpiredRef[]; next?: string }> {
    // GSI3SK starts with the zero-padded expiry, so "sort key below the padded cutoff + 1" is "expired at the cutoff":
    // the query reads only expired entries, however many live ones share the bucket.
    const upper = String(cutoffMs + 1).padStart(EXPIRY_WIDTH, '0');
    const out = await this.db.send<{ Items?: Record<string, AttributeValue>[]; LastEvaluatedKey?: Record<string, AttributeValue> }>(
      new QueryCommand({
        TableName: this.table,
        IndexName: Index.Expiry,
        KeyConditionExpression: 'GSI3PK = :pk AND GSI3SK < :upper',
        ExpressionAttributeValues: marshall({ ':pk': keys.expiryBucket(hour * 3_600_000, shard), ':upper': upper }),
        Limit: limit,
        ...(after !== undefined ? { ExclusiveStartKey: JSON.parse(after) as Record<string, AttributeValue> } : {}),
      }),
    );
    const refs: ExpiredRef[] = [];
    for (const raw of out.Items ?? []) {
      const item = unmarshall(raw);
      const [, pool, ...rest] = (item.GSI3SK as string).split('#');
      const id = rest.join('#');
      if (pool === undefined || id === '') continue;
      const pk = item.PK as string;
      if (pk.startsWith('CLAIM#')) refs.push({ kind: 'claim', pool, name: id });
      else if (pk.startsWith('LEASE#')) refs.push({ kind: 'lease', pool, address: id });
    }
    return { refs, ...(out.LastEvaluatedKey ? { next: JSON.stringify(out.LastEvaluatedKey) } : {}) };
  }

  async getClaims(refs: readonly { pool: string; name: string }[]): Promise<Claim[]> {
    return (await this.db.batchGet(refs.map((r) => keys.claim(r.pool, r.name)))).filter((i) => i.entity === Entity.Claim).map(itemToClaim);
  }

  async getLeases(refs: readonly { pool: string; address: string }[]): Promise<Lease[]> {
    return (await this.db.batchGet(refs.map((r) => keys.lease(r.pool, r.address)))).filter((i) => i.entity === Entity.Lease).map(itemToLease);
  }

  async listPoolViews(): Promise<PoolViewList> {
    const names = (await this.db.queryAll({ TableName: this.table, IndexName: Index.Listing, KeyConditionExpression: 'GSI1PK = :pk', ExpressionAttributeValues: marshall({ ':pk': keys.poolsListing() }) })).map((i) => i.name as string);
    const views: PoolView[] = [];
    for (const name of names) {
      const items = await this.db.queryAll({ TableName: this.table, KeyConditionExpression: 'PK = :pk', ExpressionAttributeValues: marshall({ ':pk': keys.poolPartition(name) }), ConsistentRead: true });
      const pool = items.find((i) => i.entity === Entity.Pool);
      if (pool) views.push({ pool: itemToPool(pool), ranges: items.filter((i) => i.entity === Entity.Range).map(itemToRange) });
    }
    return views;
  }

  async listEvents(pool: string, sinceIso: string, limit: number, cursor?: string): Promise<Page<IpamEvent>> {
    const before = cursor === undefined ? undefined : this.cursors.decode(cursor, (v): v is { k: string } => typeof (v as { k?: unknown })?.k === 'string').k;
    const items: Item[] = [];
    let start: Record<string, AttributeValue> | undefined;
    do {
      // Newest first; the time bound in the key condition leaves out events whose TTL deletion is still pending.
      const out = await this.db.send<{ Items?: Record<string, AttributeValue>[]; LastEvaluatedKey?: Record<string, AttributeValue> }>(
        new QueryCommand({
          TableName: this.table,
          KeyConditionExpression: 'PK = :pk AND SK BETWEEN :since AND :upper',
          ExpressionAttributeValues: marshall({ ':pk': keys.events(pool), ':since': sinceIso, ':upper': before ?? '\uffff' }),
          ScanIndexForward: false,
          Limit: limit + 1,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const raw of out.Items ?? []) {
        const item = unmarshall(raw);
        if (before !== undefined && (item.SK as string) >= before) continue;
        items.push(item);
      }
      start = out.LastEvaluatedKey;
    } while (start && items.length <= limit);
    const page = items.slice(0, limit);
    const more = items.length > limit || start !== undefined;
    return { items: page.map(itemToEvent), ...(more && page.length ? { nextCursor: this.cursors.encode({ k: page[page.length - 1]!.SK as string }) } : {}) };
  }

  async getCheckpoint<T>(name: string): Promise<Checkpoint<T> | undefined> {
    const out = await this.db.send<{ Item?: Record<string, AttributeValue> }>(new GetItemCommand({ TableName: this.table, Key: marshall(keys.checkpoint(name)), ConsistentRead: true }));
    if (!out.Item) return undefined;
    const item = unmarshall(out.Item);
    return { value: item.value as T, version: item.version as number };
  }

  async saveCheckpoint<T>(name: string, value: T, expectedVersion: number | undefined): Promise<boolean> {
    return this.putVersioned({ ...keys.checkpoint(name), entity: Entity.Checkpoint, schema: SCHEMA_VERSION, name, value, version: (expectedVersion ?? 0) + 1 }, expectedVersion);
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
      const { pk, kind } = this.sweepPartition(position);
      const out = await this.db.send<{ Items?: Record<string, AttributeValue>[]; LastEvaluatedKey?: Record<string, AttributeValue> }>(
        new QueryCommand({
          TableName: this.table,
          IndexName: Index.Listing,
          KeyConditionExpression: position.a === undefined ? 'GSI1PK = :pk' : 'GSI1PK = :pk AND GSI1SK > :after',
          ExpressionAttributeValues: marshall({ ':pk': pk, ...(position.a !== undefined ? { ':after': position.a } : {}) }),
          Limit: limit - claims.length - leases.length,
        }),
      );
      const items = (out.Items ?? []).map((i) => unmarshall(i));
      for (const item of items) {
        if (kind === 'claims' && item.entity === Entity.Claim) claims.push(itemToClaim(item));
        if (kind === 'leases' && item.entity === Entity.Lease) leases.push(itemToLease(item));
      }
      if (out.LastEvaluatedKey && items.length) {
        position = { ...position, a: items[items.length - 1]!.GSI1SK as string };
      } else if (position.i + 1 < 3 * this.shards) {
        position = { p: position.p, i: position.i + 1 };
      } else {
        position = await this.poolAfter(position.p);
      }
    }
    return { claims, leases, ...(position !== undefined ? { next: JSON.stringify(position) } : {}) };
  }

  async leaseExists(pool: string, family: IpFamily, intervals: readonly (readonly [bigint, bigint])[]): Promise<boolean> {
    const width = familyBits(family) / 4;
    const probes = intervals.flatMap(([from, to]) =>
      Array.from({ length: this.shards }, (_, shard) =>
        this.db.send<{ Items?: unknown[] }>(
          new QueryCommand({
            TableName: this.table,
            IndexName: Index.Listing,
            KeyConditionExpression: 'GSI1PK = :pk AND GSI1SK BETWEEN :from AND :to',
            ProjectionExpression: 'GSI1SK',
            ExpressionAttributeValues: marshall({ ':pk': keys.leasesListing(pool, family, shard), ':from': from.toString(16).padStart(width, '0'), ':to': to.toString(16).padStart(width, '0') }),
            Limit: 1,
          }),
        ).then((out) => (out.Items?.length ?? 0) > 0),
      ),
    );
    return (await Promise.all(probes)).some(Boolean);
  }

  async countSlice(pool: string, family: IpFamily, intervals: readonly (readonly [bigint, bigint])[], nowMs: number, limit: number, cursor?: string): Promise<CountSlice> {
    const width = familyBits(family) / 4;
    let position: CountPosition = cursor === undefined ? { i: 0, s: 0 } : (JSON.parse(cursor) as CountPosition);
    const scanned = intervals.map(() => 0);
    let unexpired = 0;
    let cost = 0;
    while (cost < limit && position.i < intervals.length) {
      const [from, to] = intervals[position.i]!;
      // COUNT with a filter: Count is the unexpired leases, ScannedCount every lease item read (what it costs).
      const out = await this.db.send<{ Count?: number; ScannedCount?: number; LastEvaluatedKey?: Record<string, AttributeValue> }>(
        new QueryCommand({
          TableName: this.table,
          IndexName: Index.Listing,
          Select: 'COUNT',
          KeyConditionExpression: 'GSI1PK = :pk AND GSI1SK BETWEEN :from AND :to',
          FilterExpression: 'attribute_not_exists(expiresAt) OR expiresAt > :now',
          ExpressionAttributeValues: marshall({ ':pk': keys.leasesListing(pool, family, position.s), ':from': from.toString(16).padStart(width, '0'), ':to': to.toString(16).padStart(width, '0'), ':now': nowMs }),
          Limit: Math.max(1, limit - cost),
          ...(position.k ? { ExclusiveStartKey: position.k } : {}),
        }),
      );
      unexpired += out.Count ?? 0;
      scanned[position.i]! += out.ScannedCount ?? 0;
      cost += Math.max(1, out.ScannedCount ?? 0);
      if (out.LastEvaluatedKey) position = { ...position, k: out.LastEvaluatedKey };
      else if (position.s + 1 < this.shards) position = { i: position.i, s: position.s + 1 };
      else position = { i: position.i + 1, s: 0 };
    }
    return { unexpired, scanned, cost, ...(position.i < intervals.length ? { cursor: JSON.stringify(position) } : {}) };
  }

  async getUsage(pool: string): Promise<Map<string, Checkpoint<UsageRecord>>> {
    const items = await this.db.queryAll({ TableName: this.table, KeyConditionExpression: 'PK = :pk', ExpressionAttributeValues: marshall({ ':pk': keys.usagePartition(pool) }), ConsistentRead: true });
    return new Map(items.filter((i) => i.entity === Entity.Usage).map((i) => [i.range as string, { value: i.record as UsageRecord, version: i.version as number }]));
  }

  async saveUsage(pool: string, rangeName: string, record: UsageRecord, expectedVersion: number | undefined): Promise<boolean> {
    const item = { ...keys.usage(pool, rangeName), entity: Entity.Usage, schema: SCHEMA_VERSION, pool, range: rangeName, record, version: (expectedVersion ?? 0) + 1 };
    return this.putVersioned(item, expectedVersion);
  }

  async getDriftRecord(pool: string, rangeName: string): Promise<Checkpoint<DriftRecord> | undefined> {
    const out = await this.db.send<{ Item?: Record<string, AttributeValue> }>(new GetItemCommand({ TableName: this.table, Key: marshall(keys.strikes(pool, rangeName)), ConsistentRead: true }));
    if (!out.Item) return undefined;
    const item = unmarshall(out.Item);
    const value: DriftRecord = {
      strikes: (item.strikes as Record<string, number> | undefined) ?? {},
      checkedCycle: (item.checkedCycle as number | undefined) ?? -1,
      comparedAt: (item.comparedAt as number | undefined) ?? 0,
      observedAt: (item.observedAt as number | undefined) ?? 0,
      ...(item.checking ? { checking: item.checking as { offset: number } } : {}),
    };
    return { value, version: item.version as number };
  }

  async saveDriftRecord(pool: string, rangeName: string, record: DriftRecord, expectedVersion: number | undefined): Promise<boolean> {
    const item = { ...keys.strikes(pool, rangeName), entity: Entity.Strikes, schema: SCHEMA_VERSION, pool, range: rangeName, ...record, version: (expectedVersion ?? 0) + 1 };
    return this.putVersioned(item, expectedVersion);
  }

  /** Puts an item if it is still at `expectedVersion` (undefined: absent); false when someone else moved it. */
  private async putVersioned(item: Item, expectedVersion: number | undefined): Promise<boolean> {
    const condition = expectedVersion === undefined ? itemIsAbsent() : versionIs(expectedVersion);
    try {
      await this.client.send(new PutItemCommand({ TableName: this.table, Item: marshall(item, marshallOpts), ...conditionParams(condition) }));
      return true;
    } catch (error) {
      if ((error as Error).name === 'ConditionalCheckFailedException') return false;
      throw translateError(error);
    }
  }

  async repairBitmap(repair: BitmapRepair, events: readonly IpamEvent[]): Promise<'written' | 'changed'> {
    const leaseKey = (address: string) => marshall(keys.lease(repair.pool, address));
    const reasons = await this.db.transact([
      // The bitmap exactly as read: a mirror write or a legacy allocation in between makes this a no-op.
      { Put: { TableName: this.table, Item: marshall(bitmapToItem(repair), marshallOpts), ...conditionParams(bitmapIs(repair.expected)) } },
      // A bit is set only for a lease that still exists, and cleared only for one that still does not: an allocation
      // landing meanwhile cancels the whole write, and its own stream record sets its bit.
      ...repair.leasesPresent.map((a): TransactWriteItem => ({ ConditionCheck: { TableName: this.table, Key: leaseKey(a), ...conditionParams(itemExists()) } })),
      ...repair.leasesAbsent.map((a): TransactWriteItem => ({ ConditionCheck: { TableName: this.table, Key: leaseKey(a), ...conditionParams(itemIsAbsent()) } })),
      ...events.map((e) => this.putEvent(e)),
    ]);
    return reasons ? 'changed' : 'written';
  }

  async removeBitmap(pool: string, rangeName: string, version: number, event: IpamEvent): Promise<'removed' | 'changed'> {
    const reasons = await this.db.transact([
      { Delete: { TableName: this.table, Key: marshall(keys.bitmap(pool, rangeName)), ...conditionParams(bitmapIs({ version })) } },
      { Delete: { TableName: this.table, Key: marshall(keys.strikes(pool, rangeName)) } },
      this.putEvent(event),
    ]);
    return reasons ? 'changed' : 'removed';
  }

  // ---- writes: each conditional, each with its event in the same transaction ----

  async releaseExpiredClaim(claim: Claim, cutoffMs: number, event: IpamEvent): Promise<'released' | 'changed'> {
    return this.release(claim, both(claimUidIs(claim.uid), versionIs(claim.version), hasExpired(cutoffMs)), event);
  }

  async releaseClaim(claim: Claim, event: IpamEvent): Promise<'released' | 'changed'> {
    return this.release(claim, claimUidIs(claim.uid), event);
  }

  async releaseLease(lease: Lease, createdBeforeIso: string, event: IpamEvent): Promise<'released' | 'changed'> {
    const reasons = await this.db.transact([
      { Delete: { TableName: this.table, Key: marshall(keys.lease(lease.pool, lease.address)), ...conditionParams(both(heldByClaim(lease.claimUid), createdNoLaterThan(createdBeforeIso))) } },
      this.putEvent(event),
    ]);
    return reasons ? 'changed' : 'released';
  }

  async restoreLease(claim: Claim, lease: Lease, nowMs: number, event: IpamEvent): Promise<'restored' | 'taken' | 'claimChanged'> {
    const reasons = await this.db.transact([
      { ConditionCheck: { TableName: this.table, Key: marshall(keys.claim(claim.pool, claim.name)), ...conditionParams(both(claimUidIs(claim.uid), versionIs(claim.version))) } },
      { Put: { TableName: this.table, Item: marshall(leaseToItem(lease, this.shards), marshallOpts), ...conditionParams(either(itemIsAbsent(), hasExpired(nowMs))) } },
      this.putEvent(event),
    ]);
    if (!reasons) return 'restored';
    if (failed(reasons[0])) return 'claimChanged';
    if (failed(reasons[1])) return 'taken';
    throw new NotReadyError('A concurrent write touched this lease; a later run retries.');
  }

  async finalizeRange(range: Range, event: IpamEvent): Promise<'finalized' | 'changed'> {
    // Still Terminating, and the same deletion of the same incarnation (a range made again and deleted again waits its own grace).
    const condition = both(
      attributeIs('state', RangeState.Terminating, 'state'),
      attributeIs('deletionRequestedAt', range.deletionRequestedAt ?? '', 'deletionRequestedAt'),
      attributeIs('createdAt', range.createdAt, 'createdAt'),
    );
    const reasons = await this.db.transact([
      { Delete: { TableName: this.table, Key: marshall(keys.range(range.pool, range.name)), ...conditionParams(condition) } },
      { Delete: { TableName: this.table, Key: marshall(keys.bitmap(range.pool, range.name)) } },
      { Delete: { TableName: this.table, Key: marshall(keys.strikes(range.pool, range.name)) } },
      { Delete: { TableName: this.table, Key: marshall(keys.usage(range.pool, range.name)) } },
      this.putEvent(event),
    ]);
    return reasons ? 'changed' : 'finalized';
  }

  async reportOnce(event: IpamEvent, what: string, nowMs: number): Promise<boolean> {
    // The marker expires with the event: a finding still there a day later is reported again.
    const expiresAt = nowMs + EVENT_RETENTION_MS;
    const marker = { ...keys.report(event.pool, what), entity: Entity.Report, schema: SCHEMA_VERSION, pool: event.pool, what, expiresAt, ttl: Math.ceil(expiresAt / 1000) };
    const reasons = await this.db.transact([
      { Put: { TableName: this.table, Item: marshall(marker, marshallOpts), ...conditionParams(either(itemIsAbsent(), hasExpired(nowMs))) } },
      this.putEvent(event),
    ]);
    return reasons === undefined;
  }

  // ---- helpers ----

  /** Deletes the claim (under `claimCondition`), its marker and the leases it still holds, with the event. */
  private async release(claim: Claim, claimCondition: Condition, event: IpamEvent): Promise<'released' | 'changed'> {
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const held = (await this.db.batchGet(claim.addresses.map((a) => keys.lease(claim.pool, a.address)))).filter((i) => i.claimUid === claim.uid);
      const items: TransactWriteItem[] = [{ Delete: { TableName: this.table, Key: marshall(keys.claim(claim.pool, claim.name)), ...conditionParams(claimCondition) } }];
      if (claim.spec.generateName !== undefined) {
        const markerKey = keys.generated(claim.pool, claim.spec.owner.uid, claim.spec.generateName);
        const [marker] = await this.db.batchGet([markerKey]);
        if (marker?.claimUid === claim.uid) items.push({ Delete: { TableName: this.table, Key: marshall(markerKey), ...conditionParams(heldByClaim(claim.uid)) } });
      }
      for (const lease of held) items.push({ Delete: { TableName: this.table, Key: marshall(keys.lease(claim.pool, lease.address as string)), ...conditionParams(heldByClaim(claim.uid)) } });
      items.push(this.putEvent(event));
      const reasons = await this.db.transact(items);
      if (!reasons) return 'released';
      // The claim changed (renewed, released, replaced): the caller's view is stale and there is nothing to do.
      if (failed(reasons[0])) return 'changed';
      // A lease or the marker changed hands between the read and the write, or a conflict: read again.
      if (!reasons.some(failed) && !conflicted(reasons)) break;
    }
    throw new NotReadyError(`Claim ${claim.name} kept changing while it was being released; a later run retries.`);
  }

  private putEvent(event: IpamEvent): TransactWriteItem {
    return { Put: { TableName: this.table, Item: marshall(eventToItem(event, newEventId()), marshallOpts), ...conditionParams(itemIsAbsent()) } };
  }

  private sweepPartition(position: SweepPosition): { pk: string; kind: 'claims' | 'leases' } {
    const stage = Math.floor(position.i / this.shards);
    const shard = position.i % this.shards;
    if (stage === 0) return { pk: keys.claimsListing(position.p, shard), kind: 'claims' };
    return { pk: keys.leasesListing(position.p, stage === 1 ? IpFamily.IPv4 : IpFamily.IPv6, shard), kind: 'leases' };
  }

  /** The first stage of the pool after `pool` in name order (the first pool for undefined), or undefined at the end. */
  private async poolAfter(pool: string | undefined): Promise<SweepPosition | undefined> {
    const out = await this.db.send<{ Items?: Record<string, AttributeValue>[] }>(
      new QueryCommand({
        TableName: this.table,
        IndexName: Index.Listing,
        KeyConditionExpression: pool === undefined ? 'GSI1PK = :pk' : 'GSI1PK = :pk AND GSI1SK > :after',
        ExpressionAttributeValues: marshall({ ':pk': keys.poolsListing(), ...(pool !== undefined ? { ':after': pool } : {}) }),
        Limit: 1,
      }),
    );
    const next = out.Items?.[0] ? (unmarshall(out.Items[0]).GSI1SK as string) : undefined;
    return next === undefined ? undefined : { p: next, i: 0 };
  }

}

function newEventId(): string {
  return randomUUID().replace(/-/g, '').slice(0, 16);
}

