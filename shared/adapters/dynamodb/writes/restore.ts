import type { Claim, Lease } from '../../../core/model.ts';
import type { IpamEvent } from '../../../core/use-cases/reconcile-ports.ts';
import { eventToItem, leaseToItem } from '../codec.ts';
import { both, claimUidIs, isFreeAt, itemIsAbsent, versionIs } from '../conditions.ts';
import { keys } from '../keys.ts';
import type { TxVerdict, WriteOp } from '../table.ts';

export type RestoreVerdict = 'claimChanged' | 'taken' | 'conflict';

/**
 * The reconciler writing back the missing lease of a held claim: one TransactWriteItems:
 *
 *   Check claim   uid = claim.uid AND version = claim.version   -> claimChanged
 *   Put lease     absent OR expired                            -> taken
 *   Put event     absent
 */
export function leaseRestore(
  restore: { readonly claim: Claim; readonly lease: Lease; readonly nowMs: number; readonly shards: number },
  event: { event: IpamEvent; id: string },
): { ops: WriteOp[]; decode: (verdicts: readonly TxVerdict[]) => RestoreVerdict } {
  const { claim, lease, nowMs, shards } = restore;
  const ops: WriteOp[] = [
    {
      kind: 'check',
      key: keys.claim(claim.pool, claim.name),
      condition: both(claimUidIs(claim.uid), versionIs(claim.version)),
    },
    { kind: 'put', item: leaseToItem(lease, shards), condition: isFreeAt(nowMs) },
    { kind: 'put', item: eventToItem(event.event, event.id), condition: itemIsAbsent() },
  ];
  const decode = (verdicts: readonly TxVerdict[]): RestoreVerdict => {
    if (verdicts[0]?.code === 'ConditionalCheckFailed') return 'claimChanged';
    if (verdicts[1]?.code === 'ConditionalCheckFailed') return 'taken';
    return 'conflict';
  };
  return { ops, decode };
}
