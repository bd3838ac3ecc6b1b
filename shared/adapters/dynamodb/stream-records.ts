import type { AttributeValue as SdkAttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue, DynamoDBRecord } from 'aws-lambda';
import type { LeaseTransition } from '../../core/base/lease-change.ts';
import { LeaseItemPresence, type LeaseChange } from '../../core/base/lease-change.ts';
import type { Lease } from '../../core/model.ts';
import { itemToLease } from './codec.ts';
import { Entity, leaseOfKey } from './keys.ts';

/** The principal of DynamoDB's own TTL deletions in a stream record's userIdentity. */
export const TTL_PRINCIPAL = 'dynamodb.amazonaws.com';

/** True for a REMOVE made by DynamoDB's TTL (userIdentity type Service, principal dynamodb.amazonaws.com). */
export function isTtlDeletion(record: DynamoDBRecord): boolean {
  return (
    record.eventName === 'REMOVE' &&
    record.userIdentity?.type === 'Service' &&
    record.userIdentity?.principalId === TTL_PRINCIPAL
  );
}

const text = (image: Record<string, AttributeValue> | undefined, name: string): string | undefined => image?.[name]?.S;

/**
 * What a stream record says about a lease, or undefined for anything else (pools, ranges, claims, bitmaps, events):
 *
 *   INSERT  lease -> held          (a new lease)
 *   MODIFY  lease -> held          (renewed, or an expired lease taken over by another claim: the bit stays set)
 *   REMOVE  lease -> gone          (released, deleted by the reconciler, or by TTL: userIdentity dynamodb.amazonaws.com)
 *
 * The image read is the new one, or the old one of a REMOVE; a record without images (a KEYS_ONLY stream) is read
 * from its key `LEASE#<pool>#<address>`.
 */
export function leaseChangeOf(record: DynamoDBRecord): LeaseChange | undefined {
  const id = record.dynamodb?.SequenceNumber;
  if (!id) return undefined;
  const gone = record.eventName === 'REMOVE';
  if (!gone && record.eventName !== 'INSERT' && record.eventName !== 'MODIFY') return undefined;
  const image = gone ? record.dynamodb?.OldImage : record.dynamodb?.NewImage;
  const state = gone ? LeaseItemPresence.Gone : LeaseItemPresence.Held;
  if (image) {
    if (text(image, 'entity') !== Entity.Lease) return undefined;
    const pool = text(image, 'pool');
    const address = text(image, 'address');
    return pool && address ? { id, pool, address, state, transition: transitionOf(record) } : undefined;
  }
  const lease = leaseOfKey(text(record.dynamodb?.Keys, 'PK'));
  return lease ? { id, ...lease, state } : undefined;
}

/** A lease image as a Lease (undefined when absent or not a lease). */
function leaseOfImage(image: Record<string, AttributeValue> | undefined): Lease | undefined {
  if (!image || text(image, 'entity') !== Entity.Lease) return undefined;
  // Lease images hold no binary attributes, the one place Lambda's record shape (base64 text) and the SDK's differ.
  return itemToLease(unmarshall(image as Record<string, SdkAttributeValue>));
}

/** The lease before and after a record, with DynamoDB's time of the change and whether its TTL made it. */
export function transitionOf(record: DynamoDBRecord): LeaseTransition {
  const seconds = record.dynamodb?.ApproximateCreationDateTime;
  return {
    ...(record.eventName !== 'INSERT' ? { before: leaseOfImage(record.dynamodb?.OldImage) } : {}),
    ...(record.eventName !== 'REMOVE' ? { after: leaseOfImage(record.dynamodb?.NewImage) } : {}),
    atMs: typeof seconds === 'number' ? seconds * 1000 : 0,
    byTtl: isTtlDeletion(record),
  };
}
