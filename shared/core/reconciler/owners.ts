import { requireMember, Role, type Principal } from '../access.ts';
import { parseAddress } from '../ip/address.ts';
import { holdOf, type Claim, type Pool } from '../model.ts';
import { ClaimHasChildrenError } from '../errors.ts';
import { OWNER_RECHECK_MS } from '../use-cases/owner-gone.ts';
import { checkOwnerField } from '../names.ts';
import { type Deps } from '../use-cases/deps.ts';
import { nowIso } from '../base/time.ts';
import { events } from '../events.ts';
import { leave } from '../use-cases/consumers.ts';
import { type PoolViewList } from '../use-cases/reconcile-ports.ts';
import { EventReason } from '../events.ts';
import { Phase, type Run } from './run.ts';

/** What an owner's release uses: the claims and their consumers' leave, the reconciler's release and owner marks. */
type OwnerDeps = Pick<Deps, 'claims' | 'views' | 'allocator' | 'hints' | 'clock' | 'pause' | 'reconcile'>;

/** Claims read per page of an owner's listing. */
const PAGE = 100;
/** Passes over the owner index: a later pass picks up claims the (eventually consistent) index showed late. */
const PASSES = 3;
export { OWNER_RECHECK_MS };

/**
 * Row 2 of the reconciler's table: an owner (pod, VM, service) is gone, so every claim it holds in the pool is
 * released, each with its leases in one transaction conditioned on the claim's uid, and an OwnerReleased event.
 * Owners are matched by uid only, never by name: a new owner that reuses an old name keeps its addresses (the
 * whereabouts StatefulSet bug). Idempotent: an owner with no claims releases nothing.
 *
 * The owner's tombstone is written first: the owner index is eventually consistent, so a claim committed just before
 * the report (or while it runs) may not be listed yet; the reconciler runs the release again for
 * OWNER_RECHECK_MS (recheckGoneOwners), which releases such a claim within its period.
 *
 * The uid is also removed from every claim it consumes (use-cases/consumers.ts), first: a claim it was the last
 * consumer of is released with it (and named in `released`, as in `left`); a claim that still has consumers is not
 * released as its owner's (they still use its addresses). Claims that never had a consumer are released as before.
 *
 * In a pool with `access` (access.ts), a caller who is an allocator but not an administrator releases only the
 * claims it created, and writes no tombstone: the reconciler's later passes release every claim of the uid, whoever
 * made it, which is an administrator's call. Such a caller may repeat the call to catch a claim the index showed late.
 * @returns the names of the claims released by this call, in release order, and of those the uid left as a consumer.
 * @throws NotFoundError for an unknown pool; InvalidArgumentError for a uid that breaks the owner rules (names.ts);
 *   ForbiddenError for a caller the pool's `access` does not name
 */
export async function releaseOwner(
  deps: OwnerDeps,
  pool: string,
  ownerUid: string,
  caller?: Principal,
): Promise<{ released: string[]; left: string[] }> {
  checkOwnerField(ownerUid, 'uid');
  const view = await deps.views.get(pool, deps.clock.nowMs());
  if (requireMember(view.pool, caller) !== Role.Administrator) {
    return releaseOwnerClaims(deps, {
      pool,
      ownerUid,
      by: { caller, onlyCreatedBy: caller?.arn, ...(caller ? {} : { anonymous: true }) },
    });
  }
  await deps.reconcile.markOwnerGone(pool, ownerUid, deps.clock.nowMs());
  return releaseOwnerClaims(deps, { pool, ownerUid, by: caller ? { caller } : { anonymous: true } });
}

/**
 * Row 2 again, each run: the owners reported gone in the last OWNER_RECHECK_MS have their claims released once more
 * (one owner index query each when the first release found them all). A transient failure of a release or of a
 * pool's tombstone listing is retried within the run (Run.repair, Run.read); other failures are the run's errors, and
 * later runs, within the window, try again.
 */
export async function recheckGoneOwners(run: Run, views: PoolViewList): Promise<void> {
  const since = run.now() - OWNER_RECHECK_MS;
  for (const view of views) {
    if (run.out(Phase.Owners)) return;
    const pool = view.pool.name;
    // A listing that still fails after its retries skips this pool's owners this run (the window allows later runs).
    const gone = await run.read(`list owners gone ${pool}`, () => run.deps.reconcile.ownersGoneSince(pool, since));
    if (!gone.ok) continue;
    await run.each(Phase.Owners, gone.value, (uid) =>
      run.repair(`release gone owner ${pool}/${uid}`, async () => {
        // Counted as they commit: a release that fails after some of the owner's claims went keeps their count.
        const released: string[] = [];
        // A claim made once the uid's last report window ended was accepted (refuseGoneOwner): it is not released.
        const reportedAt = await run.deps.reconcile.ownerReportedGoneAt(pool, uid);
        const createdBefore = reportedAt === undefined ? undefined : reportedAt + OWNER_RECHECK_MS;
        try {
          await releaseOwnerClaims(run.deps, { pool, ownerUid: uid, released, createdBefore });
        } finally {
          run.repairs[EventReason.OwnerReleased] += released.length;
        }
        return true;
      }),
    );
  }
}

/** Who asks for an owner's release: the caller, and for an allocator's report, only what it created. */
interface ReleaseBy {
  readonly caller?: Principal;
  readonly onlyCreatedBy?: string;
  /** A request that named no principal (its events say `anonymous`, not the reconciler). */
  readonly anonymous?: boolean;
}

