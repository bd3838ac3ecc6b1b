/**
 * The claim use cases (create, get, list, delete, renew) in one module: they share the spec's normalization and
 * checks, the idempotency rule (sameOrConflict: a repeated request returns the claim, another spec is a conflict) and
 * the pool-view steps around an allocation (servedByReadyRanges, the generation check). It was not split by use case
 * during issue 20 because several changes to claims (labels, createdBy) were landing in it at the same time; a split
 * would be a pure move of the exported functions, each with the helpers only it uses.
 */
import { formatAddress, IpFamily, parseAddress, type IpAddress } from '../ip/address.ts';
import {
  ClaimHasChildrenError,
  ClaimInUseError,
  ConflictError,
  DeadlineExceededError,
  InvalidArgumentError,
  MismatchedNetworkError,
  NotFoundError,
  NotInRangeError,
  NotReadyError,
  PreconditionFailedError,
  RangeFullError,
} from '../errors.ts';
import { checkDnsLabel, checkGenerateName, checkOwnerField, generatedName } from '../names.ts';
import { checkLabels, formatLabels, type Labels } from '../labels.ts';
import { formatCidr, isHostOf, parseCidr, type Cidr } from '../ip/cidr.ts';
import { holdOf, IpFamilyPolicy, isBlockPool, isExpired, RangeState, reuseDelayMs, type Claim, type ClaimSpec, type Owner, type Pool, type PoolView } from '../model.ts';
import type { ClaimFilter, Page, ReleaseOutcome } from '../ports.ts';
import type { IpamEvent } from '../reconciler/ports.ts';
import type { FamilyRequest } from '../allocator/allocator.ts';
import { rangeCidr, rangesOf } from '../allocator/pool-geometry.ts';
import { nowIso, pageLimit, type Deps } from './deps.ts';
import { requireCreatorOrAdministrator, type Principal } from '../access.ts';
import { events } from '../reconciler/plan.ts';

export interface CreateClaimCommand {
  readonly pool: string;
  readonly name?: string;
  readonly generateName?: string;
  readonly owner: Owner;
  readonly ipFamilyPolicy?: IpFamilyPolicy;
  readonly ipFamilies?: readonly IpFamily[];
  readonly addresses?: readonly string[];
  readonly ttlSeconds?: number;
  /** Addresses per family, 1 to MAX_BATCH_COUNT (default 1). */
  readonly count?: number;
  /** The caller, recorded as the claim's `createdBy` (not part of the spec: a retry by another principal is the same request). */
  readonly createdBy?: Principal;
  /** Key/value labels (labels.ts); part of the spec, so another set under an existing name is a conflict. */
  readonly labels?: Labels;
  /**
   * Epoch milliseconds after which the claim must not be committed (the client has given up on the request by then):
   * checked before each commit, so a slow request cannot leave a claim its client never learnt of.
   */
  readonly commitBy?: number;
  /** Explicit blocks of a block-pool claim (canonical CIDRs of the pool's block size, one per family). */
  readonly prefixes?: readonly string[];
  /** Answer what the claim would get now and write nothing (a preview is not a hold). */
  readonly dryRun?: boolean;
}

/**
 * Most addresses per family one claim may take. A dual-stack batch writes the claim, its generateName marker and
 * 2 x 32 leases: 66 items, well inside a transaction's 100.
 */
export const MAX_BATCH_COUNT = 32;

/** Longest lease a claim may ask for: one year. */
export const MAX_TTL_SECONDS = 365 * 24 * 3600;

function checkOwner(owner: Owner): Owner {
  return { kind: checkOwnerField(owner?.kind, 'owner.kind'), name: checkOwnerField(owner?.name, 'owner.name'), uid: checkOwnerField(owner?.uid, 'owner.uid') };
}

function checkTtl(ttl: number | undefined, field = 'ttlSeconds'): number | undefined {
  if (ttl === undefined) return undefined;
  if (!Number.isInteger(ttl) || ttl < 1 || ttl > MAX_TTL_SECONDS) {
    throw new InvalidArgumentError(`${field} must be a whole number of seconds from 1 to ${MAX_TTL_SECONDS}.`, field);
  }
  return ttl;
}

