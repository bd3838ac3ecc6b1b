// Over 300 lines: the range use cases and the checks of a range's CIDR, blocks and source claim, which they alone read.
import { capacity, formatCidr, parseCidr, slotted, type Cidr } from '../ip/cidr.ts';
import { ConflictError, InvalidArgumentError, NotFoundError, NotReadyError, SourceMismatchError } from '../errors.ts';
import { checkDnsLabel, checkRangeName, defaultRangeName } from '../names.ts';
import {
  isExpired,
  prefixOf,
  RangeState,
  type Claim,
  type Pool,
  type Range,
  type RangeSource,
  type Utilization,
} from '../model.ts';
import { requireChildPoolConsent, requireCreatorOrAdministrator, Role, roleIn, type Principal } from '../access.ts';
import { renewClaim } from './claims.ts';
import { hostInterval, hostIntervals, rangesOf, rangeCidr } from '../base/pool-geometry.ts';
import { subtractIntervals, type Interval } from '../base/intervals.ts';
import { validateLegacyCidr } from '../bitmap/bitmap.ts';
import { type Deps } from './deps.ts';
import { nowIso } from '../base/time.ts';
import { rangeUtilization } from './pools.ts';
import { grownBlockOf, grownClaimName, releaseGrownSource, type GrownReleaseDeps } from './grown-blocks.ts';

export interface CreateRangeCommand {
  readonly pool: string;
  readonly cidr: string;
  readonly name?: string;
  readonly legacy?: boolean;
  /** A block claim of another pool the range is made from (a nested pool): the CIDR must be exactly its block. */
  readonly source?: RangeSource;
  /** The caller: making a range from a claim pins that claim, which only its creator or an administrator may do. */
  readonly caller?: Principal;
}

/** Tries of a nested range's creation when its source claim changed between the read and the write. */
const SOURCE_TRIES = 3;

/**
 * In a block pool, a range is counted in blocks of its family's length: the family must have one, and the range must
 * hold at least one block; legacy (bitmap) ranges serve addresses only. @returns the range's block length, if any
 * @throws InvalidArgumentError
 */
function checkBlockRange(pool: Pool, cidr: Cidr, legacy: boolean): number | undefined {
  if (!pool.blockPrefixLength) return undefined;
  const length = pool.blockPrefixLength[cidr.family];
  const name = JSON.stringify(pool.name);
  if (length === undefined)
    throw new InvalidArgumentError(
      `Pool ${name} hands out blocks and has no ${cidr.family} block size (blockPrefixLength); its ranges are of the families it has one for.`,
      'cidr',
    );
  if (cidr.prefix > length)
    throw new InvalidArgumentError(
      `Range ${formatCidr(cidr)} is smaller than one /${length} block, the size pool ${name} hands out.`,
      'cidr',
    );
  if (legacy)
    throw new InvalidArgumentError(
      `Pool ${name} hands out blocks; a legacy (bitmap) range serves addresses only.`,
      'legacy',
    );
  return length;
}

/**
 * The source claim of a nested range, checked: another pool's block claim, held now, holding exactly this CIDR as one
 * of its blocks, not yet the source of another range. @throws NotFoundError, InvalidArgumentError, SourceMismatchError,
 *   ConflictError, ForbiddenError (the caller may not pin the claim)
 */
