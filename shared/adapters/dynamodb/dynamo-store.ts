import {
  DeleteItemCommand,
  DescribeTableCommand,
  PutItemCommand,
  QueryCommand,
  UpdateItemCommand,
  type AttributeValue,
  type DynamoDBClient,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { addressSortKey, familyBits, IpFamily, parseAddress } from '../../core/ip/address.ts';
import { NotReadyError } from '../../core/errors.ts';
import { RangeState, type Claim, type Lease, type Pool, type PoolView, type Range } from '../../core/model.ts';
import type { CommitOutcome, IpamStore, LeaseScope, Page } from '../../core/ports.ts';
import { Index } from '../../../infra/table.ts';
import { both, claimUidIs, either, hasExpired, heldByClaim, itemExists, itemIsAbsent, versionIs } from './conditions.ts';
import { claimToItem, expiryIndex, generatedToItem, itemToClaim, itemToLease, itemToPool, itemToRange, leaseToItem, poolToItem, rangeToItem, ttlOf, type Item } from './codec.ts';
import { CursorCodec } from './cursor.ts';
import { conditionParams, isConditionFailure, marshallOpts, TableGateway, translateError } from './table-gateway.ts';
import { Entity, keys, type Key } from './keys.ts';

export interface DynamoStoreOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** Shards of the listing index keys; fixed for a table's life. */
  readonly shards: number;
  /** Secret for signing cursors. */
  readonly cursorSecret: string;
}

export { translateError };

interface ListPosition {
  s: number;
  k: string;
}

/** The one class that speaks DynamoDB for the domain's IpamStore port. */
export class DynamoStore implements IpamStore {
  private readonly client: DynamoDBClient;
  private readonly table: string;
  private readonly shards: number;
  private readonly cursors: CursorCodec;
  private readonly db: TableGateway;

  constructor(options: DynamoStoreOptions) {
    this.client = options.client;
    this.table = options.tableName;
    this.shards = options.shards;
    this.cursors = new CursorCodec(options.cursorSecret);
    this.db = new TableGateway(options.client, options.tableName);
  }

  // ---- pools and ranges ----

  async createPool(pool: Pool): Promise<'created' | 'exists'> {
    try {
      await this.client.send(new PutItemCommand({ TableName: this.table, Item: marshall(poolToItem(pool), marshallOpts), ...conditionParams(itemIsAbsent()) }));
      return 'created';
    } catch (error) {
      if ((error as Error).name === 'ConditionalCheckFailedException') return 'exists';
      throw translateError(error);
    }
  }

  async getPoolView(pool: string): Promise<PoolView | undefined> {
    const items = await this.db.queryAll({ TableName: this.table, KeyConditionExpression: 'PK = :pk', ExpressionAttributeValues: marshall({ ':pk': keys.poolPartition(pool) }), ConsistentRead: true });
    const poolItem = items.find((i) => i.entity === Entity.Pool);
    if (!poolItem) return undefined;
    return { pool: itemToPool(poolItem), ranges: items.filter((i) => i.entity === Entity.Range).map(itemToRange) };
  }

  async listPools(limit: number, cursor?: string): Promise<Page<Pool>> {
    const after = cursor ? this.cursors.decode(cursor, isListPosition).k : undefined;
    const page = await this.queryIndexPage(Index.Listing, 'GSI1PK', keys.poolsListing(), 'GSI1SK', after, undefined, limit);
    const items = page.items.map(itemToPool);
    return page.more && items.length ? { items, nextCursor: this.cursors.encode({ s: 0, k: items[items.length - 1]!.name }) } : { items };
  }

  async deletePool(pool: string): Promise<'deleted' | 'notEmpty' | 'absent'> {
    const view = await this.getPoolView(pool);
    if (!view) return 'absent';
    const claims = await this.listClaims(pool, 1);
    if (claims.items.length > 0) return 'notEmpty';
    const items = [this.db.delete(keys.pool(pool), itemExists()), ...view.ranges.map((r) => this.db.delete(keys.range(pool, r.name), itemExists()))];
    // Bitmap items of legacy ranges go with the pool.
    for (const r of view.ranges) items.push({ Delete: { TableName: this.table, Key: marshall(keys.bitmap(pool, r.name)) } });
    for (let i = 0; i < items.length; i += 100) {
      const reasons = await this.db.transact(items.slice(i, i + 100));
      if (reasons) return 'absent';
    }
    return 'deleted';
  }

