import type { TxVerdict } from '../table.ts';

/**
 * What every write shape reads a cancellation reason as. A failed condition and a conflict with another transaction
 * in flight mean the same for an address or a bitmap: someone else got there first (a lease taken, a bitmap moved),
 * so the caller picks another address or reads again.
 */
export function lostRace(verdict: TxVerdict | undefined): boolean {
  return verdict?.code === 'ConditionalCheckFailed' || verdict?.code === 'TransactionConflict';
}