async function sourceClaim(
  deps: Pick<Deps, 'views' | 'claims' | 'clock'>,
  cmd: CreateRangeCommand,
  cidrText: string,
): Promise<Claim> {
  const source = cmd.source!;
  checkDnsLabel(source.pool, 'source.pool');
  checkDnsLabel(source.claim, 'source.claim');
  if (source.pool === cmd.pool)
    throw new InvalidArgumentError(
      'A range cannot be made from a claim of its own pool; name a claim of the parent pool.',
      'source.pool',
    );
  if (cmd.legacy)
    throw new InvalidArgumentError('A range made from a block claim is not a legacy (bitmap) range.', 'legacy');
  const parent = await deps.views.get(source.pool, deps.clock.nowMs(), true);
  if (!parent.pool.blockPrefixLength)
    throw new InvalidArgumentError(
      `Pool ${JSON.stringify(source.pool)} hands out addresses; a range is made only from a block pool's claim.`,
      'source.pool',
    );
  requireChildPoolConsent(parent.pool, cmd.caller, 'make a range from a block of');
  const claim = await deps.claims.getClaim(source.pool, source.claim);
  if (!claim || isExpired(claim, deps.clock.nowMs())) throw new NotFoundError('claim', source.claim);
  // A block this pool took by growing is made its range by whichever member of the parent grows the pool next (racing
  // growers are answered one claim; a growth may stop before its range): any member may, as any may set off growth.
  const grownHere = grownBlockOf(claim) === cmd.pool && claim.name === grownClaimName(cmd.pool, cmd.name ?? '');
  if (!grownHere || roleIn(parent.pool.access, cmd.caller) === Role.None)
    requireCreatorOrAdministrator(parent.pool, claim, cmd.caller, 'make a range from');
  const blocks = claim.addresses.filter((a) => a.prefixLength !== undefined).map(prefixOf);
  if (!blocks.includes(cidrText)) throw new SourceMismatchError(cidrText, source, blocks);
  const taken = claim.children?.find((c) => c.cidr === cidrText);
  if (taken && !(taken.pool === cmd.pool && taken.range === (cmd.name ?? defaultRangeName(cidrText)))) {
    throw new ConflictError(
      `Block ${cidrText} of claim ${JSON.stringify(source.claim)} is already range ${taken.pool}/${taken.range}.`,
    );
  }
  return claim;
}

const sameSource = (a: RangeSource | undefined, b: RangeSource | undefined): boolean =>
  a?.pool === b?.pool && a?.claim === b?.claim;

const sourceText = (source: RangeSource | undefined): string =>
  source ? `source ${source.pool}/${source.claim}` : 'no source';

/**
 * Adds a range to a pool. Ranges may overlap; a range is immutable, so posting the same name and CIDR again returns
 * it (created=false) and posting another CIDR under that name is a conflict.
 * @throws InvalidArgumentError, NotFoundError, ConflictError (legacy rules, feature gates, immutability)
 */
export async function createRange(
  deps: Deps,
  cmd: CreateRangeCommand,
): Promise<{ range: Range; utilization: Utilization; created: boolean }> {
  const cidr = parseCidr(cmd.cidr, 'cidr');
  const cidrText = formatCidr(cidr);
  const name = cmd.name === undefined ? defaultRangeName(cidrText) : checkRangeName(cmd.name);
  const legacy = cmd.legacy ?? false;
  if (legacy) validateLegacyCidr(cidr, 'cidr');
  const view = await deps.views.get(cmd.pool, deps.clock.nowMs(), true);
  const existing = view.ranges.find((r) => r.name === name);
  if (existing) {
    if (existing.cidr !== cidrText || existing.legacy !== legacy) {
      throw new ConflictError(
        `Range ${JSON.stringify(name)} already exists with cidr ${existing.cidr}${existing.legacy ? ' (legacy)' : ''}; ranges are immutable.`,
      );
    }
    if (!sameSource(existing.source, cmd.source)) {
      throw new ConflictError(
        `Range ${JSON.stringify(name)} already exists with ${sourceText(existing.source)}, not ${sourceText(cmd.source)}; ranges are immutable.`,
      );
    }
    return { range: existing, utilization: await rangeUtilization(deps, view.pool, existing), created: false };
  }
  if (!legacy && !deps.gates.MultiCIDRServiceAllocator) {
    throw new ConflictError(
      'Only legacy ranges can be created while the MultiCIDRServiceAllocator feature gate is off; set legacy: true or enable the gate.',
    );
  }
  const blockLength = checkBlockRange(view.pool, cidr, legacy);
  const legacyTaken = () =>
    new ConflictError(
      `Pool ${JSON.stringify(cmd.pool)} already has a legacy ${cidr.family} range; a pool has at most one per family.`,
    );
  // The read answers the sequential case (and legacy ranges written before the slots existed); the store's slot
  // condition answers concurrent creates.
  if (legacy && view.ranges.some((r) => r.legacy && r.family === cidr.family)) throw legacyTaken();
  const range: Range = {
    pool: cmd.pool,
    name,
    cidr: cidrText,
    family: cidr.family,
    state: RangeState.Ready,
    legacy,
    createdAt: nowIso(deps),
    ...(blockLength !== undefined ? { blockPrefixLength: blockLength } : {}),
    ...(cmd.source ? { source: { pool: cmd.source.pool, claim: cmd.source.claim } } : {}),
  };
  const outcome = cmd.source ? await createNested(deps, cmd, range) : await deps.pools.createRange(range);
  if (outcome === 'legacyTaken') {
    deps.views.forget(cmd.pool);
    throw legacyTaken();
  }
  if (outcome === 'exists') {
    // Lost a race with an identical or a different create; report what won.
    deps.views.forget(cmd.pool);
    return createRange(deps, cmd);
  }
  deps.views.forget(cmd.pool);
  deps.hints.forget(cmd.pool);
  const size = capacity(slotted(cidr, blockLength));
  return { range, utilization: { size, used: 0n, releasing: 0n, free: size }, created: true };
}