/** Normalizes what the client asked for, so equal requests compare equal. @throws InvalidArgumentError */
export function normalizeSpec(cmd: CreateClaimCommand): { spec: ClaimSpec; explicit: IpAddress[] } {
  if ((cmd.name === undefined) === (cmd.generateName === undefined)) {
    throw new InvalidArgumentError('Give exactly one of name and generateName.', 'name');
  }
  if (cmd.name !== undefined) checkDnsLabel(cmd.name, 'name');
  if (cmd.generateName !== undefined) checkGenerateName(cmd.generateName);
  const policy = cmd.ipFamilyPolicy ?? IpFamilyPolicy.SingleStack;
  if (!Object.values(IpFamilyPolicy).includes(policy)) {
    throw new InvalidArgumentError(`ipFamilyPolicy must be one of ${Object.values(IpFamilyPolicy).join(', ')}.`, 'ipFamilyPolicy');
  }
  const families = [...(cmd.ipFamilies ?? [])];
  for (const f of families) {
    if (!Object.values(IpFamily).includes(f)) throw new InvalidArgumentError('ipFamilies entries must be IPv4 or IPv6.', 'ipFamilies');
  }
  if (new Set(families).size !== families.length) throw new InvalidArgumentError('ipFamilies must not repeat a family.', 'ipFamilies');
  if (policy === IpFamilyPolicy.SingleStack && families.length > 1) {
    throw new InvalidArgumentError('A SingleStack claim takes one family; use PreferDualStack or RequireDualStack for two.', 'ipFamilies');
  }
  const count = cmd.count ?? 1;
  if (!Number.isInteger(count) || count < 1 || count > MAX_BATCH_COUNT) {
    throw new InvalidArgumentError(`count must be a whole number from 1 to ${MAX_BATCH_COUNT}.`, 'count');
  }
  if (count > 1 && (cmd.addresses ?? []).length > 0) {
    throw new InvalidArgumentError('A claim with count greater than 1 takes its addresses dynamically; leave out addresses, or ask for one address per family.', 'count');
  }
  const labels = cmd.labels === undefined ? {} : checkLabels(cmd.labels);
  const blocks = checkPrefixes(cmd);
  const explicit = blocks.length > 0 ? blocks.map((b) => ({ family: b.family, value: b.base })) : (cmd.addresses ?? []).map((a, i) => parseAddress(a, `addresses[${i}]`));
  if (new Set(explicit.map((a) => a.family)).size !== explicit.length) {
    const field = blocks.length > 0 ? 'prefixes' : 'addresses';
    throw new InvalidArgumentError(`${field} may hold at most one ${blocks.length > 0 ? 'block' : 'address'} per family.`, field);
  }
  if (policy === IpFamilyPolicy.SingleStack && explicit.length > 1) {
    throw new InvalidArgumentError('A SingleStack claim takes one address.', 'addresses');
  }
  for (const a of explicit) {
    if (families.length && !families.includes(a.family)) {
      throw new MismatchedNetworkError(`Address ${formatAddress(a)} is ${a.family}, which is not among the claim's ipFamilies (${families.join(', ')}).`);
    }
  }
  const spec: ClaimSpec = {
    owner: checkOwner(cmd.owner),
    ipFamilyPolicy: policy,
    ipFamilies: families,
    addresses: blocks.length > 0 ? [] : explicit.map(formatAddress),
    ...(blocks.length > 0 ? { prefixes: blocks.map(formatCidr) } : {}),
    ...(cmd.ttlSeconds !== undefined ? { ttlSeconds: checkTtl(cmd.ttlSeconds) } : {}),
    ...(cmd.generateName !== undefined ? { generateName: cmd.generateName } : {}),
    // Kept only above 1: a request with count 1 and one without count are the same request.
    ...(count > 1 ? { count } : {}),
    // Kept only when there are some: a request with `labels: {}` and one without are the same request.
    ...(Object.keys(labels).length > 0 ? { labels } : {}),
  };
  return { spec, explicit };
}

/** A claim's explicit blocks (`prefixes`), canonical; none when it names none. @throws InvalidArgumentError */
function checkPrefixes(cmd: CreateClaimCommand): Cidr[] {
  const prefixes = cmd.prefixes ?? [];
  if (prefixes.length > 0 && (cmd.addresses ?? []).length > 0) {
    throw new InvalidArgumentError('Give explicit blocks in prefixes or explicit addresses in addresses, not both: a pool hands out one or the other.', 'prefixes');
  }
  if (prefixes.length > 0 && (cmd.count ?? 1) > 1) {
    throw new InvalidArgumentError('A claim with count greater than 1 takes its blocks dynamically; leave out prefixes, or ask for one block per family.', 'count');
  }
  return prefixes.map((p, i) => parseCidr(p, `prefixes[${i}]`));
}

