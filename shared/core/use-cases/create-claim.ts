// Over 300 lines: the claim round driver with its two retry states, one path read from top to bottom.
/**
 * Creating a claim: the generateName look-up, then allocation rounds, each on one pool view. Two reasons to go round
 * again, each with its own limit: the view (a refusal from a cached view that changed; a range retired under the
 * commit) and the name (a drawn name that is another claim's; an existing claim that changed before it was pinned).
 */
import { parseAddress, type IpAddress } from '../ip/address.ts';
import {
  ConflictError,
  DeadlineExceededError,
  MismatchedNetworkError,
  NotFoundError,
  NotInRangeError,
  NotReadyError,
  RangeFullError,
} from '../errors.ts';
import { generatedName } from '../names.ts';
import { isHostOf } from '../ip/cidr.ts';
import { rangeCidr } from '../base/pool-geometry.ts';
import { isBlockPool, isExpired, RangeState, type Claim, type ClaimSpec, type PoolView } from '../model.ts';
import { type Deps } from './deps.ts';
import { nowIso } from '../base/time.ts';
import { events } from '../events.ts';
import { goneOwnerCheck } from './owner-gone.ts';
import { CLAIM_TRIES, normalizeSpec, resolveFamilies, sameOrConflict, type CreateClaimCommand } from './claim-spec.ts';

type CreateDeps = Pick<Deps, 'claims' | 'views' | 'allocator' | 'clock' | 'random' | 'pools' | 'hints' | 'reconcile'>;

/** createClaim's answer: `created` false when the request was a repeat of one that made the claim. */
export interface CreateClaimAnswer {
  readonly claim: Claim;
  readonly created: boolean;
  readonly collisions?: number;
  /** A dryRun's answer: the claim as it would be made now, not written (not a hold). */
  readonly preview?: true;
  /** A dryRun's answer in a pool that grows: the blocks the pool would first take from its parent (grow-preview.ts). */
  readonly grows?: readonly GrowthPreview[];
}

/** The block a pool would take from its parent for a claim: the parent's claim, and the range it would become. */
export interface GrowthPreview {
  readonly pool: string;
  readonly claim: string;
  readonly range: string;
  readonly cidr: string;
}

/**
 * How long after its creation a claim may still be taken back by its creator (the post-commit check below): longer
 * than any request to the API lives (its function's timeout is 29 s), with room for clock skew between containers.
 */
export const UNSETTLED_MS = 60_000;

/**
 * Answers an existing claim to a request that did not create it (a retry, an identical request). A claim its creator
 * may still take back (version 1, unpinned, younger than UNSETTLED_MS) is pinned first: the creator's release of a
 * claim whose range was retired under its commit, conditioned on the claim as committed (unpinned), then no longer
 * applies, and the claim stays as answered here, to be drained with its range like any claim made before the range's
 * retirement. Nothing here releases a claim: only its creator knows whether it has answered it.
 * @returns undefined when the claim changed before it could be pinned: read it again
 */
async function answerExisting(
  deps: Pick<Deps, 'claims' | 'clock'>,
  existing: Claim,
  spec: ClaimSpec,
  preview = false,
): Promise<CreateClaimAnswer | undefined> {
  sameOrConflict(existing, spec);
  // A preview writes nothing, ever: a claim that appeared during it (a real request racing it) is answered unpinned.
  if (preview) return { claim: existing, created: false, preview: true };
  const settled =
    existing.pinned === true ||
    existing.version > 1 ||
    Date.parse(existing.createdAt) + UNSETTLED_MS <= deps.clock.nowMs();
  if (settled) return { claim: existing, created: false };
  const pinned = await deps.claims.pinClaim(existing);
  return pinned ? { claim: pinned, created: false } : undefined;
}

/** Names drawn for a generateName claim before a collision with other claims' names is answered 409. */
const NAME_DRAWS = 5;

/** Whether an existing claim is the one this owner made from this generateName (not another claim under that name). */
function madeFrom(existing: Claim, spec: ClaimSpec): boolean {
  return existing.spec.owner.uid === spec.owner.uid && existing.spec.generateName === spec.generateName;
}

/** Rounds of "commit, find a range retired under it, release" before a claim gives up (each round reads a fresh view). */
export const RETIRED_RANGE_ROUNDS = 3;

