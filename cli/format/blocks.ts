import type { Claim, Pool } from '../api/types.ts';

/**
 * What the CLI and the console say of a block pool's sizes and of a pool's grow rule, as text: one wording
 * for both (the console re-exports these from console/views/blocks.ts).
 */

const FAMILIES = ['IPv4', 'IPv6'] as const;

/** The pool's block sizes, `IPv4 /26, IPv6 /122`; undefined for an address pool. */
export function blockSizesText(pool: Pick<Pool, 'blockPrefixLength'>): string | undefined {
  const sizes = pool.blockPrefixLength ?? {};
  const parts = FAMILIES.flatMap((family) => (sizes[family] === undefined ? [] : [`${family} /${sizes[family]}`]));
  return parts.length ? parts.join(', ') : undefined;
}

/** The pool's block lengths, IPv4's first: `['/26', '/64']`; none for an address pool. */
export function blockLengths(pool: Pick<Pool, 'blockPrefixLength'>): string[] {
  const sizes = pool.blockPrefixLength ?? {};
  return FAMILIES.flatMap((family) => (sizes[family] === undefined ? [] : [`/${sizes[family]}`]));
}

/** When a pool takes one more block from its parent (its grow rule), in its own unit; undefined without a rule. */
export function growText(pool: Pick<Pool, 'blockPrefixLength' | 'grow'>): string | undefined {
  if (!pool.grow) return undefined;
  const { belowFree, maxBlocks = 16 } = pool.grow;
  const unit = pool.blockPrefixLength ? ['block', 'blocks'] : ['address', 'addresses'];
  const free = `${belowFree} ${belowFree === 1 ? `${unit[0]} is` : `${unit[1]} are`} free`;
  return `one more block when fewer than ${free} (at most ${maxBlocks} ${maxBlocks === 1 ? 'block' : 'blocks'} a family)`;
}

/** What a claim holds in one family: an address, or in a block pool the block as a CIDR. */
export const held = (a: Pick<Claim['addresses'][number], 'address' | 'prefix'>): string => a.prefix ?? a.address;
