import type { Claim } from '../../../core/model.ts';
import { expiryIndex, ttlOf } from '../codec.ts';
import { claimUidIs, heldByClaim } from '../conditions.ts';
import { keys } from '../keys.ts';
import type { TxVerdict, WriteOp } from '../table.ts';

/** `lost`: a lease expired and went to another claim; `absent`: the claim is gone or another incarnation. */
export type RenewVerdict = 'absent' | 'lost' | 'conflict';

/**
 * A renewal: one TransactWriteItems moving the claim, its marker and every lease to the new expiry together:
 *
 *   Update claim       uid = claim.uid         SET expiresAt, ttl, expiry index; ADD version 1   -> absent
 *   Update generated   claimUid = claim.uid    SET expiresAt, ttl                                 (when held)
 *   Update lease       claimUid = claim.uid    SET expiresAt, ttl, expiry index                   -> lost
 *
 * Leases move to their new expiry bucket with the claim, so the expiry index never points at a stale hour.
 */
export function claimRenewal(claim: Claim, expiresAt: number, markerHeld: boolean): { ops: WriteOp[]; decode: (verdicts: readonly TxVerdict[]) => RenewVerdict } {
  const expiry = { expiresAt, ...ttlOf(expiresAt) };
  const mine = heldByClaim(claim.uid);
  const ops: WriteOp[] = [
    { kind: 'update', key: keys.claim(claim.pool, claim.name), update: { set: { ...expiry, ...expiryIndex(claim.pool, claim.name, expiresAt) }, add: { version: 1 } }, condition: claimUidIs(claim.uid) },
  ];
  if (markerHeld) ops.push({ kind: 'update', key: keys.generated(claim.pool, claim.spec.owner.uid, claim.spec.generateName!), update: { set: expiry }, condition: mine });
  const firstLease = ops.length;
  for (const a of claim.addresses) {
    ops.push({ kind: 'update', key: keys.lease(claim.pool, a.address), update: { set: { ...expiry, ...expiryIndex(claim.pool, a.address, expiresAt) } }, condition: mine });
  }
  const decode = (verdicts: readonly TxVerdict[]): RenewVerdict => {
    if (verdicts[0]?.code === 'ConditionalCheckFailed') return 'absent';
    if (verdicts.slice(firstLease).some((v) => v.code === 'ConditionalCheckFailed')) return 'lost';
    return 'conflict';
  };
  return { ops, decode };
}