/**
 * What a pool hands out must be what the claim names: blocks of the pool's size in a block pool (`prefixes`),
 * addresses in an address pool. @throws InvalidArgumentError
 */
function checkUnit(view: PoolView, spec: ClaimSpec): void {
  const pool = JSON.stringify(view.pool.name);
  if (!isBlockPool(view.pool)) {
    if (spec.prefixes?.length) throw new InvalidArgumentError(`Pool ${pool} hands out addresses, not blocks: name an explicit address in addresses.`, 'prefixes');
    return;
  }
  if (spec.addresses.length > 0) throw new InvalidArgumentError(`Pool ${pool} hands out blocks, not addresses: name an explicit block in prefixes (e.g. 10.244.7.0/26).`, 'addresses');
  for (const text of spec.prefixes ?? []) {
    const block = parseCidr(text);
    const size = view.pool.blockPrefixLength?.[block.family];
    if (size !== undefined && block.prefix !== size) {
      throw new InvalidArgumentError(`Block ${text} is a /${block.prefix}; pool ${pool} hands out ${block.family} blocks of /${size} only.`, 'prefixes');
    }
  }
}

/**
 * The families a claim gets, primary first: SingleStack takes the named family (or the explicit address's, or the
 * pool's first); PreferDualStack takes every requested family the pool serves; RequireDualStack needs both.
 * @throws MismatchedNetworkError when the pool serves no requested family
 */
export function resolveFamilies(view: PoolView, spec: ClaimSpec, explicit: readonly IpAddress[]): FamilyRequest[] {
  checkUnit(view, spec);
  const served = [IpFamily.IPv4, IpFamily.IPv6].filter((f) => rangesOf(view, f).length > 0);
  const pool = JSON.stringify(view.pool.name);
  let families: IpFamily[];
  switch (spec.ipFamilyPolicy) {
    case IpFamilyPolicy.SingleStack:
      families = [spec.ipFamilies[0] ?? explicit[0]?.family ?? served[0] ?? IpFamily.IPv4];
      break;
    case IpFamilyPolicy.PreferDualStack: {
      // Both families when the pool serves both, primary first (the first named family, else the explicit address's).
      const primary = spec.ipFamilies[0] ?? explicit[0]?.family ?? served[0] ?? IpFamily.IPv4;
      const ordered = [primary, primary === IpFamily.IPv4 ? IpFamily.IPv6 : IpFamily.IPv4];
      // The primary must be served (checked below); the secondary is taken only when the pool serves it.
      families = ordered.filter((f, i) => i === 0 || served.includes(f) || explicit.some((a) => a.family === f));
      break;
    }
    case IpFamilyPolicy.RequireDualStack: {
      // The primary family is the first named one, else the first explicit address's (as Kubernetes does).
      const primary = spec.ipFamilies[0] ?? explicit[0]?.family ?? IpFamily.IPv4;
      families = [primary, primary === IpFamily.IPv4 ? IpFamily.IPv6 : IpFamily.IPv4];
      break;
    }
  }
  for (const family of families) {
    if (!served.includes(family)) throw new MismatchedNetworkError(`Pool ${pool} has no Ready ${family} range for this claim.`);
  }
  const count = spec.count ?? 1;
  return families.map((family) => {
    const address = explicit.find((a) => a.family === family);
    if (address) return { family, explicit: address };
    return count > 1 ? { family, count } : { family };
  });
}

function sameSpec(a: ClaimSpec, b: ClaimSpec): boolean {
  const canon = (s: ClaimSpec) =>
    JSON.stringify([s.owner.kind, s.owner.name, s.owner.uid, s.ipFamilyPolicy, s.ipFamilies, s.addresses, s.ttlSeconds ?? null, s.generateName ?? null, s.count ?? 1, formatLabels(s.labels), s.prefixes ?? []]);
  return canon(a) === canon(b);
}

function sameOrConflict(existing: Claim, spec: ClaimSpec): { claim: Claim; created: false } {
  if (!sameSpec(existing.spec, spec)) {
    throw new ConflictError(`Claim ${JSON.stringify(existing.name)} already exists with a different spec.`);
  }
  return { claim: existing, created: false };
}