  async createRange(range: Range): Promise<'created' | 'exists'> {
    const reasons = await this.db.transact([
      { ConditionCheck: { TableName: this.table, Key: marshall(keys.pool(range.pool)), ...conditionParams(itemExists()) } },
      this.db.put(rangeToItem(range), itemIsAbsent()),
    ]);
    if (!reasons) return 'created';
    if (isConditionFailure(reasons[0])) throw new NotReadyError(`Pool ${JSON.stringify(range.pool)} was deleted meanwhile.`);
    return 'exists';
  }

  async markRangeTerminating(range: Range, atIso: string): Promise<Range> {
    const out = await this.db.send<{ Attributes?: Record<string, AttributeValue> }>(
      new UpdateItemCommand({
        TableName: this.table,
        Key: marshall(keys.range(range.pool, range.name)),
        UpdateExpression: 'SET #state = :terminating, #at = if_not_exists(#at, :at)',
        ConditionExpression: 'attribute_exists(PK)',
        ExpressionAttributeNames: { '#state': 'state', '#at': 'deletionRequestedAt' },
        ExpressionAttributeValues: marshall({ ':terminating': RangeState.Terminating, ':at': atIso }),
        ReturnValues: 'ALL_NEW',
      }),
    );
    return itemToRange(unmarshall(out.Attributes!));
  }

  async deleteRange(pool: string, name: string): Promise<void> {
    await this.db.send(new DeleteItemCommand({ TableName: this.table, Key: marshall(keys.range(pool, name)) }));
  }

  // ---- claims ----

  async commitClaim(claim: Claim, leases: readonly Lease[], nowMs: number): Promise<CommitOutcome> {
    const items: TransactWriteItem[] = [this.db.put(claimToItem(claim, this.shards), either(itemIsAbsent(), hasExpired(nowMs)))];
    const generated = claim.spec.generateName !== undefined;
    if (generated) items.push(this.db.put(generatedToItem(claim), either(itemIsAbsent(), hasExpired(nowMs))));
    const firstLease = items.length;
    for (const lease of leases) items.push(this.db.put(leaseToItem(lease, this.shards), either(itemIsAbsent(), hasExpired(nowMs))));
    const reasons = await this.db.transact(items);
    if (!reasons) return { kind: 'committed' };
    if (isConditionFailure(reasons[0])) {
      const existing = reasons[0]!.Item ? itemToClaim(unmarshall(reasons[0]!.Item)) : await this.getClaim(claim.pool, claim.name);
      if (existing) return { kind: 'claimExists', existing };
    }
    if (generated && isConditionFailure(reasons[1])) {
      const marker = reasons[1]!.Item ? unmarshall(reasons[1]!.Item) : await this.db.getItem(keys.generated(claim.pool, claim.spec.owner.uid, claim.spec.generateName!));
      if (marker) return { kind: 'generatedNameExists', claimName: marker.claim as string };
    }
    const taken = leases
      .map((lease, i) => ({ lease, reason: reasons[firstLease + i] }))
      .filter(({ reason }) => isConditionFailure(reason) || reason?.Code === 'TransactionConflict')
      .map(({ lease, reason }) => (reason?.Item ? { address: lease.address, holder: itemToLease(unmarshall(reason.Item)) } : { address: lease.address }));
    if (taken.length) return { kind: 'addressesTaken', taken };
    // Conflicts on the claim item itself (a concurrent identical request): the caller may retry.
    throw new NotReadyError('A concurrent request changed this claim; retry the request.');
  }

  async getClaim(pool: string, name: string): Promise<Claim | undefined> {
    const item = await this.db.getItem(keys.claim(pool, name));
    return item ? itemToClaim(item) : undefined;
  }

  async findGeneratedClaim(pool: string, ownerUid: string, generateName: string): Promise<string | undefined> {
    const item = await this.db.getItem(keys.generated(pool, ownerUid, generateName));
    return item?.claim as string | undefined;
  }