/**
 * Releases every claim the owner index lists for the owner uid (row 2's work, without the tombstone), appending the
 * names of those it released to `released` as each commits.
 */
async function releaseOwnerClaims(
  deps: OwnerDeps,
  owner: {
    readonly pool: string;
    readonly ownerUid: string;
    readonly released?: string[];
    readonly by?: ReleaseBy;
    /** Only claims created before this time (epoch ms): a recheck leaves those made after its report's window. */
    readonly createdBefore?: number | undefined;
  },
): Promise<{ released: string[]; left: string[] }> {
  const { pool, ownerUid, released = [], by = {}, createdBefore } = owner;
  // The pool's reuse delay (its view is cached): a released owner's addresses stay held for its kind and name.
  const { pool: poolItem } = await deps.views.get(pool, deps.clock.nowMs());
  const left = await leaveConsumedClaims(deps, { pool, uid: ownerUid, released, by });
  const seen = new Set<string>();
  // A claim whose block is another pool's range is kept and named at the end; the owner's other claims still go.
  const kept: ClaimHasChildrenError[] = [];
  for (let pass = 0; pass < PASSES; pass += 1) {
    let found = 0;
    let cursor: string | undefined;
    do {
      const page = await deps.claims.listClaims(pool, PAGE, cursor, { ownerUid });
      for (const listed of page.items) {
        // The index may still list a claim released a moment ago: each incarnation is tried once.
        if (listed.spec.owner.uid !== ownerUid || seen.has(listed.uid)) continue;
        if (createdBefore !== undefined && Date.parse(listed.createdAt) >= createdBefore) continue;
        seen.add(listed.uid);
        // An allocator's report releases only what it created (an unrecorded creator is an administrator's to release).
        if ('onlyCreatedBy' in by && (by.onlyCreatedBy === undefined || listed.createdBy?.arn !== by.onlyCreatedBy))
          continue;
        // A claim with consumers is theirs to release: the last one's leaving does (use-cases/consumers.ts).
        if (listed.consumers?.length) continue;
        found += 1;
        const outcome = await releaseOne(deps, poolItem, listed, by);
        if (outcome instanceof ClaimHasChildrenError) kept.push(outcome);
        else if (outcome) released.push(listed.name);
      }
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    if (found === 0) break;
  }
  if (kept.length > 0) throw kept[0];
  return { released, left };
}

/**
 * The claims the uid consumes (the consumer index, strongly consistent: no later pass needed) lose it as a consumer,
 * and those it was the last consumer of are released (appended to `released`). An index item whose claim is gone or
 * another incarnation is dropped. An allocator's report leaves only the claims it created.
 * @returns the names of the claims the uid left, released or not
 */
async function leaveConsumedClaims(
  deps: OwnerDeps,
  consumer: { readonly pool: string; readonly uid: string; readonly released: string[]; readonly by: ReleaseBy },
): Promise<string[]> {
  const { pool, uid, released, by } = consumer;
  const left: string[] = [];
  for (const consumed of await deps.claims.consumedBy(pool, uid)) {
    const allowed = (claim: Claim) =>
      claim.uid === consumed.claimUid &&
      (!('onlyCreatedBy' in by) || (by.onlyCreatedBy !== undefined && claim.createdBy?.arn === by.onlyCreatedBy));
    const outcome = await leave(deps, {
      pool,
      claim: consumed.claim,
      uid,
      ...(by.caller ? { caller: by.caller } : {}),
      allowed,
    });
    if (outcome.removed) left.push(consumed.claim);
    if (outcome.released) released.push(consumed.claim);
    // Left behind by a release, or by an incarnation made again under the name: nothing lists the uid there.
    const stillListed = outcome.claim?.uid === consumed.claimUid && outcome.claim.consumers?.some((c) => c.uid === uid);
    if (!outcome.removed && !stillListed) await deps.claims.dropConsumerIndex(pool, uid, consumed);
  }
  return left;
}

async function releaseOne(
  deps: OwnerDeps,
  pool: Pool,
  listed: Claim,
  { caller, anonymous }: ReleaseBy,
): Promise<boolean | ClaimHasChildrenError> {
  // The index's copy may be behind a renewal: whether it is still held is judged on the claim as it is now (one consistent read).
  const claim = await deps.claims.getClaim(listed.pool, listed.name);
  if (claim?.uid !== listed.uid) return false;
  // Its block is another pool's range: kept, and said (the release of such a claim is refused whoever asks).
  if (claim.children?.length) return new ClaimHasChildrenError(claim.name, claim.children);
  // A reuse delay holds the addresses for the owner identity (HoldIdentity): a recreated owner gets them back.
  const held = holdOf(pool, claim, deps.clock.nowMs());
  const hold = held && caller ? { ...held, releasedBy: caller } : held;
  const released = events.ownerReleased(claim, nowIso(deps), hold);
  const event = caller ? { ...released, principal: caller.arn } : anonymous ? { ...released, anonymous } : released;
  const outcome = await deps.reconcile.releaseClaim(claim, event, hold, {
    unconsumed: true,
  });
  if (outcome !== 'released') return false; // Released by someone else, or another incarnation: not this owner's claim any more.
  if (!hold)
    for (const a of claim.addresses)
      deps.hints.markFree(claim.pool, a.family, parseAddress(a.address).value, deps.clock.nowMs());
  return true;
}
