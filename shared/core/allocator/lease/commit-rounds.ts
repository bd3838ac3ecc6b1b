import { formatAddress, type IpFamily } from '../../ip/address.ts';
import { NotReadyError, RangeFullError } from '../../errors.ts';
import {
  holdIdentityOf,
  leaseOfClaim,
  reuseDelayMs,
  type Claim,
  type ClaimAddress,
  type PoolView,
} from '../../model.ts';
import type { CommitOutcome } from '../../ports.ts';
import { ownerIdentity } from '../../occupancy/ports.ts';
import {
  checkCommitDeadline,
  explicitTakenError,
  type AllocateOptions,
  type AllocationResult,
  type ClaimDraft,
  type FamilyRequest,
} from '../allocator.ts';
import { rangeForExplicit } from '../../base/pool-geometry.ts';
import type { AllocatorEnv, CallContext, Choice } from './context.ts';
import { pickDynamic, type Picker } from './pick.ts';
import { pickSticky, predecessorOf, type Slots } from './reuse.ts';

/** One allocate call: the pool view, the claim without addresses, what it asks of each family, the deadline. */
export interface AllocateCall {
  readonly view: PoolView;
  readonly draft: ClaimDraft;
  readonly requests: readonly FamilyRequest[];
  readonly options: AllocateOptions;
}

/**
 * The stages of one allocation, in order: predecessor (a held claim of this name answers; an expired one holding
 * leases is replaced), sticky addresses, then commit rounds: pick every open slot (pickDynamic with the strategy's
 * picker), commit all in one conditional transaction, and on a lost race pick only the collided slots again.
 * @throws NotReadyError after knobs.maxCommits rounds without a commit
 */
export async function allocateInRounds(
  env: AllocatorEnv,
  picker: Picker,
  call: AllocateCall,
): Promise<AllocationResult> {
  const { view, draft, requests, options } = call;
  const { ports } = env;
  const slots: Slots = openSlots(view, requests);
  const pool = view.pool.name;
  const predecessor = await predecessorOf(env, view, draft);
  if (predecessor.kind === 'exists') return predecessor;
  const replacing = predecessor.kind === 'replacing' ? predecessor.replacing : undefined;
  await pickSticky(env, view, { owner: holdIdentityOf(draft), slots, ...(replacing ? { replacing } : {}) });
  const ctx: CallContext = {
    ...newCallContext(env, view, ownerIdentity(holdIdentityOf(draft)), slots),
    dryRun: options.dryRun === true,
  };
  const holdMs = reuseDelayMs(view.pool);
  for (let commit = 0; commit < env.knobs.maxCommits; commit += 1) {
    let claim: Claim;
    let outcome: CommitOutcome;
    try {
      // A batch keeps the picks that did not collide: they stay in flight, so the re-picks skip them.
      slots.picks.forEach((pick, i) => {
        if (pick && !pick.explicit)
          ctx.reservations.push(ports.hints.reserve(pool, slots.slots[i]!.family, pick.value));
      });
      for (const [i, slot] of slots.slots.entries()) {
        if (slots.picks[i]) continue;
        const family = slot.family;
        slots.picks[i] = await pickDynamic(
          { call: ctx, family, chosen: chosenOf(slots, family), verified: ctx.verified.get(family)! },
          picker,
        ).catch((error: unknown) => {
          throw batchRefusal(error, slots, family);
        });
      }
      claim = buildClaim(draft, requests, slots);
      await options.beforeCommit?.();
      // A preview (dryRun) answers the picks it would commit, and writes nothing.
      if (options.dryRun) return { kind: 'preview', claim };
      const leases = claim.addresses.map((a) => leaseOfClaim(claim, a, claim.createdAt, holdMs));
      const sendAt = ports.clock.nowMs();
      checkCommitDeadline(sendAt, options);
      outcome = await ports.claims.commitClaim(claim, leases, sendAt, replacing);
    } finally {
      for (const unreserve of ctx.reservations.splice(0)) unreserve();
    }
    const nowMs = ports.clock.nowMs();
    switch (outcome.kind) {
      case 'committed':
        slots.picks.forEach((pick, i) => ports.hints.markTaken(pool, slots.slots[i]!.family, pick!.value, nowMs));
        return { kind: 'allocated', claim, collisions: [...ctx.collisions.values()].reduce((a, b) => a + b, 0) };
      case 'claimExists':
        return { kind: 'exists', claim: outcome.existing };
      case 'generatedNameExists':
        return { kind: 'generatedExists', claimName: outcome.claimName };
      case 'addressesTaken':
        reopenCollided(ctx, slots, { taken: outcome.taken, nowMs });
        break;
    }
  }
  throw new NotReadyError('The pool is heavily contended right now; retry the request shortly.');
}

