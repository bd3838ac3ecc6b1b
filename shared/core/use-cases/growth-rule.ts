/**
 * What a pool's growth rule says, shared by the claims that grow (grow.ts), their preview (grow-preview.ts) and the
 * pool's creation (pools.ts): the rule's check, when a refused claim may grow the pool, the parent it grows from and
 * the name of the next block it takes. Reads views only; takes nothing.
 */
import { Role, roleIn } from '../access.ts';
import { IpFamily } from '../ip/address.ts';
import {
  ConflictError,
  InvalidArgumentError,
  MismatchedNetworkError,
  NotFoundError,
  RangeFullError,
} from '../errors.ts';
import { capacity } from '../ip/cidr.ts';
import { checkDnsLabel, NameLimits } from '../names.ts';
import type { GrowRule, Pool, PoolView } from '../model.ts';
import type { CreateClaimCommand } from './claim-spec.ts';
import type { Deps } from './deps.ts';

/** Most blocks a pool may take from its parent per family. */
export const MAX_GROW_BLOCKS = 64;

/** Checks a pool's growth rule: a parent pool name, a threshold from 1, a bound from 1 to MAX_GROW_BLOCKS (default 16). @throws InvalidArgumentError */
export function checkGrow(value: unknown, own: string): GrowRule {
  const field = 'grow';
  const sentence = `${field} must name the parent block pool and the free positions below which to take one more block from it, e.g. {"pool": "region-a", "belowFree": 16, "maxBlocks": 8} (maxBlocks 1 to ${MAX_GROW_BLOCKS}, default 16).`;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new InvalidArgumentError(sentence, field);
  const { pool, belowFree, maxBlocks = 16 } = value as Record<string, unknown>;
  if (
    typeof pool !== 'string' ||
    !Number.isInteger(belowFree) ||
    (belowFree as number) < 1 ||
    !Number.isInteger(maxBlocks) ||
    (maxBlocks as number) < 1 ||
    (maxBlocks as number) > MAX_GROW_BLOCKS
  ) {
    throw new InvalidArgumentError(sentence, field);
  }
  checkDnsLabel(pool, 'grow.pool');
  if (pool === own)
    throw new InvalidArgumentError('A pool cannot grow from itself; name its parent block pool.', 'grow.pool');
  // The blocks it takes are claims named <own>-g4-<k> (k up to maxBlocks): refused rather than cut, so two pools'
  // names can never meet in the parent.
  const longest = NameLimits.label - `-g4-${maxBlocks as number}`.length;
  if (own.length > longest)
    throw new InvalidArgumentError(
      `A pool that grows names the blocks it takes from its parent <pool>-g4-<k> (k up to maxBlocks, ${maxBlocks as number}), and a claim name has at most ${NameLimits.label} characters: name this pool with at most ${longest} characters, or lower maxBlocks.`,
      'name',
    );
  return { pool, belowFree: belowFree as number, maxBlocks: maxBlocks as number };
}

/**
 * Rounds of "grow or find room, claim again" for a claim that found no room, two per family of a dual-stack claim:
 * one to claim in another caller's block, one to grow when that room was gone by then (or was free space the claim
 * cannot take).
 */
export const NO_ROOM_ROUNDS = 4;

/** The family a claim's refusal found without room (full, or absent from the pool), or undefined for other errors. */
export function refusedFamily(error: unknown): IpFamily | undefined {
  if (error instanceof RangeFullError) return error.family as IpFamily;
  if (error instanceof MismatchedNetworkError) return error.absent;
  return undefined;
}

/**
 * Whether a claim that found no room may grow the pool: not for named addresses or blocks (a new block from the
 * parent would not hold them), nor for a family the pool has no block size for (its range would be refused, leaving
 * the parent's block held with nothing made of it).
 */
export function mayGrowFor(pool: Pool, cmd: CreateClaimCommand, family: IpFamily): boolean {
  if ((cmd.addresses?.length ?? 0) > 0 || (cmd.prefixes?.length ?? 0) > 0) return false;
  return pool.blockPrefixLength === undefined || pool.blockPrefixLength[family] !== undefined;
}

