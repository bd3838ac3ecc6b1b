/**
 * The claim use cases: create (create-claim.ts, its spec in claim-spec.ts), get, list, delete, renew. They share the
 * spec's normalization and checks and the idempotency rule (sameOrConflict: a repeated request returns the claim,
 * another spec is a conflict).
 */
import { parseAddress } from '../ip/address.ts';
import {
  ClaimExpiredError,
  ClaimHasChildrenError,
  ClaimHasConsumersError,
  ClaimInUseError,
  ConflictError,
  NotFoundError,
  NotLeasedError,
  NotReadyError,
  PreconditionFailedError,
} from '../errors.ts';
import { holdOf, isExpired, reuseDelayMs, type Claim, type Pool } from '../model.ts';
import type { ClaimFilter, Page, PageQuery, ReleaseOutcome } from '../ports.ts';
import type { IpamEvent } from '../events.ts';
import { type Deps } from './deps.ts';
import { nowIso, pageLimit } from '../base/time.ts';
import { requireCreatorOrAdministrator, type Principal } from '../access.ts';
import { events } from '../events.ts';
import { checkTtl, CLAIM_TRIES } from './claim-spec.ts';
export {
  CLAIM_TRIES,
  MAX_BATCH_COUNT,
  MAX_TTL_SECONDS,
  normalizeSpec,
  resolveFamilies,
  type CreateClaimCommand,
} from './claim-spec.ts';
export {
  createClaim,
  RETIRED_RANGE_ROUNDS,
  servedByReadyRanges,
  UNSETTLED_MS,
  type CreateClaimAnswer,
} from './create-claim.ts';

/** A claim that is held now. @throws NotFoundError when absent or expired */
export async function getClaim(
  deps: Pick<Deps, 'claims' | 'views' | 'clock'>,
  pool: string,
  name: string,
): Promise<Claim> {
  await deps.views.get(pool, deps.clock.nowMs());
  const claim = await deps.claims.getClaim(pool, name);
  if (!claim || isExpired(claim, deps.clock.nowMs())) throw new NotFoundError('claim', name);
  return claim;
}

/**
 * Lists held claims (expired ones are not reported), optionally only those of one owner uid and those whose labels
 * hold every pair of a selector. Filtered pages may be short, even empty, and still carry a cursor: follow it to the end.
 */
export async function listClaims(
  deps: Pick<Deps, 'claims' | 'views' | 'clock'>,
  pool: string,
  query: PageQuery = {},
  filter: ClaimFilter = {},
): Promise<Page<Claim>> {
  await deps.views.get(pool, deps.clock.nowMs());
  const page = await deps.claims.listClaims(pool, pageLimit(query.limit), query.cursor, filter);
  const nowMs = deps.clock.nowMs();
  return { ...page, items: page.items.filter((c) => !isExpired(c, nowMs)) };
}

/**
 * What a release requires of the claim's current version (the HTTP adapter reads it from If-Match): `'any'` for an
 * existing claim at any version, or a list of versions (possibly empty: tags that name no version match nothing).
 */
export type VersionMatch = 'any' | readonly number[];

function describeMatch(match: VersionMatch): string {
  if (match === 'any') return 'any version';
  return match.length === 0 ? 'a version no claim can have' : `version ${match.join(' or ')}`;
}

/**
 * A client's release of a claim at the version read (DELETE, or its last consumer leaving): in a pool with a reuse
 * delay its addresses are held for its owner identity, with the caller as `releasedBy`; in a pool with `access` the
 * caller is recorded on the Released leases or else on a ClaimReleased event in the same transaction (one item more),
 * which the address history reads (history/recorder.ts); otherwise `event`, when given, is written with it. Freed
 * addresses (not held ones) are told to the hint.
 */
export async function releaseAsRead(
  deps: Pick<Deps, 'allocator' | 'hints' | 'clock'>,
  args: { pool: Pool; claim: Claim; caller?: Principal; event?: IpamEvent },
): Promise<ReleaseOutcome> {
  const { pool, claim, caller } = args;
  const held = holdOf(pool, claim, deps.clock.nowMs());
  const hold = held && caller ? { ...held, releasedBy: caller } : held;
  const record = !hold && caller && pool.access ? events.claimReleased(claim, nowIso(deps), caller) : args.event;
  const outcome = await deps.allocator.release(claim, claim.version, hold, record);
  if ((outcome === 'released' || outcome === 'absent') && !hold) {
    for (const a of claim.addresses)
      deps.hints.markFree(pool.name, a.family, parseAddress(a.address).value, deps.clock.nowMs());
  }
  return outcome;
}

