/**
 * A dryRun in a pool that grows: what the claim would get, growth included, with nothing written. A claim
 * that finds its family full or absent would first take one more block from the parent (grow.ts): the preview asks
 * the parent for that block as a dryRun of the claim the growth would make there, then previews the claim on the pool
 * as it would be with that block as its range, and names the block in its answer (`grows`; a dual-stack claim may
 * need one of each family, as the real claim's rounds take them). It has no round that finds room instead of growing
 * (nothing is taken meanwhile): where the claim is refused on free positions it cannot take, the preview shows the
 * block a real claim would take after its room round. The growth a claim sets
 * off after it (its family's free space falling below the threshold) is not previewed: the claim's answer is the same.
 */
import type { IpFamily } from '../ip/address.ts';
import { RangeFullError } from '../errors.ts';
import { RangeState, type GrowRule, type Pool, type PoolView, type Range } from '../model.ts';
import type { PoolViewCache } from '../pool-view-cache.ts';
import { nowIso } from '../base/time.ts';
import { createClaim, type CreateClaimAnswer, type GrowthPreview } from './create-claim.ts';
import type { CreateClaimCommand } from './claim-spec.ts';
import { checkParentFits, growthParent, mayGrowFor, nextTag, NO_ROOM_ROUNDS, refusedFamily } from './growth-rule.ts';
import { grownClaimCommand } from './grown-blocks.ts';
import type { Deps } from './deps.ts';

/** The dryRun of createClaimGrowing (see the file comment). @throws the claim's refusal when the pool would not grow */
export async function previewGrowing(
  deps: Deps,
  args: { pool: Pool; rule: GrowRule; cmd: CreateClaimCommand },
): Promise<CreateClaimAnswer> {
  const { pool, cmd } = args;
  try {
    return await createClaim(deps, cmd);
  } catch (refusal) {
    // As claimAfterNoRoom's rounds: a block for the family refused, the claim again on the pool grown by it.
    let error = refusal;
    let view: PoolView | undefined;
    const grows: GrowthPreview[] = [];
    for (let round = 0; round < NO_ROOM_ROUNDS; round += 1) {
      const family = refusedFamily(error);
      if (family === undefined || !mayGrowFor(pool, cmd, family)) throw error;
      const grown = await previewBlock(deps, { ...args, family, own: view, previewed: grows.map((g) => g.cidr) });
      if (!grown) throw error;
      view = grown.view;
      grows.push(grown.grows);
      try {
        return { ...(await createClaim(onView(deps, view), cmd)), grows };
      } catch (again) {
        error = again;
      }
    }
    throw error;
  }
}

/**
 * The block the pool's growth would take for a family now, as the pool's view with it as a Ready range; undefined
 * where growOnce would take none (no parent block size or no role in the parent, the bound reached, the parent full).
 */
async function previewBlock(
  deps: Deps,
  args: {
    pool: Pool;
    rule: GrowRule;
    cmd: CreateClaimCommand;
    family: IpFamily;
    own: PoolView | undefined;
    /** Blocks this preview has taken from the parent already (none is): the parent's preview leaves them out. */
    previewed: readonly string[];
  },
): Promise<{ view: PoolView; grows: GrowthPreview } | undefined> {
  const { pool, rule, cmd, family } = args;
  const parent = await growthParent(deps, { rule, family, caller: cmd.createdBy });
  if (!parent) return undefined;
  checkParentFits(pool, rule, parent.pool, family);
  const own = args.own ?? (await deps.views.get(pool.name, deps.clock.nowMs(), true));
  const tag = nextTag(own, rule, family);
  if (tag === undefined) return undefined;
  const parentClaim = grownClaimCommand({ pool: pool.name, parent: rule.pool, tag, family, createdBy: cmd.createdBy });
  const claimName = parentClaim.name;
  let block;
  try {
    // Nothing is taken, so the parent would preview a block it previewed already again: excluded from its view here.
    const exclude = [...parent.pool.exclude, ...args.previewed];
    const made = await createClaim(onView(deps, { ...parent, pool: { ...parent.pool, exclude } }), {
      ...parentClaim,
      dryRun: true,
    });
    block = made.claim.addresses[0]!;
  } catch (error) {
    if (error instanceof RangeFullError) return undefined;
    throw error;
  }
  const cidr = `${block.address}/${block.prefixLength}`;
  const blockPrefixLength = pool.blockPrefixLength?.[family];
  const range: Range = {
    pool: pool.name,
    name: tag,
    cidr,
    family,
    state: RangeState.Ready,
    legacy: false,
    createdAt: nowIso(deps),
    ...(blockPrefixLength !== undefined ? { blockPrefixLength } : {}),
    source: { pool: rule.pool, claim: claimName },
  };
  return {
    view: { ...own, ranges: [...own.ranges, range] },
    grows: { pool: rule.pool, claim: claimName, range: tag, cidr },
  };
}

/** Deps whose pool view is `view`, as read now: the claim is previewed on a pool as it would be after its growth. */
function onView(deps: Deps, view: PoolView): Deps {
  const views = Object.create(deps.views) as PoolViewCache;
  views.read = () => Promise.resolve({ view, readNow: true });
  return { ...deps, views };
}