/**
 * Whether every address of a committed claim lies in a range that is Ready in `view` (the one it was taken through,
 * still holding it as a host address). False means the range was marked Terminating, or removed, before the check.
 */
export function servedByReadyRanges(view: PoolView, claim: Claim): boolean {
  return claim.addresses.every((a) =>
    view.ranges.some(
      (r) => r.name === a.range && r.state === RangeState.Ready && isHostOf(rangeCidr(r), parseAddress(a.address)),
    ),
  );
}

/**
 * One create request as the rounds see it: what it asks (normalized) and the two retry states, each with its own limit.
 */
interface Creation {
  readonly deps: CreateDeps;
  readonly cmd: CreateClaimCommand;
  readonly spec: ClaimSpec;
  readonly explicit: readonly IpAddress[];
  /** The owner's gone-mark (goneOwnerCheck): read once a request, before a claim is committed or answered. */
  readonly refuseGone: () => Promise<void>;
}

/**
 * Which view the next round allocates on. A cached view may lag a range added by another container: a refusal it
 * caused is checked against the pool's range generation (one read of one copy; unchanged, the view is current and the
 * refusal stands), and on a fresh read when it changed (`fresh`, kept for the rest of the request). Not when the view
 * was read by this request already: a cold container's refusal stands. `checked`: the view the post-commit check read
 * when a claim had to be released, used by the next round once.
 */
interface ViewRetry {
  fresh: boolean;
  checked: PoolView | undefined;
  /** Rounds that found a range retired under their commit (limit RETIRED_RANGE_ROUNDS). */
  retired: number;
}

/** The claim's name and the retries about it: names drawn (limit NAME_DRAWS) and lost pins (limit CLAIM_TRIES). */
interface NameRetry {
  name: string;
  draws: number;
  pins: number;
}

/** What one round ended with. */
type Round =
  | { readonly kind: 'answered'; readonly answer: CreateClaimAnswer }
  /** A range was retired under the commit and the claim given back: allocate again on `current`. */
  | { readonly kind: 'rangeRetired'; readonly current: PoolView }
  /** A cached view refused the claim and a range change committed since: read the view again. */
  | { readonly kind: 'viewChanged' }
  /** A claim holds the name (this request's earlier one, an identical request's, or another's). */
  | { readonly kind: 'nameHeld'; readonly existing: Claim };

/**
 * Creates a claim and takes all its addresses in one transaction, or returns the existing claim when the same
 * request is repeated (idempotent; also after a lost response with generateName).
 *
 * Terminating means "no new allocation" at once, although a warm container may allocate from a cached view up to
 * its age old. After the commit, the pool's range generation is read, strongly consistently: every range change
 * (add, mark Terminating, removal; the pool's deletion) writes a new generation in its own transaction, and the view
 * carries the generation read before its ranges (PoolStore.getPoolView). Equal, no range change committed since the
 * view was read, so the ranges the claim was taken from were still Ready after the commit. Different, the pool view
 * is read again (one query of the pool's partition) and checked as it is; a claim whose range is no longer Ready is
 * released (its leases with it) and allocated again on the fresh view, which no longer offers that range:
 *
 *   container A (view: r Ready, gen 7)   commit lease in r ..... read gen: 8 -> read view: r Terminating -> release, allocate elsewhere
 *   container B                               mark r Terminating, gen 8 -> 202
 *
 * So no claim answered 201 holds an address of a range that was Terminating (or gone) before its answer, but for
 * one case: an identical request (a retry) found the claim before this check and was answered it (answerExisting
 * pins it); the claim is then kept and answered to both, and its range drains it like any older claim. Releasing it
 * would free an address a client was already told. The generation has copies in several partitions and the check
 * reads one, so no per-allocation read lands on the pool's partition (docs/decisions/0004-generation-check-copies.md).
 * @throws ConflictError, AlreadyAllocatedError, RangeFullError, NotInRangeError, MismatchedNetworkError, NotFoundError,
 *   NotReadyError (the pool's ranges kept being retired under RETIRED_RANGE_ROUNDS commits), OwnerGoneError (the
 *   owner reported gone: read once the claim has its addresses, or before an existing claim is answered)
 */
