/**
 * A claim's consumers (the DRA claim's `reservedFor`): workloads that share a claim's addresses on purpose
 * (a VIP of a keepalived pair, a LoadBalancer IP shared by Services, a DRA claim shared by pods). A claim that has
 * consumers is released on the transition "was used -> is not used any more": removing its last consumer releases it
 * in the same transaction (the claim's delete, conditioned on the version read, takes its list with it). A claim that
 * never had a consumer is left to its other paths, as before.
 *
 * Every change is conditioned on the claim's version as read (the controller's version-guarded update): concurrent
 * changes race, the first write wins, and the others read the claim again and try anew, up to CONSUMER_TRIES.
 *
 * A claim with consumers is released only through them: DELETE of the claim is ClaimInUse, and its owner's release
 * leaves it (its consumers still use the addresses). Consumers are only for claims without an expiry: a TTL would be a
 * second lifetime racing the consumers' (make the claim permanent first: renew with ttlSeconds null).
 */
import { requireCreatorOrAdministrator, type Principal } from '../access.ts';
import {
  ClaimHasChildrenError,
  ConflictError,
  InvalidArgumentError,
  NotFoundError,
  NotReadyError,
  TooManyConsumersError,
} from '../errors.ts';
import { CONSUMER_FIELD_BYTES, isExpired, MAX_CONSUMERS, type Claim, type Consumer } from '../model.ts';
import { checkOwnerField } from '../names.ts';
import { events } from '../events.ts';
import type { IpamEvent } from '../events.ts';
import { type Deps } from './deps.ts';
import { nowIso } from '../base/time.ts';
import { releaseAsRead } from './claims.ts';

/**
 * Tries of one consumer change. A lost try means another change of the claim committed in between, so N changes in
 * flight at once all land within N tries; 64 covers a burst of 64 (the 50 concurrent adders) at one read and
 * one two-item transaction a try, with a jittered wait after each lost one (Deps.pause: up to 2^lost ms, at most 64),
 * well inside the API function's timeout.
 */
export const CONSUMER_TRIES = 64;

type ConsumerDeps = Pick<Deps, 'claims' | 'views' | 'allocator' | 'hints' | 'clock' | 'pause'>;

/** Checks a consumer field: an owner field (names.ts) of at most CONSUMER_FIELD_BYTES in UTF-8. @throws InvalidArgumentError */
function checkConsumerField(value: unknown, field: string): string {
  const text = checkOwnerField(value, field);
  if (new TextEncoder().encode(text).length > CONSUMER_FIELD_BYTES) {
    throw new InvalidArgumentError(
      `${field} must be at most ${CONSUMER_FIELD_BYTES} bytes in UTF-8 (253 ASCII characters), so that ${MAX_CONSUMERS} consumers fit one claim.`,
      field,
    );
  }
  return text;
}

/** A consumer as the client gave it, checked. @throws InvalidArgumentError */
export function checkConsumer(consumer: Partial<Consumer> | undefined): Consumer {
  return {
    kind: checkConsumerField(consumer?.kind, 'kind'),
    name: checkConsumerField(consumer?.name, 'name'),
    uid: checkConsumerField(consumer?.uid, 'uid'),
  };
}

const consumersOf = (claim: Claim): readonly Consumer[] => claim.consumers ?? [];

async function heldClaim(deps: ConsumerDeps, pool: string, name: string): Promise<Claim | undefined> {
  const claim = await deps.claims.getClaim(pool, name);
  return claim && !isExpired(claim, deps.clock.nowMs()) ? claim : undefined;
}

/**
 * Adds a consumer to a claim, once per uid: a consumer already listed answers the claim as it is (a retry); the same
 * uid under another kind or name is a conflict. In a pool with `access`, only the claim's creator or an
 * administrator may add one.
 * @throws NotFoundError (no such held claim); ConflictError (a TTL claim, the uid listed as another workload, or the
 *   claim kept changing under CONSUMER_TRIES tries); TooManyConsumersError (the 257th); NotReadyError (other
 *   transactions kept cancelling the write); ForbiddenError
 */
export async function addConsumer(
  deps: ConsumerDeps,
  cmd: { pool: string; claim: string; consumer: Partial<Consumer>; caller?: Principal },
): Promise<{ claim: Claim; added: boolean }> {
  const consumer = checkConsumer(cmd.consumer);
  const view = await deps.views.get(cmd.pool, deps.clock.nowMs());
  let busy = false;
  for (let attempt = 0; attempt < CONSUMER_TRIES; attempt += 1) {
    const claim = await heldClaim(deps, cmd.pool, cmd.claim);
    if (!claim) throw new NotFoundError('claim', cmd.claim);
    requireCreatorOrAdministrator(view.pool, claim, cmd.caller, 'add consumers to');
    const listed = consumersOf(claim).find((c) => c.uid === consumer.uid);
    if (listed) {
      if (listed.kind === consumer.kind && listed.name === consumer.name) return { claim, added: false };
      throw new ConflictError(
        `Claim ${JSON.stringify(claim.name)} already lists uid ${JSON.stringify(consumer.uid)} as consumer ${listed.kind}/${listed.name}.`,
      );
    }
    if (claim.expiresAt !== undefined) {
      throw new ConflictError(
        `Claim ${JSON.stringify(claim.name)} expires at ${new Date(claim.expiresAt).toISOString()}; a claim with consumers is held until its last consumer leaves, so confirm its hold first (renew with ttlSeconds null).`,
      );
    }
    if (consumersOf(claim).length >= MAX_CONSUMERS) throw new TooManyConsumersError(claim.name, MAX_CONSUMERS);
    const event = events.consumerAdded(claim, consumer, nowIso(deps), cmd.caller);
    const outcome = await deps.claims.changeConsumers(claim, { add: consumer, event });
    if (outcome === 'written')
      return {
        claim: { ...claim, consumers: [...consumersOf(claim), consumer], version: claim.version + 1 },
        added: true,
      };
    busy = outcome === 'busy';
    await deps.pause?.(attempt + 1);
  }
  throw giveUp(cmd.claim, busy);
}

