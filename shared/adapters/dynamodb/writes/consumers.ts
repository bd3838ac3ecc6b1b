import type { Claim, Consumer } from '../../../core/model.ts';
import type { ConsumedClaim, ConsumerChange } from '../../../core/ports.ts';
import { eventToItem, newEventId, type Item } from '../codec.ts';
import { attributeIs, both, claimUidIs, itemIsAbsent, versionIs } from '../conditions.ts';
import { Entity, keys, SCHEMA_VERSION } from '../keys.ts';
import type { TxVerdict, WriteOp } from '../table.ts';

/**
 * `claimChanged`: the claim is gone, another incarnation, or at another version (another change won): read it again;
 * `busy`: another transaction was writing one of its items (DynamoDB cancels rather than waits): try again.
 */
export type ConsumerVerdict = 'claimChanged' | 'busy';

/** A consumer's index item: which claim (and incarnation) lists the uid, so its owner release finds it. */
export function consumerIndexItem(claim: Claim, consumer: Consumer): Item {
  return {
    ...keys.consumer(claim.pool, consumer.uid, claim.name),
    entity: Entity.Consumer,
    schema: SCHEMA_VERSION,
    pool: claim.pool,
    claim: claim.name,
    claimUid: claim.uid,
    kind: consumer.kind,
    name: consumer.name,
    uid: consumer.uid,
  };
}

/** The claim an index item names. */
export function consumedOf(item: Item): ConsumedClaim {
  return { claim: item.claim as string, claimUid: item.claimUid as string };
}

/**
 * A consumer change: one TransactWriteItems of two or three items:
 *
 *   Update claim              uid = claim.uid, version = as read   SET consumers (the new list); ADD version 1   -> claimChanged
 *   Put consumer index        (add)      the uid's item naming this claim incarnation
 *   or Delete consumer index  (remove)
 *   Put event                 absent                                                                             (change.event)
 *
 * The whole list is written, not appended: the version condition is what orders concurrent changes (the first wins,
 * the others read again), so a uid can never be listed twice. The last consumer's removal is not this write but a
 * release (use-cases/consumers.ts), except on a claim with a child range, which is kept.
 */
export function consumerChange(
  claim: Claim,
  change: ConsumerChange,
): { ops: WriteOp[]; decode: (verdicts: readonly TxVerdict[]) => ConsumerVerdict } {
  const before = claim.consumers ?? [];
  const after = 'add' in change ? [...before, change.add] : before.filter((c) => c.uid !== change.remove.uid);
  const ops: WriteOp[] = [
    {
      kind: 'update',
      key: keys.claim(claim.pool, claim.name),
      // The last one's removal leaves the claim as one that never had a consumer (a claim with a child range is kept).
      update:
        after.length > 0
          ? { set: { consumers: after }, add: { version: 1 } }
          : { remove: ['consumers'], add: { version: 1 } },
      condition: both(claimUidIs(claim.uid), versionIs(claim.version)),
    },
    'add' in change
      ? { kind: 'put', item: consumerIndexItem(claim, change.add) }
      : { kind: 'delete', key: keys.consumer(claim.pool, change.remove.uid, claim.name) },
  ];
  if (change.event) ops.push({ kind: 'put', item: eventToItem(change.event, newEventId()), condition: itemIsAbsent() });
  const decode = (verdicts: readonly TxVerdict[]): ConsumerVerdict =>
    verdicts[0]?.code === 'ConditionalCheckFailed' ? 'claimChanged' : 'busy';
  return { ops, decode };
}

/** The delete of an index item left by a released incarnation: only while it still names that incarnation. */
export function consumerIndexDrop(pool: string, uid: string, consumed: ConsumedClaim): WriteOp {
  return {
    kind: 'delete',
    key: keys.consumer(pool, uid, consumed.claim),
    condition: attributeIs('claimUid', consumed.claimUid),
  };
}
