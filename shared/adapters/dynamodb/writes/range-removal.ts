import { RangeState, type Range } from '../../../core/model.ts';
import { attributeIs, both, either, itemIsAbsent, type Condition } from '../conditions.ts';
import { keys } from '../keys.ts';
import type { Table, WriteOp } from '../table.ts';
import { stampRangeGeneration, transactRangeChange } from './range-generation.ts';

/** This Terminating incarnation of the range, still as it was marked (a range made again and deleted again is another). */
export function isTerminatingAsMarked(range: Range): Condition {
  return both(attributeIs('state', RangeState.Terminating), attributeIs('deletionRequestedAt', range.deletionRequestedAt ?? ''), attributeIs('createdAt', range.createdAt));
}

/**
 * A range's removal: one TransactWriteItems, in this order:
 *
 *   Delete range         still this Terminating incarnation (isTerminatingAsMarked)    -> changed
 *   Delete legacy slot   absent OR names this range                                     (legacy ranges only)
 *   ...more              what goes with the range (bitmap, strikes, usage, the event)
 *   Put generation x16   the pool's new range generation (`generation`, a fresh id)
 *
 * A legacy range's slot (keys.legacySlot) goes with it, so the family's slot is free exactly when no legacy range of
 * the family is left. A slot naming another range is left alone: that happens only on a table written before slots
 * existed, where two legacy ranges of one family could be created together; the removal is then written again
 * without the slot.
 */
export async function removeRange(table: Table, range: Range, generation: string, more: readonly WriteOp[] = []): Promise<'removed' | 'changed'> {
  const rangeOp: WriteOp = { kind: 'delete', key: keys.range(range.pool, range.name), condition: isTerminatingAsMarked(range) };
  const stamp = stampRangeGeneration(range.pool, generation);
  if (range.legacy) {
    const slot: WriteOp = { kind: 'delete', key: keys.legacySlot(range.pool, range.family), condition: either(itemIsAbsent(), attributeIs('range', range.name)) };
    const verdicts = await transactRangeChange(table, [rangeOp, slot, ...more, ...stamp]);
    if (!verdicts) return 'removed';
    if (verdicts[1]?.code !== 'ConditionalCheckFailed' || verdicts[0]?.code === 'ConditionalCheckFailed') return 'changed';
  }
  return (await transactRangeChange(table, [rangeOp, ...more, ...stamp])) ? 'changed' : 'removed';
}