/**
 * Tries of a use case that writes a claim as it read it (release, renewal, pinning an answer): when another request
 * wrote the claim first, it reads the claim again and judges anew, up to this many times.
 */
const CLAIM_TRIES = 5;

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
async function answerExisting(deps: Pick<Deps, 'claims' | 'clock'>, existing: Claim, spec: ClaimSpec): Promise<{ claim: Claim; created: false } | undefined> {
  sameOrConflict(existing, spec);
  const settled = existing.pinned === true || existing.version > 1 || Date.parse(existing.createdAt) + UNSETTLED_MS <= deps.clock.nowMs();
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
  return claim.addresses.every((a) => view.ranges.some((r) => r.name === a.range && r.state === RangeState.Ready && isHostOf(rangeCidr(r), parseAddress(a.address))));
}

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
 * would free an address a client was already told. The
 * generation has copies in several partitions and the check reads one: no per-allocation read lands on the pool's
 * partition, which would cap a pool near 3,000 allocations/s (SIMULATION.md). A time-based alternative (retire a
 * range only after the views' maximum age plus the longest request) would rest on clocks and Lambda's timeout, not
 * on the commit order, and was not taken.
 * @throws ConflictError, AlreadyAllocatedError, RangeFullError, NotInRangeError, MismatchedNetworkError, NotFoundError,
 *   NotReadyError (the pool's ranges kept being retired under RETIRED_RANGE_ROUNDS commits)
 */
export async function createClaim(deps: Pick<Deps, 'claims' | 'views' | 'allocator' | 'clock' | 'random' | 'pools' | 'hints'>, cmd: CreateClaimCommand): Promise<{ claim: Claim; created: boolean; collisions?: number; preview?: true }> {
  const { spec, explicit } = normalizeSpec(cmd);
  if (cmd.dryRun) {
    // A preview of a claim that exists answers it as a repeated request would (or its conflict); nothing is written.
    const existing = cmd.name === undefined ? undefined : await deps.claims.getClaim(cmd.pool, cmd.name);
    if (existing && !isExpired(existing, deps.clock.nowMs())) return { ...sameOrConflict(existing, spec), preview: true };
  }
  if (spec.generateName !== undefined) {
    for (let attempt = 0; attempt < CLAIM_TRIES; attempt += 1) {
      const made = await deps.claims.findGeneratedClaim(cmd.pool, spec.owner.uid, spec.generateName);
      const existing = made === undefined ? undefined : await deps.claims.getClaim(cmd.pool, made);
      if (!existing || isExpired(existing, deps.clock.nowMs())) break;
      const answer = await answerExisting(deps, existing, spec);
      if (answer) return answer;
    }
  }
  const drawName = () => cmd.name ?? generatedName(spec.generateName!, deps.random.suffix(5));
  let name = drawName();
  let draws = 1;
  // A cached view may lag a range added by another container: a refusal it caused is checked against the pool's
  // range generation (one read of one copy; unchanged, the view is current and the refusal stands), and on a fresh
  // read when it changed. Not when the view was read by this request already: a cold container's refusal stands.
  let fresh = false;
  // The view the post-commit check read, when a claim had to be released: the next round allocates on it.
  let checked: PoolView | undefined;
  // No range change committed since the view was read: the container keeps it, as current as this check.
  const confirmCurrent = (view: PoolView): Promise<boolean> => deps.views.confirm(cmd.pool, view, deps.clock.nowMs());
  let retired = 0;
  let pins = 0;
  for (;;) {
    const { view, readNow } = checked ? { view: checked, readNow: true } : await deps.views.read(cmd.pool, deps.clock.nowMs(), fresh);
    checked = undefined;
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
      };
      const result = await deps.allocator.allocate(view, draft, requests, { ...(cmd.commitBy !== undefined ? { commitBy: cmd.commitBy } : {}), ...(cmd.dryRun ? { dryRun: true } : {}) });
      if (result.kind === 'preview') return { claim: result.claim, created: false, preview: true };
      if (result.kind === 'allocated') {
        const made = { claim: result.claim, created: true, ...(result.collisions ? { collisions: result.collisions } : {}) };
        // Taken from ranges Ready in the view, and no range changed since it was read: nothing to read again.
        if (servedByReadyRanges(view, result.claim) && (await confirmCurrent(view))) return made;
        const current = await deps.pools.getPoolView(cmd.pool);
        if (current && servedByReadyRanges(current, result.claim)) {
          // The check's read is the freshest view there is: keep it, so the next request need not read again.
          deps.views.remember(cmd.pool, current, deps.clock.nowMs());
          return made;
        }
        // A range was retired under the commit: give the addresses back before anything is answered, and say so to
        // the hint, whose marks from the commit would otherwise keep them taken (and could make the next round's
        // answer a RangeFull).
        // Its event, in the release's transaction, tells the address history why the leases went (rangeTerminated).
        const outcome = await deps.allocator.release(result.claim, result.claim.version, undefined, events.rangeRetired(result.claim, nowIso(deps)));
        if (outcome === 'versionMismatch') {
          // An identical request answered the claim meanwhile (answerExisting pinned it): it stays, as answered.
          const answered = await deps.claims.getClaim(cmd.pool, result.claim.name);
          if (answered?.uid === result.claim.uid) return { claim: answered, created: true };
        }
        for (const a of result.claim.addresses) deps.hints.markFree(cmd.pool, a.family, parseAddress(a.address).value, deps.clock.nowMs());
        if (!current) throw new NotFoundError('pool', cmd.pool);
        deps.views.remember(cmd.pool, current, deps.clock.nowMs());
        retired += 1;
        if (retired >= RETIRED_RANGE_ROUNDS) throw new NotReadyError('The pool\'s ranges kept changing while the claim was being allocated; retry the request.');
        checked = current;
        continue;
      }
      const existing = result.kind === 'exists' ? result.claim : await deps.claims.getClaim(cmd.pool, result.claimName);
      if (!existing) throw new ConflictError('A concurrent request is creating this claim; retry the request.');
      if (spec.generateName !== undefined && !madeFrom(existing, spec) && draws < NAME_DRAWS) {
        // The drawn name is another claim's (its suffix collided): draw again, as a client of Kubernetes would retry.
        name = drawName();
        draws += 1;
        continue;
      }
      const answer = await answerExisting(deps, existing, spec);
      // Changed before it could be pinned (released by its creator, or renewed): the next round reads it again.
      if (answer) return answer;
      if (++pins >= CLAIM_TRIES) throw new ConflictError(`Claim ${JSON.stringify(existing.name)} kept changing while it was being answered; retry the request.`);
      continue;
    } catch (error) {
      if (error instanceof DeadlineExceededError) {
        // Past its deadline nothing is written; a repeated request still answers the claim it made in time.
        const existing = cmd.name === undefined ? undefined : await deps.claims.getClaim(cmd.pool, cmd.name);
        if (existing && !isExpired(existing, deps.clock.nowMs())) return sameOrConflict(existing, spec);
        throw error;
      }
      const refusedByView = error instanceof NotInRangeError || error instanceof MismatchedNetworkError || error instanceof RangeFullError;
      // A block pool's RangeFull says blocks, not addresses.
      const refusal = error instanceof RangeFullError && isBlockPool(view.pool) ? new RangeFullError(error.pool, error.family, 'block') : error;
      if (!refusedByView || readNow) throw refusal;
      if (await confirmCurrent(view)) throw refusal;
      fresh = true;
    }
  }
}

