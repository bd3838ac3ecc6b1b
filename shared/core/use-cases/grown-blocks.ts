/**
 * The parent blocks a pool took by growing (grow.ts) are claims of the parent pool owned by the pool itself
 * (`Pool/<pool>`): nobody else holds or releases them. Each is given back once the range made from it is gone, by
 * whichever path removes that range: its DELETE, the reconciler's finalize, the pool's deletion.
 */
import type { IpFamily } from '../ip/address.ts';
import type { Principal } from '../access.ts';
import type { Claim, Range } from '../model.ts';
import type { CreateClaimCommand } from './claim-spec.ts';
import { NameLimits } from '../names.ts';
import { releaseAsRead } from './claims.ts';
import type { Deps } from './deps.ts';

/** Tries of the release when the claim changed between the read and the write (a pin, a growth answered it). */
const RELEASE_TRIES = 3;

/** What giving a grown block back reads and writes. */
export type GrownReleaseDeps = Pick<Deps, 'claims' | 'views' | 'allocator' | 'hints' | 'clock'>;

/** The owner of the blocks a pool takes from its parent by growing. */
export function grownOwner(pool: string): { kind: 'Pool'; name: string; uid: string } {
  return { kind: 'Pool', name: pool, uid: `pool-${pool}` };
}

/**
 * The parent claim a pool's growth makes for its grown range `tag` of `family` (grow.ts takes it, grow-preview.ts
 * previews it): a name fixed by (pool, tag), owned by the pool, labelled with it, in the name of the caller.
 */
export function grownClaimCommand(args: {
  readonly pool: string;
  readonly parent: string;
  readonly tag: string;
  readonly family: IpFamily;
  readonly createdBy?: Principal;
}): CreateClaimCommand & { readonly name: string } {
  return {
    pool: args.parent,
    name: grownClaimName(args.pool, args.tag),
    owner: grownOwner(args.pool),
    ipFamilies: [args.family],
    labels: { 'ipam/grown-for': args.pool },
    ...(args.createdBy ? { createdBy: args.createdBy } : {}),
  };
}

/**
 * The name of the parent claim of a pool's grown range `tag` (`g4-<k>`, `g6-<k>`) as growOnce (grow.ts) gives it:
 * `<pool>-<tag>`, the pool's name cut only for a pool made before checkGrow refused names too long for this.
 */
export function grownClaimName(pool: string, tag: string): string {
  return `${pool.slice(0, NameLimits.label - tag.length - 1)}-${tag}`;
}

/**
 * The pool a claim is a grown block of (its owner `Pool/<pool>` as grownOwner makes it, its name as grownClaimName
 * does), or undefined: what the reconciler's row 21 looks for.
 */
export function grownBlockOf(claim: Claim): string | undefined {
  const pool = claim.spec.owner.name;
  const tag = /-(g[46]-[1-9]\d*)$/.exec(claim.name)?.[1];
  return tag && isGrownFor(claim, pool) && claim.name === grownClaimName(pool, tag) ? pool : undefined;
}

/** Whether a claim is a block `pool` took by growing. */
export function isGrownFor(claim: Claim, pool: string): boolean {
  const { kind, name, uid } = claim.spec.owner;
  const grown = grownOwner(pool);
  return kind === grown.kind && name === grown.name && uid === grown.uid;
}

/**
 * Releases the source claim of a removed range when it is a block the range's pool took by growing and no range is
 * made from it any more. Best effort, never throws: the range is gone either way; a claim left (the parent pool busy)
 * is taken again under the same name by the pool's next growth (grow.ts), and otherwise released by the reconciler
 * once past its grace (row 21, reconciler/grown-blocks.ts).
 */
export async function releaseGrownSource(deps: GrownReleaseDeps, range: Pick<Range, 'pool' | 'source'>): Promise<void> {
  const source = range.source;
  if (!source) return;
  try {
    const parent = await deps.views.get(source.pool, deps.clock.nowMs(), true);
    for (let attempt = 0; attempt < RELEASE_TRIES; attempt += 1) {
      const claim = await deps.claims.getClaim(source.pool, source.claim);
      if (!claim || !isGrownFor(claim, range.pool) || claim.children?.length) return;
      if ((await releaseAsRead(deps, { pool: parent.pool, claim })) !== 'versionMismatch') return;
    }
  } catch {
    // The parent pool is gone (its deletion takes the claim), a growth made a range from the claim again, or the
    // table refused: the caller's range is gone all the same, and the claim is left as said above.
  }
}