/**
 * Releases a claim and the leases it still holds, in one transaction; absent claims are already released. In a pool
 * with a reuse delay the addresses stay held for the claim's owner identity until the delay has passed (counted from
 * the claim's expiry when it had expired): Released leases replace the leases in the same transaction.
 * With `ifMatch`, the claim must exist at a matching version (RFC 9110 section 13.1.1: If-Match is false when there
 * is no current representation), and the release is conditioned on the exact version that matched.
 * In a pool with `access`, only the claim's creator or an administrator may release it (access.ts); the caller is
 * recorded on Released leases as `releasedBy`.
 * @returns the claim released by this call (its addresses, for the audit log), or undefined when it was absent
 * @throws PreconditionFailedError when `ifMatch` is given and the claim is absent or at another version;
 *   ForbiddenError when the pool's `access` does not let the caller release it; ClaimInUseError when it has consumers
 */
export async function deleteClaim(
  deps: Pick<Deps, 'claims' | 'views' | 'allocator' | 'hints' | 'clock'>,
  pool: string,
  name: string,
  options: { readonly ifMatch?: VersionMatch; readonly caller?: Principal } = {},
): Promise<Claim | undefined> {
  const { ifMatch, caller } = options;
  const view = await deps.views.get(pool, deps.clock.nowMs());
  for (let attempt = 0; attempt < CLAIM_TRIES; attempt += 1) {
    const claim = await deps.claims.getClaim(pool, name);
    if (!claim) {
      if (ifMatch !== undefined) throw new PreconditionFailedError(describeMatch(ifMatch), 'absent');
      return undefined;
    }
    requireCreatorOrAdministrator(view.pool, claim, caller, 'release');
    // Released with its last consumer (use-cases/consumers.ts); the release below holds at this version only.
    if (claim.consumers?.length) throw new ClaimInUseError(claim.name, claim.consumers.length);
    // Its block is another pool's range (a nested pool): released once that range is gone.
    if (claim.children?.length) throw new ClaimHasChildrenError(claim.name, claim.children);
    if (ifMatch !== undefined && ifMatch !== 'any' && !ifMatch.includes(claim.version)) {
      throw new PreconditionFailedError(describeMatch(ifMatch), `version ${claim.version}`);
    }
    const outcome = await releaseAsRead(deps, { pool: view.pool, claim, ...(caller ? { caller } : {}) });
    if (outcome === 'released' || outcome === 'absent') return outcome === 'released' ? claim : undefined;
    // The claim changed under us (a renew): read it again, and check the precondition against the new version.
  }
  throw new ConflictError(
    `Claim ${JSON.stringify(name)} kept changing while it was being released; retry the request.`,
  );
}

/** What a renewal asks: `ttlSeconds` as renewClaim takes it, and who asks. */
export interface RenewOptions {
  readonly ttlSeconds?: number | null;
  readonly caller?: Principal;
}

/**
 * Extends a claim's lease by `ttlSeconds` (default: the claim's own TTL), or confirms a hold when `ttlSeconds` is
 * null: the claim and its leases lose their expiry and are held until released, like a claim made without a TTL.
 * The claim's spec is kept as it was asked for, so a retry of the original request still finds it (idempotency).
 * Confirming a claim that has no expiry changes nothing and answers it as it is.
 * In a pool with `access`, only the claim's creator or an administrator may renew it.
 * @throws NotFoundError when gone, ClaimExpiredError (a NotFound) when its addresses were taken;
 *   ClaimHasChildrenError / ClaimHasConsumersError when
 *   giving a TTL to a claim whose block is a range or that has consumers; ConflictError when renewing (not confirming) a claim
 *   without an expiry, or when the claim changed under each of its tries (CLAIM_TRIES); NotReadyError when other
 *   transactions cancelled each of them; ForbiddenError when the pool's `access` does not let the caller renew it
 */
