import { LeaseState, PoolState } from '../../shared/core/model.ts';
import type { Item } from '../../shared/adapters/dynamodb/codec.ts';
import { keys, type Key } from '../../shared/adapters/dynamodb/keys.ts';
import type { TxVerdict, WriteOp, WriteResult } from '../../shared/adapters/dynamodb/table.ts';
import type { MemoryTable } from '../../shared/adapters/memory/memory-table.ts';
import { PassThroughTable } from './pass-through-table.ts';

/**
 * The "used up" rule's write-side half, checked on every write instead of kept by care: a write that can free an
 * address (deletes a lease item, makes it Released, or gives it an earlier expiry or a first one) must bump a freed
 * counter of the lease's range in the same transaction (writes/freed.ts: freedBumps), or a seal read before it would
 * still hold (but in a Terminating pool, whose finalizer removes its seals and counters before its leases). Answers one sentence per such write found in `ops` without its bump; `before` reads an item as stored
 * before the operations run.
 */
export function freeingWithoutBump(ops: readonly WriteOp[], before: (key: Key) => Item | undefined): string[] {
  const bumped = new Set(
    ops
      .filter((op) => op.kind === 'update' && op.key.PK.startsWith('FREED#') && op.update.add?.n !== undefined)
      .map((op) => (op as { key: Key }).key.PK.split('#').slice(1, 3).join('#')),
  );
  const found: string[] = [];
  for (const op of ops) {
    if (op.kind === 'check') continue;
    const key = op.kind === 'put' ? { PK: op.item.PK as string, SK: op.item.SK as string } : op.key;
    if (!key.PK.startsWith('LEASE#')) continue;
    const old = before(key);
    if (!old) continue;
    if (!frees(op, old)) continue;
    const range = typeof old.range === 'string' ? old.range : '?';
    const pool = key.PK.split('#')[1]!;
    // A Terminating pool's finalizer: nothing allocates there, and its seals and counters went first.
    if (before(keys.pool(pool))?.state === PoolState.Terminating) continue;
    if (!bumped.has(`${pool}#${range}`))
      found.push(`${op.kind} of ${key.PK} frees an address of range ${range} and bumps none of its freed counters`);
  }
  return found;
}

/** Whether an operation on an existing lease item can make its address free for someone it was not free for. */
function frees(op: Exclude<WriteOp, { kind: 'check' }>, old: Item): boolean {
  if (op.kind === 'delete') return true;
  const set = op.kind === 'put' ? op.item : { ...op.update.set, ...op.update.setIfAbsent };
  const removed = op.kind === 'update' ? (op.update.remove ?? []) : [];
  if (set.state === LeaseState.Released && old.state !== LeaseState.Released) return true;
  const oldExpiry = typeof old.expiresAt === 'number' ? old.expiresAt : undefined;
  const newExpiry =
    typeof set.expiresAt === 'number'
      ? set.expiresAt
      : removed.includes('expiresAt') || op.kind === 'put'
        ? undefined
        : oldExpiry;
  return newExpiry !== undefined && (oldExpiry === undefined || newExpiry < oldExpiry);
}

/**
 * A MemoryTable that throws after any committed write breaking freeingWithoutBump's rule (and lists it in
 * `violations`). The contract suites' memory engine runs on it, so every write shape the adapters build in those
 * suites is checked. The check reads the items before the write in the same synchronous step as the write.
 */
export class FreedAudit extends PassThroughTable<MemoryTable> {
  readonly violations: string[] = [];

  override async write(op: WriteOp): Promise<WriteResult> {
    const found = freeingWithoutBump([op], (key) => this.inner.peek(key));
    const result = await this.inner.write(op);
    if (result.ok) this.report(found);
    return result;
  }

  override async transact(ops: readonly WriteOp[]): Promise<TxVerdict[] | undefined> {
    const found = freeingWithoutBump(ops, (key) => this.inner.peek(key));
    const verdicts = await this.inner.transact(ops);
    if (!verdicts) this.report(found);
    return verdicts;
  }

  private report(found: readonly string[]): void {
    if (found.length === 0) return;
    this.violations.push(...found);
    throw new Error(`FreedAudit: ${found.join('; ')}`);
  }
}