/**
 * A nested range: its source claim is confirmed first (a claim with a child range has no expiry, so it cannot expire
 * out from under it), then the range is written in one transaction with the claim's marker (Claim.children), on the
 * condition that the claim is still as read. Refused input writes nothing; a claim confirmed for a range whose write
 * then lost a race stays confirmed (its owner's hold, as a renew with ttlSeconds null would make it).
 */
async function createNested(
  deps: Deps,
  cmd: CreateRangeCommand,
  range: Range,
): Promise<'created' | 'exists' | 'legacyTaken'> {
  for (let attempt = 0; attempt < SOURCE_TRIES; attempt += 1) {
    let claim = await sourceClaim(deps, cmd, range.cidr);
    if (claim.expiresAt !== undefined) {
      await renewClaim(deps, claim.pool, claim.name, { ttlSeconds: null, caller: cmd.caller });
      // Read and checked again as renewed: a range made from the block meanwhile (another request's renewal and
      // marker) is then a child of the claim the marker's version condition holds to, and refused here.
      claim = await sourceClaim(deps, cmd, range.cidr);
    }
    const outcome = await deps.pools.createRange(range, claim);
    if (outcome !== 'parentChanged') return outcome;
  }
  throw new NotReadyError(
    `Claim ${JSON.stringify(cmd.source!.claim)} kept changing while the range was being made from it; retry the request.`,
  );
}

/** A range with its utilization. @throws NotFoundError */
export async function getRange(
  deps: Pick<Deps, 'views' | 'occupancy' | 'leases' | 'clock'>,
  pool: string,
  name: string,
): Promise<{ range: Range; utilization: Utilization }> {
  const view = await deps.views.get(pool, deps.clock.nowMs(), true);
  const range = view.ranges.find((r) => r.name === name);
  if (!range) throw new NotFoundError('range', name);
  return { range, utilization: await rangeUtilization(deps, view.pool, range) };
}

/** All ranges of a pool with their utilization. @throws NotFoundError */
export async function listRanges(
  deps: Pick<Deps, 'views' | 'occupancy' | 'leases' | 'clock'>,
  pool: string,
): Promise<{ range: Range; utilization: Utilization }[]> {
  const view = await deps.views.get(pool, deps.clock.nowMs(), true);
  return Promise.all(
    view.ranges.map(async (range) => ({ range, utilization: await rangeUtilization(deps, view.pool, range) })),
  );
}

/** The host addresses of this range that no other Ready range holds as host addresses: where a lease depends on it alone. */
export function aloneIntervals(range: Range, otherReady: readonly Range[]): Interval[] {
  const own = hostInterval(rangeCidr(range));
  if (!own) return [];
  const others = hostIntervals(otherReady.map((r) => ({ range: r, cidr: rangeCidr(r) })));
  return subtractIntervals([own], others);
}

/**
 * Counts the leases that depend on this range alone: those among its host addresses that no other Ready range of
 * the pool holds as host addresses. Expired leases count too: their claims may still be renewed.
 */
