/**
 * Grow on demand: a pool that names a parent block pool and a threshold claims one more block from the
 * parent, and makes it a range of its own (a nested range), when a family's free space falls below the threshold
 * after a claim, or when a claim finds the family full or absent. What Cilium's cluster-pool v2 and Calico's block
 * affinity do from a controller, done by the claims themselves.
 *
 * Racing callers never overshoot: the k-th block a pool takes from its parent in a family is a claim of a name fixed
 * by (pool, family, k), with k the lowest index no range of the pool is named by yet (freeTag), and the range made
 * from it has a name fixed the same way. Callers that see the same k make the same claim and the same range: one wins, the
 * others are answered it (idempotency), so a crossing takes one block however many callers saw it. Bounds: at most
 * `maxBlocks` blocks per family from the parent (then the pool is full like any other), and the parent's own space
 * (its RangeFull stops the growth). Each check counts the family's leases (an index query per stretch of its
 * claimable space, reading them all), so growth is meant for node- and region-sized pools.
 *
 * The same name is not enough where one caller reads the pool after another's range landed: it sees k taken and would
 * take k+1. So each growth re-reads the pool first: a crossing takes nothing when the family is no longer below the
 * threshold, and a claim that found the family full or absent takes nothing when the family now has free positions for
 * its `count` (another caller's block): it is tried again in them. Free positions a claim is refused again on, the
 * ranges unchanged, are space it cannot take (a count behind the leases), and then the pool grows. Free positions are
 * claimable ones (pool-geometry.ts's claimableSpace): no excluded one, and space two ranges share counted once.
 */
import { IpFamily } from '../ip/address.ts';
import { RangeFullError } from '../errors.ts';
import type { GrowRule, Pool, PoolView } from '../model.ts';
import { claimableSpace, rangesOf } from '../base/pool-geometry.ts';
import { createClaim, type CreateClaimAnswer } from './create-claim.ts';
import type { CreateClaimCommand } from './claim-spec.ts';
import { createRange } from './ranges.ts';
import { grownClaimCommand } from './grown-blocks.ts';
import { previewGrowing } from './grow-preview.ts';
import { refuseGoneOwner } from './owner-gone.ts';
import { checkParentFits, growthParent, mayGrowFor, nextTag, NO_ROOM_ROUNDS, refusedFamily } from './growth-rule.ts';
import type { Deps } from './deps.ts';

/**
 * Creates a claim, growing the pool first when the claim finds its family full or absent, and after it when the
 * family's free space fell below the threshold. A growth that fails after the claim leaves the claim as made (the
 * next claim tries again). A dryRun grows nothing: it previews the growth (grow-preview.ts).
 */
export async function createClaimGrowing(deps: Deps, cmd: CreateClaimCommand): Promise<CreateClaimAnswer> {
  const view = await deps.views.get(cmd.pool, deps.clock.nowMs());
  const rule = view.pool.grow;
  if (!rule) return createClaim(deps, cmd);
  if (cmd.dryRun) return previewGrowing(deps, { pool: view.pool, rule, cmd });
  let answer: CreateClaimAnswer;
  try {
    answer = await createClaim(deps, cmd);
  } catch (error) {
    return claimAfterNoRoom(deps, { pool: view.pool, rule, cmd, error });
  }
  if (answer.created) await growOnCrossing(deps, { pool: view.pool, rule, cmd, claim: answer.claim });
  return answer;
}

/**
 * After a committed claim: one more block for each family its claim left below the threshold. Best effort: the claim
 * is committed and answered whatever happens here (a throttled count, a failed growth); a crossing missed now is
 * measured again by the family's next claim.
 */
async function growOnCrossing(
  deps: Deps,
  args: { pool: Pool; rule: GrowRule; cmd: CreateClaimCommand; claim: CreateClaimAnswer['claim'] },
): Promise<void> {
  const { pool, rule, cmd } = args;
  for (const family of new Set(args.claim.addresses.map((a) => a.family))) {
    try {
      if ((await freeIn(deps, cmd.pool, family)) < BigInt(rule.belowFree))
        await growOnce(deps, { pool, rule, family, cmd, trigger: { kind: 'crossing' } });
    } catch {
      // Left to the family's next claim (above).
    }
  }
}

/**
 * A claim that found its family full or absent: claimed again after the pool grew by a block, or without growing when
 * the pool read now has room for it (see growOnce). @throws the last refusal when no round could serve the claim
 */