/** What removing a consumer did: `claim` is the claim as it stays, absent when it was released or did not exist. */
export interface ConsumerRemoval {
  readonly removed: boolean;
  readonly released: boolean;
  readonly claim?: Claim;
}

/**
 * Removes a consumer from a claim (idempotent: an absent claim or an unlisted uid changes nothing). Removing the last
 * one releases the claim and its addresses in one transaction, as a client's release does (the pool's reuse delay,
 * `releasedBy`, a ClaimReleased event in a pool with `access`), conditioned on the version read. In a pool with
 * `access`, only the claim's creator or an administrator may remove one.
 * @throws ConflictError (kept changing); NotReadyError (kept cancelled); ForbiddenError
 */
export async function removeConsumer(
  deps: ConsumerDeps,
  cmd: { pool: string; claim: string; uid: string; caller?: Principal },
): Promise<ConsumerRemoval> {
  const uid = checkOwnerField(cmd.uid, 'uid');
  const view = await deps.views.get(cmd.pool, deps.clock.nowMs());
  return leave(deps, {
    ...cmd,
    uid,
    allowed: (claim) => (requireCreatorOrAdministrator(view.pool, claim, cmd.caller, 'remove consumers from'), true),
  });
}

/**
 * Removes `uid` from the claim's consumers, releasing the claim with the last one, for a caller `allowed` lets do it
 * (false: left as it is). The owner release (reconciler/owners.ts) takes this path for every claim a gone uid consumes.
 */
export async function leave(
  deps: ConsumerDeps,
  cmd: { pool: string; claim: string; uid: string; caller?: Principal; allowed: (claim: Claim) => boolean },
): Promise<ConsumerRemoval> {
  const { uid } = cmd;
  let busy = false;
  for (let attempt = 0; attempt < CONSUMER_TRIES; attempt += 1) {
    const claim = await heldClaim(deps, cmd.pool, cmd.claim);
    if (!claim) return { removed: false, released: false };
    if (!cmd.allowed(claim)) return { removed: false, released: false, claim };
    const leaving = consumersOf(claim).find((c) => c.uid === uid);
    if (!leaving) return { removed: false, released: false, claim };
    const event = events.consumerRemoved(claim, leaving, nowIso(deps), cmd.caller);
    // A claim whose block is another pool's range is kept when its last consumer leaves: it is released like any
    // other once the range is gone (its release would be refused now, and the consumer would stay listed for good).
    if (consumersOf(claim).length > 1 || claim.children?.length) {
      const outcome = await deps.claims.changeConsumers(claim, { remove: leaving, event });
      if (outcome === 'written')
        return {
          removed: true,
          released: false,
          claim: { ...claim, consumers: consumersOf(claim).filter((c) => c.uid !== uid), version: claim.version + 1 },
        };
      busy = outcome === 'busy';
      await deps.pause?.(attempt + 1);
      continue;
    }
    const outcome = await releaseWithLastConsumer(deps, {
      claim,
      leaving,
      event,
      ...(cmd.caller ? { caller: cmd.caller } : {}),
    }).catch((error: unknown) => {
      // A child range was made from the claim since the read: read it again (and keep it).
      if (error instanceof ClaimHasChildrenError) return 'changed' as const;
      throw error;
    });
    if (outcome === 'released') return { removed: true, released: true };
    // Released by another request meanwhile: nothing left to remove.
    if (outcome === 'absent') return { removed: false, released: false };
    await deps.pause?.(attempt + 1);
  }
  throw giveUp(cmd.claim, busy);
}

/**
 * The release of a claim whose last consumer leaves: the claim's delete at the version read (so a consumer that joined
 * meanwhile keeps it) with its leases, as deleteClaim writes it; then the consumer's index item, which names the
 * released incarnation (a crash before that write leaves it to be dropped by the next reader: consumedBy's readers
 * drop entries whose claim is another incarnation or gone). 'changed' when the claim changed first (read it again).
 */
async function releaseWithLastConsumer(
  deps: ConsumerDeps,
  args: { claim: Claim; leaving: Consumer; event: IpamEvent; caller?: Principal },
): Promise<'released' | 'absent' | 'changed'> {
  const { claim, caller } = args;
  const view = await deps.views.get(claim.pool, deps.clock.nowMs());
  // As deleteClaim does; with no `access` record, this consumer's leaving is the release's event.
  const outcome = await releaseAsRead(deps, {
    pool: view.pool,
    claim,
    event: args.event,
    ...(caller ? { caller } : {}),
  });
  if (outcome === 'versionMismatch') return 'changed';
  await deps.claims.dropConsumerIndex(claim.pool, args.leaving.uid, { claim: claim.name, claimUid: claim.uid });
  return outcome;
}

function giveUp(claim: string, busy: boolean): Error {
  // Still cancelled by other transactions: the engine is busy on these items, not the claim changing.
  if (busy)
    return new NotReadyError(
      `Other requests kept writing the items of claim ${JSON.stringify(claim)}; retry the request.`,
    );
  return new ConflictError(
    `Claim ${JSON.stringify(claim)} kept changing while its consumers were being changed; retry the request.`,
  );
}