export async function renewClaim(
  deps: Pick<Deps, 'claims' | 'views' | 'clock'>,
  pool: string,
  name: string,
  options: RenewOptions = {},
): Promise<Claim> {
  const view = await deps.views.get(pool, deps.clock.nowMs());
  return renewInPool(deps, { pool: view.pool, name, ...options });
}

/**
 * renewClaim in a pool already read. `first` is the claim as a batch read found it (`claim` undefined: absent), used
 * for the first try instead of a read of its own; a try that finds the claim changed reads it again. With
 * `leasedOnly` (a batch renewal), a claim without an expiry is refused (NotLeasedError) rather than given one.
 * @throws as renewClaim; NotLeasedError
 */
export async function renewInPool(
  deps: Pick<Deps, 'claims' | 'clock'>,
  cmd: RenewOptions & {
    readonly pool: Pool;
    readonly name: string;
    readonly first?: { readonly claim: Claim | undefined };
    readonly leasedOnly?: boolean;
  },
): Promise<Claim> {
  const { ttlSeconds, caller, pool, name } = cmd;
  const ttl = ttlSeconds === null ? undefined : checkTtl(ttlSeconds);
  // A renewal is judged against the claim as read (its expiry decides whether a freed counter moves); when another
  // request writes the claim first, read it again and judge anew, as a release does: concurrent renewals both succeed.
  let busy = false;
  for (let attempt = 0; attempt < CLAIM_TRIES; attempt += 1) {
    const claim = attempt === 0 && cmd.first ? cmd.first.claim : await deps.claims.getClaim(pool.name, name);
    if (!claim) throw new NotFoundError('claim', name);
    requireCreatorOrAdministrator(pool, claim, caller, 'renew');
    if (cmd.leasedOnly && claim.expiresAt === undefined) throw new NotLeasedError(name);
    const expiresAt = renewalExpiry(deps, claim, ttlSeconds, ttl);
    if (expiresAt === 'unchanged') return claim;
    const outcome = await deps.claims.renewClaim(claim, expiresAt, reuseDelayMs(pool));
    busy = outcome === 'busy';
    if (outcome === 'changed' || outcome === 'busy') continue;
    if (outcome === 'absent') throw new NotFoundError('claim', name);
    if (outcome === 'lost') throw new ClaimExpiredError(name);
    const { expiresAt: _old, ...rest } = claim;
    return { ...rest, ...(expiresAt !== undefined ? { expiresAt } : {}), version: claim.version + 1 };
  }
  // Still cancelled by other transactions: the engine is busy on these items (a hot freed counter), not the claim.
  if (busy)
    throw new NotReadyError(
      `Other requests kept writing the items of claim ${JSON.stringify(name)}; retry the request.`,
    );
  throw new ConflictError(`Claim ${JSON.stringify(name)} kept changing while it was being renewed; retry the request.`);
}

/**
 * The expiry a renewal moves the claim to (undefined: none, a confirmed hold), or 'unchanged' for a confirmation of
 * a claim that has none. @throws ClaimHasChildrenError, ClaimHasConsumersError, ConflictError (nothing to renew)
 */
function renewalExpiry(
  deps: Pick<Deps, 'clock'>,
  claim: Claim,
  ttlSeconds: number | null | undefined,
  ttl: number | undefined,
): number | undefined | 'unchanged' {
  // Its block is another pool's range: held without expiry while that range lives (a renewal would give it one).
  if (claim.children?.length && ttlSeconds !== null) throw new ClaimHasChildrenError(claim.name, claim.children, true);
  // It has consumers: held until the last one leaves (a TTL would let the reconciler release it under them). The
  // renewal's write is conditioned on this too, for a consumer that arrives after this read.
  if (claim.consumers?.length && ttlSeconds !== null)
    throw new ClaimHasConsumersError(claim.name, claim.consumers.length);
  if (ttlSeconds === null) return claim.expiresAt === undefined ? 'unchanged' : undefined;
  // A confirmed claim has no expiry left to extend, whatever TTL its spec was made with.
  const seconds = ttl ?? (claim.expiresAt === undefined ? undefined : claim.spec.ttlSeconds);
  if (seconds === undefined)
    throw new ConflictError(`Claim ${JSON.stringify(claim.name)} has no TTL and needs no renewal.`);
  return deps.clock.nowMs() + seconds * 1000;
}
