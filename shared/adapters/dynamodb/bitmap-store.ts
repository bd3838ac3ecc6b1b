import {
  BatchGetItemCommand,
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  type AttributeValue,
  type CancellationReason,
  type DynamoDBClient,
  type TransactWriteItem,
} from '@aws-sdk/client-dynamodb';
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';
import { NotReadyError } from '../../core/errors.ts';
import type { Claim, Lease } from '../../core/model.ts';
import type { RangeAllocation } from '../../core/bitmap/range-allocation.ts';
import type { BitmapCommitOutcome, BitmapExpectation, BitmapReleaseOutcome, BitmapStore, BitmapWrite } from '../../core/bitmap/ports.ts';
import { both, claimUidIs, either, hasExpired, heldByClaim, itemIsAbsent, itemExists, versionIs, type Condition } from './conditions.ts';
import { claimToItem, generatedToItem, itemToClaim, itemToLease, leaseToItem, type Item } from './codec.ts';
import { conditionParams, marshallOpts, TableGateway, translateError } from './table-gateway.ts';
import { Entity, keys, SCHEMA_VERSION } from './keys.ts';

export interface DynamoBitmapStoreOptions {
  readonly client: DynamoDBClient;
  readonly tableName: string;
  /** Shards of the listing index keys (lease and claim items carry them); the same value DynamoStore uses. */
  readonly shards: number;
}

/** A bitmap item: the RangeAllocation document under the range's key, with `data` as a DynamoDB Binary. */
export function bitmapToItem(write: Pick<BitmapWrite, 'pool' | 'rangeName' | 'allocation'>): Item {
  return {
    ...keys.bitmap(write.pool, write.rangeName),
    entity: Entity.Bitmap,
    schema: SCHEMA_VERSION,
    pool: write.pool,
    name: write.rangeName,
    range: write.allocation.range,
    data: write.allocation.data,
    version: write.allocation.version,
  };
}

export function itemToBitmap(item: Item): RangeAllocation {
  const data = item.data instanceof Uint8Array ? item.data : new Uint8Array(0);
  return { range: item.range as string, data, version: item.version as number };
}

/** The condition of a bitmap write: "still at the version I read" or "still absent". */
export function bitmapIs(expected: BitmapExpectation): Condition {
  return expected === 'absent' ? itemIsAbsent() : both(itemExists(), versionIs(expected.version));
}

const failed = (reason: CancellationReason | undefined): boolean => reason?.Code === 'ConditionalCheckFailed' || reason?.Code === 'TransactionConflict';

/**
 * The one class that speaks DynamoDB for the BitmapStore port. The claim and lease items it writes are the same
 * items DynamoStore writes (codec.ts), so either allocator's claims can be read and released by the other.
 */
export class DynamoBitmapStore implements BitmapStore {
  private readonly client: DynamoDBClient;
  private readonly table: string;
  private readonly shards: number;
  private readonly db: TableGateway;

  constructor(options: DynamoBitmapStoreOptions) {
    this.client = options.client;
    this.table = options.tableName;
    this.shards = options.shards;
    this.db = new TableGateway(options.client, options.tableName);
  }

  async getBitmap(pool: string, rangeName: string): Promise<RangeAllocation | undefined> {
    const out = await this.db.send<{ Item?: Record<string, AttributeValue> }>(new GetItemCommand({ TableName: this.table, Key: marshall(keys.bitmap(pool, rangeName)), ConsistentRead: true }));
    return out.Item ? itemToBitmap(unmarshall(out.Item)) : undefined;
  }

  async putBitmap(write: BitmapWrite): Promise<'written' | 'changed'> {
    try {
      await this.client.send(new PutItemCommand({ TableName: this.table, Item: marshall(bitmapToItem(write), marshallOpts), ...conditionParams(bitmapIs(write.expected)) }));
      return 'written';
    } catch (error) {
      if ((error as Error).name === 'ConditionalCheckFailedException') return 'changed';
      throw translateError(error);
    }
  }

  async deleteBitmap(pool: string, rangeName: string, expected?: BitmapExpectation): Promise<'deleted' | 'changed'> {
    try {
      await this.client.send(
        new DeleteItemCommand({ TableName: this.table, Key: marshall(keys.bitmap(pool, rangeName)), ...(expected === undefined ? {} : conditionParams(bitmapIs(expected))) }),
      );
      return 'deleted';
    } catch (error) {
      if ((error as Error).name === 'ConditionalCheckFailedException') return 'changed';
      throw translateError(error);
    }
  }

