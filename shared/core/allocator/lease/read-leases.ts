import type { LeaseExpiry } from '../../occupancy/ports.ts';
import type { FamilyPick } from './context.ts';

/**
 * Stage "read the leases": the candidates really free for this owner identity, read free earlier in this call
 * (`verified`), or read now (one consistent batch) with no lease item, an expired one, or a Released one held for this
 * owner (its commit may take it back). The ones read free join `verified`; the taken ones are remembered like
 * collisions and told to `onTaken`.
 */
export async function readFree<T extends { readonly value: bigint }>(
  pick: FamilyPick,
  candidates: readonly T[],
  onTaken?: (state: LeaseExpiry) => void,
  verified: Set<bigint> = pick.verified,
): Promise<T[]> {
  const { call, family } = pick;
  const { ports, units } = call.env;
  const unread = candidates.filter((c) => !verified.has(c.value)).map((c) => units.keyOf(family, c.value));
  const states = unread.length ? await ports.leaseStates(call.pool, unread) : new Map<string, LeaseExpiry>();
  const nowMs = ports.clock.nowMs();
  return candidates.filter((c) => {
    if (verified.has(c.value)) return true;
    const state = states.get(units.keyOf(family, c.value));
    const taken =
      state !== undefined && (state.expiresAt === undefined || state.expiresAt > nowMs) && state.heldFor !== call.owner;
    if (taken) {
      ports.hints.markTaken(call.pool, family, c.value, nowMs);
      onTaken?.(state);
    } else {
      verified.add(c.value);
    }
    return !taken;
  });
}