/**
 * The parent's view when the pool may take a block of `family` from it for `caller` (growOnce takes it, the preview
 * previews it): undefined when the parent is gone, has no block size for the family, or does not consent: the caller
 * is no member of it (the block is taken in the caller's name, as a claim there would ask), or a parent without
 * `access` is not openToChildPools.
 */
export async function growthParent(
  deps: Pick<Deps, 'views' | 'clock'>,
  args: { rule: GrowRule; family: IpFamily; caller: CreateClaimCommand['createdBy'] },
): Promise<PoolView | undefined> {
  const parent = await deps.views.get(args.rule.pool, deps.clock.nowMs(), true).catch((error: unknown) => {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  });
  if (!parent?.pool.blockPrefixLength?.[args.family]) return undefined;
  // Without the parent's consent (a role in its access, or openToChildPools) the pool does not grow from it.
  if (parent.pool.access === undefined) return parent.pool.openToChildPools ? parent : undefined;
  return roleIn(parent.pool.access, args.caller) === Role.None ? undefined : parent;
}

/**
 * Why the parent's blocks cannot be ranges of the pool (`family`: that family only; else every family the parent has a
 * block size for), or undefined: an address pool needs a block with a usable address (an IPv4 /31 or /32, an IPv6 /128
 * would be a range of none, taken again by every claim up to maxBlocks), and a block pool a block at least one of its
 * own blocks large. Checked when the pool is made and again at each growth: the parent may have been made again since.
 */
export function parentBlockMisfit(
  rule: GrowRule,
  parent: Pool,
  own: Pick<Pool, 'blockPrefixLength'>,
  family?: IpFamily,
): string | undefined {
  for (const [f, length] of Object.entries(parent.blockPrefixLength ?? {})) {
    if (family !== undefined && f !== family) continue;
    const mine = own.blockPrefixLength?.[f as IpFamily];
    if (!own.blockPrefixLength && capacity({ family: f as IpFamily, base: 0n, prefix: length }) === 0n)
      return `Pool ${JSON.stringify(rule.pool)} hands out /${length} ${f} blocks, which hold no usable address: an address pool cannot grow from it.`;
    if (mine !== undefined && length > mine)
      return `Pool ${JSON.stringify(rule.pool)} hands out /${length} ${f} blocks, smaller than this pool's /${mine} blocks: a block of it could not be a range here.`;
  }
  return undefined;
}

/**
 * Refuses a growth whose rule no longer fits its parent (parentBlockMisfit), before anything is taken from it.
 * @throws ConflictError naming the pool, its grow rule and the parent's blocks
 */
export function checkParentFits(pool: Pool, rule: GrowRule, parent: Pool, family: IpFamily): void {
  const misfit = parentBlockMisfit(rule, parent, pool, family);
  if (misfit)
    throw new ConflictError(
      `Pool ${JSON.stringify(pool.name)} cannot grow from pool ${JSON.stringify(rule.pool)}, its grow rule's parent, any more: ${misfit} Nothing was taken from it; claim in a range the pool holds, or make the pool again with a grow rule that fits.`,
    );
}

/**
 * The name of the pool's next grown range of a family, `g4-<k>` or `g6-<k>`: k is the lowest index from 1 to maxBlocks
 * that no range of the pool is named by (a removed grown range's name is taken again); undefined when the pool holds
 * `maxBlocks` blocks of the family from the parent already, or no name is free.
 */
export function nextTag(own: PoolView, rule: GrowRule, family: IpFamily): string | undefined {
  const taken = own.ranges.filter((r) => r.source?.pool === rule.pool && r.family === family).length;
  return taken < rule.maxBlocks ? freeTag(own, family, rule.maxBlocks) : undefined;
}

function freeTag(own: PoolView, family: IpFamily, maxBlocks: number): string | undefined {
  const names = new Set(own.ranges.map((r) => r.name));
  for (let k = 1; k <= maxBlocks; k += 1) {
    const tag = `g${family === IpFamily.IPv4 ? 4 : 6}-${k}`;
    if (!names.has(tag)) return tag;
  }
  return undefined;
}