export async function createClaim(deps: CreateDeps, cmd: CreateClaimCommand): Promise<CreateClaimAnswer> {
  const { spec, explicit } = normalizeSpec(cmd);
  // Read only for a claim about to be made or answered: a refusal (RangeFull above all, where clients loop) costs none.
  const refuseGone = goneOwnerCheck(deps, cmd.pool, spec.owner.uid);
  if (cmd.dryRun) {
    // A preview of a claim that exists answers it as a repeated request would (or its conflict); nothing is written:
    // a claim made from generateName is found read-only, not pinned as answerExisting would.
    const name =
      cmd.name ??
      (spec.generateName === undefined
        ? undefined
        : await deps.claims.findGeneratedClaim(cmd.pool, spec.owner.uid, spec.generateName));
    const existing = name === undefined ? undefined : await deps.claims.getClaim(cmd.pool, name);
    if (existing && !isExpired(existing, deps.clock.nowMs())) {
      const answer = sameOrConflict(existing, spec);
      await refuseGone();
      return { ...answer, preview: true };
    }
  }
  const creation: Creation = { deps, cmd, spec, explicit, refuseGone };
  const made = await findMadeFromGenerateName(creation);
  if (made) return made;
  const drawName = () => cmd.name ?? generatedName(spec.generateName!, deps.random.suffix(5));
  const names: NameRetry = { name: drawName(), draws: 1, pins: 0 };
  const views: ViewRetry = { fresh: false, checked: undefined, retired: 0 };
  for (;;) {
    const round = await allocateRound(creation, views, names.name);
    switch (round.kind) {
      case 'answered':
        return round.answer;
      case 'viewChanged':
        views.fresh = true;
        break;
      case 'rangeRetired':
        views.retired += 1;
        if (views.retired >= RETIRED_RANGE_ROUNDS)
          throw new NotReadyError(
            "The pool's ranges kept changing while the claim was being allocated; retry the request.",
          );
        views.checked = round.current;
        break;
      case 'nameHeld': {
        const { existing } = round;
        if (spec.generateName !== undefined && !madeFrom(existing, spec) && names.draws < NAME_DRAWS) {
          // The drawn name is another claim's (its suffix collided): draw again, as a client of Kubernetes would retry.
          names.name = drawName();
          names.draws += 1;
          break;
        }
        await refuseGone();
        const answer = await answerExisting(deps, existing, spec, cmd.dryRun === true);
        // Changed before it could be pinned (released by its creator, or renewed): the next round reads it again.
        if (answer) return answer;
        if (++names.pins >= CLAIM_TRIES)
          throw new ConflictError(
            `Claim ${JSON.stringify(existing.name)} kept changing while it was being answered; retry the request.`,
          );
        break;
      }
    }
  }
}

/** A generateName request repeated (a lost response): the claim this owner made from it, answered again. */
async function findMadeFromGenerateName(creation: Creation): Promise<CreateClaimAnswer | undefined> {
  const { deps, cmd, spec } = creation;
  if (spec.generateName === undefined) return undefined;
  for (let attempt = 0; attempt < CLAIM_TRIES; attempt += 1) {
    const made = await deps.claims.findGeneratedClaim(cmd.pool, spec.owner.uid, spec.generateName);
    const existing = made === undefined ? undefined : await deps.claims.getClaim(cmd.pool, made);
    if (!existing || isExpired(existing, deps.clock.nowMs())) return undefined;
    await creation.refuseGone();
    const answer = await answerExisting(deps, existing, spec, cmd.dryRun === true);
    if (answer) return answer;
  }
  return undefined;
}

/**
 * One round: read the view (or take the one the last post-commit check read), allocate on it, and check the commit
 * against the pool's range generation. A refusal from a cached view is checked too (ViewRetry).
 */