export async function dependentLeases(
  deps: Pick<Deps, 'leases' | 'clock'>,
  range: Range,
  otherReady: readonly Range[],
): Promise<bigint> {
  const alone = aloneIntervals(range, otherReady);
  return alone.length ? deps.leases.countLeases(range.pool, range.family, alone, { nowMs: 0 }) : 0n;
}

/**
 * How long after a range was marked Terminating the lease index is trusted to list every lease committed before the
 * mark (the index is eventually consistent; DynamoDB's propagation is normally well under a second). Leases
 * committed after the mark need no such wait: their claims see the mark's new range generation after their commit
 * and release them (createClaim). The reconciler's grace (RECONCILE_TERMINATING_GRACE_SECONDS, default 10 s) must be longer.
 */
export const INDEX_SETTLE_MS = 2_000;

/**
 * Deletes a range in two phases (Kubernetes' ServiceCIDR): it becomes Terminating at once (no new allocations), and
 * is removed now only when no lease can depend on it alone, else later by the reconciler:
 *
 * - no host address is its alone (other Ready ranges cover it): removed at once, nothing to count;
 * - a lease depends on it alone (the index counts one): Terminating ('terminating', 202);
 * - the index counts none: removed at once only when the mark is at least INDEX_SETTLE_MS old (a DELETE repeated
 *   after that, or a range marked earlier), since a lease committed just before the mark may not be listed yet;
 *   otherwise Terminating, and the reconciler removes it after its grace if the index still shows no dependent lease.
 *
 *   mark (deletionRequestedAt) ---- INDEX_SETTLE_MS ---- | a zero count is trusted from here
 *
 * Every removal is conditional on this Terminating incarnation, so a range made again meanwhile is not removed.
 * @returns 'gone' or 'terminating'. @throws NotFoundError for an unknown pool
 */
export async function deleteRange(
  deps: GrownReleaseDeps & Pick<Deps, 'pools' | 'leases'>,
  pool: string,
  name: string,
): Promise<'gone' | 'terminating'> {
  const view = await deps.views.get(pool, deps.clock.nowMs(), true);
  const range = view.ranges.find((r) => r.name === name);
  if (!range) return 'gone';
  const terminating =
    range.state === RangeState.Terminating ? range : await deps.pools.markRangeTerminating(range, nowIso(deps));
  deps.views.forget(pool);
  deps.hints.forget(pool);
  const others = rangesOf(view, range.family)
    .map((r) => r.range)
    .filter((r) => r.name !== name);
  const alone = aloneIntervals(terminating, others);
  if (alone.length > 0) {
    if ((await deps.leases.countLeases(pool, range.family, alone, { nowMs: 0 })) > 0n) return 'terminating';
    const markedAt = Date.parse(terminating.deletionRequestedAt ?? '');
    if (!(Number.isFinite(markedAt) && markedAt + INDEX_SETTLE_MS <= deps.clock.nowMs())) return 'terminating';
  }
  return removeTerminating(deps, terminating);
}

/** Tries of a settled range's removal when it lost a race (its source claim changed between the read and the write). */
const REMOVAL_TRIES = 3;

/**
 * Removes a Terminating range that nothing depends on: 'gone' only once it is (by this request or another), else
 * 'terminating' (the reconciler finishes it). Each removal is conditional on this Terminating incarnation, so a range
 * made again meanwhile is not removed; a nested range's also on its source claim as read, which a sibling range's
 * change or a pin may have moved on: read again and retried.
 */
async function removeTerminating(
  deps: GrownReleaseDeps & Pick<Deps, 'pools'>,
  terminating: Range,
): Promise<'gone' | 'terminating'> {
  for (let attempt = 0; attempt < REMOVAL_TRIES; attempt += 1) {
    if (await deps.pools.deleteRange(terminating)) {
      await releaseGrownSource(deps, terminating);
      return 'gone';
    }
    const now = (await deps.views.get(terminating.pool, deps.clock.nowMs(), true)).ranges.find(
      (r) => r.name === terminating.name,
    );
    if (now?.createdAt !== terminating.createdAt || now.deletionRequestedAt !== terminating.deletionRequestedAt)
      return 'gone';
  }
  return 'terminating';
}
