import { Entity, keys, RANGE_GENERATION_COPIES, SCHEMA_VERSION } from '../keys.ts';
import type { Table, TxVerdict, WriteOp } from '../table.ts';

/**
 * A pool's range generation: a value that changes with every change of the pool's ranges, kept in
 * RANGE_GENERATION_COPIES equal copies (keys.rangeGeneration) so that its reads spread over as many partitions.
 *
 *   Put RGEN#<pool>#0 ... RGEN#<pool>#15   generation = <fresh id>    with every range add, mark and removal
 *   Delete the same copies                                          with the pool's deletion
 *
 * The copies are written only inside the transaction of the change, all of them, so they are always equal, and a
 * strongly consistent GetItem of any one of them is serialized with those transactions: it sees every change that
 * committed before it. The value is a fresh id, never a counter: a counter would start again after the pool was
 * deleted (its copies go with it) and could match a view of the pool's earlier life.
 */
export function stampRangeGeneration(pool: string, generation: string): WriteOp[] {
  return Array.from({ length: RANGE_GENERATION_COPIES }, (_, copy) => ({
    kind: 'put' as const,
    item: {
      ...keys.rangeGeneration(pool, copy),
      entity: Entity.RangeGeneration,
      schema: SCHEMA_VERSION,
      pool,
      generation,
    },
  }));
}

/** The copies' removal, in the transaction that deletes the pool. */
export function dropRangeGeneration(pool: string): WriteOp[] {
  return Array.from({ length: RANGE_GENERATION_COPIES }, (_, copy) => ({
    kind: 'delete' as const,
    key: keys.rangeGeneration(pool, copy),
  }));
}

/** Times a range change's transaction is sent when it only met another transaction in flight (TransactionConflict). */
const RANGE_CHANGE_ATTEMPTS = 3;

/**
 * Sends a range change's transaction (its own operations, then the generation's copies), again when it was cancelled
 * only by a conflict: every change of a pool's ranges writes the same copies, so two at once on one pool cancel each
 * other; a cancelled call took a round trip, by which time the other has usually committed. The verdicts, if any, are
 * those of all the operations, the change's first.
 */
export async function transactRangeChange(table: Table, ops: readonly WriteOp[]): Promise<TxVerdict[] | undefined> {
  for (let attempt = 1; ; attempt += 1) {
    const verdicts = await table.transact(ops);
    const conflictOnly =
      verdicts !== undefined &&
      verdicts.some((v) => v.code === 'TransactionConflict') &&
      verdicts.every((v) => v.code !== 'ConditionalCheckFailed');
    if (!conflictOnly || attempt >= RANGE_CHANGE_ATTEMPTS) return verdicts;
  }
}