async function allocateRound(creation: Creation, views: ViewRetry, name: string): Promise<Round> {
  const { deps, cmd, spec, explicit } = creation;
  const { view, readNow } = views.checked
    ? { view: views.checked, readNow: true }
    : await deps.views.read(cmd.pool, deps.clock.nowMs(), views.fresh);
  views.checked = undefined;
  try {
    const requests = resolveFamilies(view, spec, explicit);
    const nowMs = deps.clock.nowMs();
    const draft = {
      pool: cmd.pool,
      name,
      uid: deps.random.uid(),
      spec,
      createdAt: new Date(nowMs).toISOString(),
      ...(spec.ttlSeconds !== undefined ? { expiresAt: nowMs + spec.ttlSeconds * 1000 } : {}),
      version: 1,
      ...(cmd.createdBy ? { createdBy: cmd.createdBy } : {}),
      ...(view.pool.dns ? { dnsLabel: spec.hostname ?? name } : {}),
    };
    const result = await deps.allocator.allocate(view, draft, requests, {
      ...(cmd.commitBy !== undefined ? { commitBy: cmd.commitBy } : {}),
      ...(cmd.dryRun ? { dryRun: true } : {}),
      beforeCommit: creation.refuseGone,
    });
    if (result.kind === 'preview')
      return { kind: 'answered', answer: { claim: result.claim, created: false, preview: true } };
    if (result.kind === 'allocated') {
      const made = {
        claim: result.claim,
        created: true,
        ...(result.collisions ? { collisions: result.collisions } : {}),
      };
      return checkAfterCommit(creation, view, made);
    }
    const existing = result.kind === 'exists' ? result.claim : await deps.claims.getClaim(cmd.pool, result.claimName);
    if (!existing) throw new ConflictError('A concurrent request is creating this claim; retry the request.');
    return { kind: 'nameHeld', existing };
  } catch (error) {
    if (error instanceof DeadlineExceededError) {
      // Past its deadline nothing is written; a repeated request still answers the claim it made in time.
      const existing = cmd.name === undefined ? undefined : await deps.claims.getClaim(cmd.pool, cmd.name);
      if (existing && !isExpired(existing, deps.clock.nowMs())) {
        const answer = sameOrConflict(existing, spec);
        await creation.refuseGone();
        return { kind: 'answered', answer };
      }
      throw error;
    }
    const refusedByView =
      error instanceof NotInRangeError || error instanceof MismatchedNetworkError || error instanceof RangeFullError;
    // A block pool's RangeFull says blocks, not addresses.
    const refusal =
      error instanceof RangeFullError && isBlockPool(view.pool)
        ? new RangeFullError(error.pool, error.family, 'block', error.batch)
        : error;
    if (!refusedByView || readNow) throw refusal;
    if (await confirmCurrent(deps, cmd.pool, view)) throw refusal;
    return { kind: 'viewChanged' };
  }
}

/** No range change committed since the view was read: the container keeps it, as current as this check. */
function confirmCurrent(deps: Pick<Deps, 'views' | 'clock'>, pool: string, view: PoolView): Promise<boolean> {
  return deps.views.confirm(pool, view, deps.clock.nowMs());
}

/**
 * After the commit: the claim stands when its ranges were Ready in the view and no range changed since it was read,
 * or when they are Ready in the view read now. Otherwise a range was retired under the commit: the addresses are given
 * back before anything is answered, and the hint is told, whose marks from the commit would otherwise keep them taken
 * (and could make the next round's answer a RangeFull).
 */
async function checkAfterCommit(creation: Creation, view: PoolView, made: CreateClaimAnswer): Promise<Round> {
  const { deps, cmd } = creation;
  const { claim } = made;
  // Taken from ranges Ready in the view, and no range changed since it was read: nothing to read again.
  if (servedByReadyRanges(view, claim) && (await confirmCurrent(deps, cmd.pool, view)))
    return { kind: 'answered', answer: made };
  const current = await deps.pools.getPoolView(cmd.pool);
  if (current && servedByReadyRanges(current, claim)) {
    // The check's read is the freshest view there is: keep it, so the next request need not read again.
    deps.views.remember(cmd.pool, current, deps.clock.nowMs());
    return { kind: 'answered', answer: made };
  }
  // Its event, in the release's transaction, tells the address history why the leases went (rangeTerminated).
  const outcome = await deps.allocator.release(
    claim,
    claim.version,
    undefined,
    events.rangeRetired(claim, nowIso(deps)),
  );
  if (outcome === 'versionMismatch') {
    // An identical request answered the claim meanwhile (answerExisting pinned it): it stays, as answered.
    const answered = await deps.claims.getClaim(cmd.pool, claim.name);
    if (answered?.uid === claim.uid) return { kind: 'answered', answer: { claim: answered, created: true } };
  }
  for (const a of claim.addresses)
    deps.hints.markFree(cmd.pool, a.family, parseAddress(a.address).value, deps.clock.nowMs());
  if (!current) throw new NotFoundError('pool', cmd.pool);
  deps.views.remember(cmd.pool, current, deps.clock.nowMs());
  return { kind: 'rangeRetired', current };
}