  async listClaims(pool: string, limit: number, cursor?: string, ownerUid?: string): Promise<Page<Claim>> {
    const after = cursor ? this.cursors.decode(cursor, isListPosition).k : undefined;
    const page = ownerUid !== undefined
      ? await this.queryIndexPage(Index.Owner, 'GSI2PK', keys.owner(pool, ownerUid), 'GSI2SK', after, undefined, limit)
      : await this.mergeShards((shard) => keys.claimsListing(pool, shard), 'GSI1SK', after, undefined, limit, undefined);
    const items = page.items.map(itemToClaim);
    return page.more && items.length ? { items, nextCursor: this.cursors.encode({ s: 0, k: items[items.length - 1]!.name }) } : { items };
  }

  async releaseClaim(claim: Claim, expectedVersion?: number): Promise<'released' | 'versionMismatch' | 'absent'> {
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const leaseKeys = claim.addresses.map((a) => keys.lease(claim.pool, a.address));
      const held = (await this.db.batchGet(leaseKeys)).filter((item) => item.claimUid === claim.uid);
      const claimCondition = expectedVersion === undefined ? claimUidIs(claim.uid) : both(claimUidIs(claim.uid), versionIs(expectedVersion));
      const items: TransactWriteItem[] = [this.db.delete(keys.claim(claim.pool, claim.name), claimCondition)];
      if (claim.spec.generateName !== undefined) {
        const markerKey = keys.generated(claim.pool, claim.spec.owner.uid, claim.spec.generateName);
        const marker = await this.db.getItem(markerKey);
        if (marker?.claimUid === claim.uid) items.push(this.db.delete(markerKey, heldByClaim(claim.uid)));
      }
      for (const lease of held) items.push(this.db.delete(keys.lease(claim.pool, lease.address as string), heldByClaim(claim.uid)));
      const reasons = await this.db.transact(items);
      if (!reasons) return 'released';
      if (isConditionFailure(reasons[0]) || reasons[0]?.Code === 'TransactionConflict') {
        const current = await this.getClaim(claim.pool, claim.name);
        if (!current || current.uid !== claim.uid) return 'absent';
        if (expectedVersion !== undefined && current.version !== expectedVersion) return 'versionMismatch';
        claim = current;
      }
      // A lease changed hands between the read and the write: read again.
    }
    throw new NotReadyError('The claim kept changing while it was being released; retry the request.');
  }

  async renewClaim(claim: Claim, expiresAt: number): Promise<'renewed' | 'lost' | 'absent'> {
    const exp = { ':exp': expiresAt, ...Object.fromEntries(Object.entries(ttlOf(expiresAt)).map(([, v]) => [':ttl', v])) };
    const index = expiryIndex(claim.pool, claim.name, expiresAt);
    const claimCondition = claimUidIs(claim.uid);
    const items: TransactWriteItem[] = [
      {
        Update: {
          TableName: this.table,
          Key: marshall(keys.claim(claim.pool, claim.name)),
          UpdateExpression: 'SET #expiresAt = :exp, #ttl = :ttl, #g3pk = :g3pk, #g3sk = :g3sk ADD #version :one',
          ConditionExpression: claimCondition.expression,
          ExpressionAttributeNames: { ...claimCondition.names, '#expiresAt': 'expiresAt', '#ttl': 'ttl', '#g3pk': 'GSI3PK', '#g3sk': 'GSI3SK', '#version': 'version' },
          ExpressionAttributeValues: marshall({ ...claimCondition.values, ...exp, ':g3pk': index.GSI3PK, ':g3sk': index.GSI3SK, ':one': 1 }),
        },
      },
    ];
    const held = heldByClaim(claim.uid);
    const touch = (key: Key): TransactWriteItem => ({
      Update: {
        TableName: this.table,
        Key: marshall(key),
        UpdateExpression: 'SET #expiresAt = :exp, #ttl = :ttl',
        ConditionExpression: held.expression,
        ExpressionAttributeNames: { ...held.names, '#expiresAt': 'expiresAt', '#ttl': 'ttl' },
        ExpressionAttributeValues: marshall({ ...held.values, ...exp }),
      },
    });
    if (claim.spec.generateName !== undefined) {
      const markerKey = keys.generated(claim.pool, claim.spec.owner.uid, claim.spec.generateName);
      if ((await this.db.getItem(markerKey))?.claimUid === claim.uid) items.push(touch(markerKey));
    }
    // Leases move to their new expiry bucket with the claim, so the expiry index never points at a stale hour.
    const touchLease = (address: string): TransactWriteItem => {
      const update = touch(keys.lease(claim.pool, address)).Update!;
      const leaseIndex = expiryIndex(claim.pool, address, expiresAt);
      return {
        Update: {
          ...update,
          UpdateExpression: `${update.UpdateExpression}, #g3pk = :g3pk, #g3sk = :g3sk`,
          ExpressionAttributeNames: { ...update.ExpressionAttributeNames, '#g3pk': 'GSI3PK', '#g3sk': 'GSI3SK' },
          ExpressionAttributeValues: { ...update.ExpressionAttributeValues, ...marshall({ ':g3pk': leaseIndex.GSI3PK, ':g3sk': leaseIndex.GSI3SK }) },
        },
      };
    };
    const firstLease = items.length;
    for (const a of claim.addresses) items.push(touchLease(a.address));
    const reasons = await this.db.transact(items);
    if (!reasons) return 'renewed';
    if (isConditionFailure(reasons[0])) return 'absent';
    if (reasons.slice(firstLease).some(isConditionFailure)) return 'lost';
    throw new NotReadyError('A concurrent request changed this claim; retry the request.');
  }

  // ---- leases ----

  async getLease(pool: string, address: string): Promise<Lease | undefined> {
    const item = await this.db.getItem(keys.lease(pool, address));
    return item ? itemToLease(item) : undefined;
  }

  async listLeases(pool: string, scopes: readonly LeaseScope[], nowMs: number, limit: number, cursor?: string): Promise<Page<Lease>> {
    let position: ListPosition | undefined = cursor ? this.cursors.decode(cursor, isListPosition) : undefined;
    const out: Lease[] = [];
    for (let s = position?.s ?? 0; s < scopes.length; s += 1) {
      const scope = scopes[s]!;
      const width = familyBits(scope.family) / 4;
      const from = scope.from.toString(16).padStart(width, '0');
      const to = scope.to.toString(16).padStart(width, '0');
      const after = position && position.s === s ? position.k : undefined;
      const page = await this.mergeShards((shard) => keys.leasesListing(pool, scope.family, shard), 'GSI1SK', after ?? undefined, [from, to], limit - out.length, nowMs);
      out.push(...page.items.map(itemToLease));
      if (page.more) return { items: out, nextCursor: this.cursors.encode({ s, k: page.items[page.items.length - 1]!.GSI1SK as string }) };
      position = undefined;
      if (out.length >= limit && s < scopes.length - 1) {
        return { items: out, nextCursor: this.cursors.encode({ s: s + 1, k: '' }) };
      }
    }
    return { items: out };
  }

  async takenAddresses(pool: string, family: IpFamily, intervals: readonly (readonly [bigint, bigint])[], nowMs: number): Promise<bigint[]> {
    const width = familyBits(family) / 4;
    const out: bigint[] = [];
    await Promise.all(
      intervals.flatMap(([from, to]) =>
        Array.from({ length: this.shards }, async (_, shard) => {
          const items = await this.db.queryAll({
            TableName: this.table,
            IndexName: Index.Listing,
            KeyConditionExpression: 'GSI1PK = :pk AND GSI1SK BETWEEN :from AND :to',
            FilterExpression: 'attribute_not_exists(expiresAt) OR expiresAt > :now',
            ProjectionExpression: 'GSI1SK',
            ExpressionAttributeValues: marshall({ ':pk': keys.leasesListing(pool, family, shard), ':from': from.toString(16).padStart(width, '0'), ':to': to.toString(16).padStart(width, '0'), ':now': nowMs }),
          });
          for (const item of items) out.push(BigInt(`0x${item.GSI1SK as string}`));
        }),
      ),
    );
    return out;
  }

  async countLeases(pool: string, family: IpFamily, intervals: readonly (readonly [bigint, bigint])[], nowMs: number): Promise<bigint> {
    const width = familyBits(family) / 4;
    const counts = await Promise.all(
      intervals.flatMap(([from, to]) =>
        Array.from({ length: this.shards }, async (_, shard) => {
          let count = 0;
          let start: Record<string, AttributeValue> | undefined;
          do {
            const out = await this.db.send<{ Count?: number; LastEvaluatedKey?: Record<string, AttributeValue> }>(
              new QueryCommand({
                TableName: this.table,
                IndexName: Index.Listing,
                Select: 'COUNT',
                KeyConditionExpression: 'GSI1PK = :pk AND GSI1SK BETWEEN :from AND :to',
                FilterExpression: 'attribute_not_exists(expiresAt) OR expiresAt > :now',
                ExpressionAttributeValues: marshall({ ':pk': keys.leasesListing(pool, family, shard), ':from': from.toString(16).padStart(width, '0'), ':to': to.toString(16).padStart(width, '0'), ':now': nowMs }),
                ...(start ? { ExclusiveStartKey: start } : {}),
              }),
            );
            count += out.Count ?? 0;
            start = out.LastEvaluatedKey;
          } while (start);
          return count;
        }),
      ),
    );
    return BigInt(counts.reduce((a, b) => a + b, 0));
  }

  async health(): Promise<{ table: string; status: string }> {
    const out = await this.db.send<{ Table?: { TableStatus?: string } }>(new DescribeTableCommand({ TableName: this.table }));
    return { table: this.table, status: out.Table?.TableStatus ?? 'UNKNOWN' };
  }

  // ---- query helpers ----

  /** One page of one index partition after `after`, up to `limit` items; `more` says whether items may remain. */
  private async queryIndexPage(index: string, pkName: string, pk: string, skName: string, after: string | undefined, bounds: [string, string] | undefined, limit: number, nowMs?: number): Promise<{ items: Item[]; more: boolean }> {
    const items: Item[] = [];
    let start: Record<string, AttributeValue> | undefined;
    const values: Record<string, unknown> = { ':pk': pk };
    let keyCondition = `${pkName} = :pk`;
    if (bounds) {
      values[':from'] = after !== undefined && after >= bounds[0] ? after : bounds[0];
      values[':to'] = bounds[1];
      keyCondition += ` AND ${skName} BETWEEN :from AND :to`;
    } else if (after !== undefined) {
      values[':after'] = after;
      keyCondition += ` AND ${skName} > :after`;
    }
    const filter = nowMs === undefined ? {} : { FilterExpression: 'attribute_not_exists(expiresAt) OR expiresAt > :now' };
    if (nowMs !== undefined) values[':now'] = nowMs;
    do {
      const out = await this.db.send<{ Items?: Record<string, AttributeValue>[]; LastEvaluatedKey?: Record<string, AttributeValue> }>(
        new QueryCommand({ TableName: this.table, IndexName: index, KeyConditionExpression: keyCondition, ExpressionAttributeValues: marshall(values), Limit: limit + 1, ...filter, ...(start ? { ExclusiveStartKey: start } : {}) }),
      );
      for (const raw of out.Items ?? []) {
        const item = unmarshall(raw);
        // BETWEEN is inclusive: skip the cursor's own item.
        if (after !== undefined && (item[skName] as string) <= after) continue;
        items.push(item);
      }
      start = out.LastEvaluatedKey;
    } while (start && items.length <= limit);
    return { items: items.slice(0, limit), more: items.length > limit || start !== undefined };
  }

  /** Merges one page from every shard of a sharded index key, in sort-key order. */
  private async mergeShards(pkOf: (shard: number) => string, skName: string, after: string | undefined, bounds: [string, string] | undefined, limit: number, nowMs: number | undefined): Promise<{ items: Item[]; more: boolean }> {
    const pages = await Promise.all(Array.from({ length: this.shards }, (_, shard) => this.queryIndexPage(Index.Listing, 'GSI1PK', pkOf(shard), skName, after, bounds, limit, nowMs)));
    const all = pages.flatMap((p) => p.items).sort((a, b) => ((a[skName] as string) < (b[skName] as string) ? -1 : 1));
    const items = all.slice(0, limit);
    return { items, more: all.length > limit || pages.some((p) => p.more) };
  }
}

function isListPosition(value: unknown): value is ListPosition {
  return typeof value === 'object' && value !== null && typeof (value as ListPosition).s === 'number' && typeof (value as ListPosition).k === 'string';
}

/** Hex sort key of a textual address (exported for the mirror and the reconciler). */
export function sortKeyOf(address: string): string {
  return addressSortKey(parseAddress(address));
}

export { IpFamily };