  /**
   * One TransactWriteItems, in this order (the order the cancellation reasons come back in):
   *
   *   [0]        Put claim        absent OR expired      -> claimExists
   *   [1]?       Put generated    absent OR expired      -> generatedNameExists   (only with generateName)
   *   [n..]      Put lease        absent OR expired      -> addressesTaken (with the holder, ALL_OLD)
   *   [m..]      Put bitmap       version = v | absent   -> bitmapsChanged
   */
  async commitClaim(claim: Claim, leases: readonly Lease[], bitmaps: readonly BitmapWrite[], nowMs: number): Promise<BitmapCommitOutcome> {
    const freeNow = either(itemIsAbsent(), hasExpired(nowMs));
    const items: TransactWriteItem[] = [this.db.put(claimToItem(claim, this.shards), freeNow, true)];
    const generated = claim.spec.generateName !== undefined;
    if (generated) items.push(this.db.put(generatedToItem(claim), freeNow, true));
    const firstLease = items.length;
    for (const lease of leases) items.push(this.db.put(leaseToItem(lease, this.shards), freeNow, true));
    const firstBitmap = items.length;
    for (const bitmap of bitmaps) items.push(this.db.put(bitmapToItem(bitmap), bitmapIs(bitmap.expected), false));
    const reasons = await this.db.transact(items);
    if (!reasons) return { kind: 'committed' };
    if (reasons[0]?.Code === 'ConditionalCheckFailed') {
      const existing = reasons[0].Item ? itemToClaim(unmarshall(reasons[0].Item)) : await this.db.getItem(keys.claim(claim.pool, claim.name)).then((i) => (i ? itemToClaim(i) : undefined));
      if (existing) return { kind: 'claimExists', existing };
    }
    if (generated && reasons[1]?.Code === 'ConditionalCheckFailed') {
      const marker = reasons[1].Item ? unmarshall(reasons[1].Item) : await this.db.getItem(keys.generated(claim.pool, claim.spec.owner.uid, claim.spec.generateName!));
      if (marker) return { kind: 'generatedNameExists', claimName: marker.claim as string };
    }
    const taken = leases
      .map((lease, i) => ({ lease, reason: reasons[firstLease + i] }))
      .filter(({ reason }) => failed(reason))
      .map(({ lease, reason }) => (reason?.Item ? { address: lease.address, holder: itemToLease(unmarshall(reason.Item)) } : { address: lease.address }));
    if (taken.length) return { kind: 'addressesTaken', taken };
    const changed = bitmaps.filter((_, i) => failed(reasons[firstBitmap + i])).map((b) => b.rangeName);
    if (changed.length) return { kind: 'bitmapsChanged', ranges: changed };
    throw new NotReadyError('A concurrent request changed this claim; retry the request.');
  }

  /**
   * One TransactWriteItems:
   *
   *   [0]        Delete claim      uid = claim.uid [AND version = expected]   -> absent / versionMismatch
   *   [1]?       Delete generated  claimUid = claim.uid                        (when the marker is still this claim's)
   *   [n..]      Delete lease      claimUid = claim.uid                        -> a lease changed hands: read again
   *   [m..]      Put bitmap        version = v                                 -> bitmapsChanged
   */
  async releaseClaim(claim: Claim, held: readonly string[], bitmaps: readonly BitmapWrite[], expectedVersion?: number): Promise<BitmapReleaseOutcome> {
    const claimCondition = expectedVersion === undefined ? claimUidIs(claim.uid) : both(claimUidIs(claim.uid), versionIs(expectedVersion));
    const items: TransactWriteItem[] = [this.db.delete(keys.claim(claim.pool, claim.name), claimCondition)];
    if (claim.spec.generateName !== undefined) {
      const markerKey = keys.generated(claim.pool, claim.spec.owner.uid, claim.spec.generateName);
      const marker = await this.db.getItem(markerKey);
      if (marker?.claimUid === claim.uid) items.push(this.db.delete(markerKey, heldByClaim(claim.uid)));
    }
    for (const address of held) items.push(this.db.delete(keys.lease(claim.pool, address), heldByClaim(claim.uid)));
    for (const bitmap of bitmaps) items.push(this.db.put(bitmapToItem(bitmap), bitmapIs(bitmap.expected), false));
    const reasons = await this.db.transact(items);
    if (!reasons) return 'released';
    if (failed(reasons[0])) {
      const current = await this.db.getItem(keys.claim(claim.pool, claim.name));
      if (!current || current.uid !== claim.uid) return 'absent';
      if (expectedVersion !== undefined && current.version !== expectedVersion) return 'versionMismatch';
    }
    // A bitmap or a lease changed between the read and the write: the caller reads both again.
    return 'bitmapsChanged';
  }

  async leaseHolders(pool: string, addresses: readonly string[]): Promise<ReadonlyMap<string, string>> {
    const out = new Map<string, string>();
    const unique = [...new Set(addresses)];
    for (let i = 0; i < unique.length; i += 100) {
      let request: Record<string, { Keys: Record<string, AttributeValue>[]; ConsistentRead: boolean; ProjectionExpression: string; ExpressionAttributeNames: Record<string, string> }> | undefined = {
        [this.table]: {
          Keys: unique.slice(i, i + 100).map((a) => marshall(keys.lease(pool, a))),
          ConsistentRead: true,
          ProjectionExpression: '#address, #claimUid, #entity',
          ExpressionAttributeNames: { '#address': 'address', '#claimUid': 'claimUid', '#entity': 'entity' },
        },
      };
      for (let round = 0; request && Object.keys(request).length > 0; round += 1) {
        if (round >= 8) throw new NotReadyError('The address store kept leaving reads unprocessed; retry shortly.');
        const answer: { Responses?: Record<string, Record<string, AttributeValue>[]>; UnprocessedKeys?: typeof request } = await this.db.send(new BatchGetItemCommand({ RequestItems: request }));
        for (const raw of answer.Responses?.[this.table] ?? []) {
          const item = unmarshall(raw);
          if (item.entity === Entity.Lease) out.set(item.address as string, item.claimUid as string);
        }
        request = answer.UnprocessedKeys;
      }
    }
    return out;
  }

}