/** One slot per address the claim takes: a family's explicit address, or `count` dynamic picks of it. */
function openSlots(view: PoolView, requests: readonly FamilyRequest[]): Slots {
  const slots = requests.flatMap((r) => (r.explicit ? [r] : Array.from({ length: r.count ?? 1 }, () => r)));
  const picks: (Choice | undefined)[] = slots.map((r) =>
    r.explicit ? { value: r.explicit.value, range: rangeForExplicit(view, r.explicit), explicit: true } : undefined,
  );
  return { slots, picks };
}

function newCallContext(env: AllocatorEnv, view: PoolView, owner: string, slots: Slots): CallContext {
  return {
    env,
    view,
    pool: view.pool.name,
    owner,
    refreshedAt: new Map(),
    collisions: new Map(),
    collidedAt: new Map(),
    upperUsedUp: new Set(),
    counters: new Map(),
    verified: new Map(slots.slots.map((s) => [s.family, new Set<bigint>()])),
    reservations: [],
  };
}

/**
 * After a lost race: each collided dynamic slot is opened again (the rest of the batch stays as it was), its address
 * marked taken in the hint, and the call's reads of the family are known to be behind.
 * @throws AlreadyAllocatedError / AddressReleasingError when an explicit address is held
 */
function reopenCollided(
  ctx: CallContext,
  slots: Slots,
  lost: { readonly taken: Extract<CommitOutcome, { kind: 'addressesTaken' }>['taken']; readonly nowMs: number },
): void {
  const { ports } = ctx.env;
  const { nowMs } = lost;
  for (const { address, holder, inFlight } of lost.taken) {
    // Find the slot by the address written: several picks of a batch, or both of a dual-stack claim, may collide.
    const i = slots.picks.findIndex(
      (pick, j) =>
        pick !== undefined && formatAddress({ family: slots.slots[j]!.family, value: pick.value }) === address,
    );
    const pick = slots.picks[i];
    if (pick === undefined) continue;
    const family = slots.slots[i]!.family;
    // An explicit address another transaction was writing may still be free: the next round sends it again
    // (the commit's condition then tells taken from free).
    if (pick.explicit && inFlight) continue;
    if (pick.explicit) throw explicitTakenError(address, holder);
    ports.hints.markTaken(ctx.pool, family, pick.value, nowMs);
    // A lost race shows this call's reads are behind: the next picks read again (as a single claim always did).
    ctx.verified.get(family)!.clear();
    ctx.collisions.set(family, (ctx.collisions.get(family) ?? 0) + 1);
    ctx.collidedAt.set(family, nowMs);
    slots.picks[i] = undefined;
  }
}

/** The values this claim has picked so far in a family. */
function chosenOf({ slots, picks }: Slots, family: IpFamily): Set<bigint> {
  const chosen = new Set<bigint>();
  picks.forEach((pick, i) => {
    if (pick && slots[i]!.family === family) chosen.add(pick.value);
  });
  return chosen;
}

/** The claim with its addresses: the requests' families in order, each family's addresses in address order. */
function buildClaim(draft: ClaimDraft, requests: readonly FamilyRequest[], { slots, picks }: Slots): Claim {
  const addresses: ClaimAddress[] = requests.flatMap((r) =>
    (picks as Choice[])
      .filter((_, i) => slots[i]!.family === r.family)
      .sort((a, b) => (a.value < b.value ? -1 : a.value > b.value ? 1 : 0))
      // A block range's position is a block (Cidr.slot): the claim says its length.
      .map((pick) => ({
        address: formatAddress({ family: r.family, value: pick.value }),
        family: r.family,
        range: pick.range.range.name,
        ...(pick.range.cidr.slot !== undefined ? { prefixLength: pick.range.cidr.slot } : {}),
      })),
  );
  return { ...draft, addresses };
}

/**
 * A batch's RangeFull says how many addresses of the family it asked for and how many were free: the picks it had
 * made (each read free, and held back from every other pick of this container) when no further one was left.
 */
function batchRefusal(error: unknown, slots: Slots, family: IpFamily): unknown {
  if (!(error instanceof RangeFullError)) return error;
  const asked = slots.slots.filter((s) => s.family === family).length;
  if (asked < 2) return error;
  const free = slots.picks.filter((p, i) => p && slots.slots[i]!.family === family).length;
  return new RangeFullError(error.pool, error.family, error.unit, { asked, free });
}