async function claimAfterNoRoom(
  deps: Deps,
  args: { pool: Pool; rule: GrowRule; cmd: CreateClaimCommand; error: unknown },
): Promise<CreateClaimAnswer> {
  const { pool, rule, cmd } = args;
  let { error } = args;
  let roomSeen: string | undefined;
  for (let round = 0; round < NO_ROOM_ROUNDS; round += 1) {
    const family = refusedFamily(error);
    if (family === undefined || !mayGrowFor(pool, cmd, family)) throw error;
    // A growth writes for this claim's sake: not for an owner reported gone (its claim would be refused after it).
    if (round === 0) await refuseGoneOwner(deps, cmd.pool, cmd.owner.uid);
    const need = BigInt(cmd.count ?? 1);
    const growth = await growOnce(deps, { pool, rule, family, cmd, trigger: { kind: 'noRoom', need, roomSeen } });
    if (growth.kind === 'none') throw error;
    roomSeen = growth.kind === 'room' ? growth.ready : undefined;
    try {
      return await createClaim(deps, cmd);
    } catch (again) {
      // Full again, or another family absent (a dual-stack claim's second): the next round grows for it.
      error = again;
    }
  }
  throw error;
}

/** Free positions of a family in the pool's Ready ranges, from a fresh view and a count of its leases. */
async function freeIn(deps: Pick<Deps, 'views' | 'leases' | 'clock'>, pool: string, family: IpFamily): Promise<bigint> {
  const view = await deps.views.get(pool, deps.clock.nowMs(), true);
  return familyFree(deps, view, family);
}

/**
 * Free positions of a family: its claimable positions (pool-geometry.ts: no excluded one, space two ranges share once)
 * less the leases among them, counted now. A named claim of an excluded address is in neither.
 */
async function familyFree(deps: Pick<Deps, 'leases' | 'clock'>, view: PoolView, family: IpFamily): Promise<bigint> {
  const { intervals, size } = claimableSpace(view, family);
  if (intervals.length === 0) return 0n;
  const used = await deps.leases.countLeases(view.pool.name, family, intervals, { nowMs: deps.clock.nowMs() });
  return size > used ? size - used : 0n;
}

/** What set a growth off. */
type Trigger =
  /** The family's free space fell below the threshold after a claim. */
  | { readonly kind: 'crossing' }
  /**
   * A claim found the family full or absent. `need`: the positions it asks for in the family; `roomSeen`: the family's
   * Ready ranges (readyRanges) when this claim last found room and was refused again.
   */
  | { readonly kind: 'noRoom'; readonly need: bigint; readonly roomSeen: string | undefined };

/** What a growth did: took a block, found room for the claim in the pool as read now (`ready`: its ranges), or neither. */
type Growth =
  | { readonly kind: 'grown' }
  | { readonly kind: 'room'; readonly ready: string }
  | { readonly kind: 'none' };

const NONE: Growth = { kind: 'none' };

/** The names of a family's Ready ranges in a view, in one string (to tell whether they changed). */
function readyRanges(view: PoolView, family: IpFamily): string {
  return rangesOf(view, family)
    .map((r) => r.range.name)
    .sort()
    .join(' ');
}

/**
 * Takes the pool's next block of a family from its parent (see the file comment). None when the bound is reached, the
 * parent has no block size for the family, or no block left; and, for a crossing, when the pool read here is no longer
 * below the threshold. Room, and no block, for a claim that found no room when the pool read here has room for it.
 */
async function growOnce(
  deps: Deps,
  args: { pool: Pool; rule: GrowRule; family: IpFamily; cmd: CreateClaimCommand; trigger: Trigger },
): Promise<Growth> {
  const { pool, rule, family, cmd, trigger } = args;
  const parent = await growthParent(deps, { rule, family, caller: cmd.createdBy });
  if (!parent) return NONE;
  checkParentFits(pool, rule, parent.pool, family);
  const own = await deps.views.get(pool.name, deps.clock.nowMs(), true);
  if (trigger.kind === 'noRoom') {
    // Another caller's block landed since this claim found no room: the claim is tried in it (file comment).
    const ready = readyRanges(own, family);
    if (ready !== trigger.roomSeen && (await familyFree(deps, own, family)) >= trigger.need)
      return { kind: 'room', ready };
  }
  const tag = nextTag(own, rule, family);
  if (tag === undefined) return NONE;
  // A crossing measured before another caller's growth landed is no crossing any more: that growth was its block.
  if (trigger.kind === 'crossing' && (await familyFree(deps, own, family)) >= BigInt(rule.belowFree)) return NONE;
  const parentClaim = grownClaimCommand({ pool: pool.name, parent: rule.pool, tag, family, createdBy: cmd.createdBy });
  let made: CreateClaimAnswer;
  try {
    made = await createClaim(deps, parentClaim);
  } catch (error) {
    if (error instanceof RangeFullError) return NONE;
    throw error;
  }
  const block = made.claim.addresses[0]!;
  await createRange(deps, {
    pool: pool.name,
    cidr: `${block.address}/${block.prefixLength}`,
    name: tag,
    source: { pool: rule.pool, claim: parentClaim.name },
    ...(cmd.createdBy ? { caller: cmd.createdBy } : {}),
  });
  return { kind: 'grown' };
}