/** A claim that is held now. @throws NotFoundError when absent or expired */
export async function getClaim(deps: Pick<Deps, 'claims' | 'views' | 'clock'>, pool: string, name: string): Promise<Claim> {
  await deps.views.get(pool, deps.clock.nowMs());
  const claim = await deps.claims.getClaim(pool, name);
  if (!claim || isExpired(claim, deps.clock.nowMs())) throw new NotFoundError('claim', name);
  return claim;
}

/**
 * Lists held claims (expired ones are not reported), optionally only those of one owner uid and those whose labels
 * hold every pair of a selector. Filtered pages may be short, even empty, and still carry a cursor: follow it to the end.
 */
export async function listClaims(deps: Pick<Deps, 'claims' | 'views' | 'clock'>, pool: string, limit?: number, cursor?: string, filter: ClaimFilter = {}): Promise<Page<Claim>> {
  await deps.views.get(pool, deps.clock.nowMs());
  const page = await deps.claims.listClaims(pool, pageLimit(limit), cursor, filter);
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
export async function releaseAsRead(deps: Pick<Deps, 'allocator' | 'hints' | 'clock'>, args: { pool: Pool; claim: Claim; caller?: Principal; event?: IpamEvent }): Promise<ReleaseOutcome> {
  const { pool, claim, caller } = args;
  const held = holdOf(pool, claim, deps.clock.nowMs());
  const hold = held && caller ? { ...held, releasedBy: caller } : held;
  const record = !hold && caller && pool.access ? events.claimReleased(claim, nowIso(deps), caller) : args.event;
  const outcome = await deps.allocator.release(claim, claim.version, hold, record);
  if ((outcome === 'released' || outcome === 'absent') && !hold) {
    for (const a of claim.addresses) deps.hints.markFree(pool.name, a.family, parseAddress(a.address).value, deps.clock.nowMs());
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
export async function deleteClaim(deps: Pick<Deps, 'claims' | 'views' | 'allocator' | 'hints' | 'clock'>, pool: string, name: string, ifMatch?: VersionMatch, caller?: Principal): Promise<Claim | undefined> {
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
  throw new ConflictError(`Claim ${JSON.stringify(name)} kept changing while it was being released; retry the request.`);
}

/**
 * Extends a claim's lease by `ttlSeconds` (default: the claim's own TTL), or confirms a hold when `ttlSeconds` is
 * null: the claim and its leases lose their expiry and are held until released, like a claim made without a TTL.
 * The claim's spec is kept as it was asked for, so a retry of the original request still finds it (idempotency).
 * Confirming a claim that has no expiry changes nothing and answers it as it is.
 * In a pool with `access`, only the claim's creator or an administrator may renew it.
 * @throws NotFoundError when gone or its addresses were taken; ConflictError when renewing (not confirming) a claim
 *   without an expiry, or when the claim changed under each of its tries (CLAIM_TRIES); NotReadyError when other
 *   transactions cancelled each of them; ForbiddenError when the pool's `access` does not let the caller renew it
 */
export async function renewClaim(deps: Pick<Deps, 'claims' | 'views' | 'clock'>, pool: string, name: string, ttlSeconds?: number | null, caller?: Principal): Promise<Claim> {
  const view = await deps.views.get(pool, deps.clock.nowMs());
  const ttl = ttlSeconds === null ? undefined : checkTtl(ttlSeconds);
  // A renewal is judged against the claim as read (its expiry decides whether a freed counter moves); when another
  // request writes the claim first, read it again and judge anew, as a release does: concurrent renewals both succeed.
  let busy = false;
  for (let attempt = 0; attempt < CLAIM_TRIES; attempt += 1) {
    const claim = await deps.claims.getClaim(pool, name);
    if (!claim) throw new NotFoundError('claim', name);
    requireCreatorOrAdministrator(view.pool, claim, caller, 'renew');
    let expiresAt: number | undefined;
    if (ttlSeconds === null) {
      if (claim.expiresAt === undefined) return claim;
    } else {
      // A confirmed claim has no expiry left to extend, whatever TTL its spec was made with.
      const seconds = ttl ?? (claim.expiresAt === undefined ? undefined : claim.spec.ttlSeconds);
      if (seconds === undefined) throw new ConflictError(`Claim ${JSON.stringify(name)} has no TTL and needs no renewal.`);
      expiresAt = deps.clock.nowMs() + seconds * 1000;
    }
    const outcome = await deps.claims.renewClaim(claim, expiresAt, reuseDelayMs(view.pool));
    busy = outcome === 'busy';
    if (outcome === 'changed' || outcome === 'busy') continue;
    if (outcome === 'absent') throw new NotFoundError('claim', name);
    if (outcome === 'lost') {
      throw new NotFoundError('claim', name, `Claim ${JSON.stringify(name)} expired and its addresses were taken by another claim; create a new claim.`);
    }
    const { expiresAt: _old, ...rest } = claim;
    return { ...rest, ...(expiresAt !== undefined ? { expiresAt } : {}), version: claim.version + 1 };
  }
  // Still cancelled by other transactions: the engine is busy on these items (a hot freed counter), not the claim.
  if (busy) throw new NotReadyError(`Other requests kept writing the items of claim ${JSON.stringify(name)}; retry the request.`);
  throw new ConflictError(`Claim ${JSON.stringify(name)} kept changing while it was being renewed; retry the request.`);
}
