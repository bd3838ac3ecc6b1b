import { RangeState, type Range } from '../../../core/model.ts';
import { attributeIs, both, claimUidIs, either, itemIsAbsent, versionIs, type Condition } from '../conditions.ts';
import { itemToClaim } from '../codec.ts';
import { keys } from '../keys.ts';
import type { Table, WriteOp } from '../table.ts';
import { stampRangeGeneration, transactRangeChange } from './range-generation.ts';

/** This Terminating incarnation of the range, still as it was marked (a range made again and deleted again is another). */
export function isTerminatingAsMarked(range: Range): Condition {
  return both(
    attributeIs('state', RangeState.Terminating),
    attributeIs('deletionRequestedAt', range.deletionRequestedAt ?? ''),
    attributeIs('createdAt', range.createdAt),
  );
}

/**
 * A range's removal: one TransactWriteItems, in this order:
 *
 *   Delete range         still this Terminating incarnation (isTerminatingAsMarked)    -> changed
 *   Delete legacy lock   absent OR names this range                                     (legacy ranges only)
 *   ...more              what goes with the range (bitmap, strikes, usage, the event)
 *   Put generation x16   the pool's new range generation (`generation`, a fresh id)
 *
 * A legacy range's lock (keys.legacyLock) goes with it, so the family's lock is free exactly when no legacy range of
 * the family is left. A lock naming another range is left alone: that happens only on a table written before locks
 * existed, where two legacy ranges of one family could be created together; the removal is then written again
 * without the lock.
 */
export async function removeRange(
  table: Table,
  range: Range,
  generation: string,
  extra: readonly WriteOp[] = [],
): Promise<'removed' | 'changed'> {
  const more = [...extra, ...(await unmarkSource(table, range))];
  const rangeOp: WriteOp = {
    kind: 'delete',
    key: keys.range(range.pool, range.name),
    condition: isTerminatingAsMarked(range),
  };
  const stamp = stampRangeGeneration(range.pool, generation);
  if (range.legacy) {
    const lock: WriteOp = {
      kind: 'delete',
      key: keys.legacyLock(range.pool, range.family),
      condition: either(itemIsAbsent(), attributeIs('range', range.name)),
    };
    const verdicts = await transactRangeChange(table, [rangeOp, lock, ...more, ...stamp]);
    if (!verdicts) return 'removed';
    if (verdicts[1]?.code !== 'ConditionalCheckFailed' || verdicts[0]?.code === 'ConditionalCheckFailed')
      return 'changed';
  }
  return (await transactRangeChange(table, [rangeOp, ...more, ...stamp])) ? 'changed' : 'removed';
}

/**
 * A nested range's removal takes its marker off its source claim (Claim.children) in the same transaction, on the
 * condition that the claim is still as read (a new version): once the range is gone the claim may be released. None
 * when the range has no source, or the claim no longer lists it.
 */
export async function unmarkSource(table: Table, range: Pick<Range, 'pool' | 'name' | 'source'>): Promise<WriteOp[]> {
  if (!range.source) return [];
  const item = await table.get(keys.claim(range.source.pool, range.source.claim));
  const claim = item ? itemToClaim(item) : undefined;
  if (!claim?.children?.some((c) => c.pool === range.pool && c.range === range.name)) return [];
  const left = claim.children.filter((c) => !(c.pool === range.pool && c.range === range.name));
  const key = keys.claim(claim.pool, claim.name);
  const version = claim.version + 1;
  const update = left.length > 0 ? { set: { children: left, version } } : { set: { version }, remove: ['children'] };
  return [{ kind: 'update', key, update, condition: both(claimUidIs(claim.uid), versionIs(claim.version)) }];
}
