// Over 300 lines: the pool use cases and the input checks of the pool's settings, which they alone read.
import { IpFamily, parseAddress } from '../ip/address.ts';
import { blockSize, capacity, formatCidr, parseCidr } from '../ip/cidr.ts';
import {
  ConflictError,
  InvalidArgumentError,
  NotFoundError,
  PoolNotEmptyError,
  PoolTerminatingError,
} from '../errors.ts';
import { checkAccess, requireChildPoolConsent, Role, roleIn, type Principal } from '../access.ts';
import { checkDnsLabel } from '../names.ts';
import {
  freeThresholdsOf,
  type GrowRule,
  MAX_HISTORY_DAYS,
  MAX_REUSE_DELAY_SECONDS,
  type Pool,
  type PoolView,
  type Range,
  type Utilization,
} from '../model.ts';
import type { Page } from '../ports.ts';
import { claimableSpace, hostInterval, rangesOf, rangeCidr } from '../base/pool-geometry.ts';
import type { Interval } from '../base/intervals.ts';
import { readSummary } from '../occupancy/reader.ts';
import { MAX_FREE_THRESHOLDS } from '../occupancy/exhaustion.ts';
import { type Deps } from './deps.ts';
import { nowIso, pageLimit } from '../base/time.ts';
import { checkGrow, parentBlockMisfit } from './growth-rule.ts';
import { checkDnsSettings } from '../dns/settings.ts';
import { releaseGrownSource, type GrownReleaseDeps } from './grown-blocks.ts';

export interface CreatePoolCommand {
  readonly name: string;
  readonly exclude?: readonly string[];
  /** Seconds a released address stays held for its previous owner (0 to MAX_REUSE_DELAY_SECONDS, default 0). */
  readonly reuseDelaySeconds?: number;
  /** Days the address history keeps an ended holding (0 to MAX_HISTORY_DAYS, default DEFAULT_HISTORY_DAYS; 0 keeps none). */
  readonly historyDays?: number;
  /** Who may do what inside the pool (access.ts); absent: every caller IAM lets in administers it. */
  readonly access?: { readonly administrators?: unknown; readonly allocators?: unknown };
  /** Percent free below which the pool warns (occupancy/exhaustion.ts); absent: DEFAULT_FREE_THRESHOLDS. */
  readonly freeThresholds?: unknown;
  /** A block pool's block prefix length per family, e.g. { IPv4: 26, IPv6: 64 }; absent: an address pool. */
  readonly blockPrefixLength?: unknown;
  /** Grow on demand from a parent block pool (use-cases/grow.ts). */
  readonly grow?: unknown;
  /** A pool without `access` that lets other pools use its blocks (access.ts requireChildPoolConsent). */
  readonly openToChildPools?: boolean;
  /** The caller: a growth rule needs the parent's consent for it (a role in the parent's access). */
  readonly caller?: Principal;
  /** The DNS zone its claims are published in (dns/settings.ts); absent: none. */
  readonly dns?: unknown;
}

/**
 * Checks a block pool's lengths: an object naming IPv4 and/or IPv6, each a whole prefix length from 1 to the family's
 * bits (a /0 block would be the whole space; a /32 or /128 block is one address, which an address pool serves with
 * its reserved addresses kept). @throws InvalidArgumentError
 */
export function checkBlockPrefixLength(value: unknown): Partial<Record<IpFamily, number>> {
  const field = 'blockPrefixLength';
  const sentence = `${field} must name the block size per family, e.g. {"IPv4": 26} or {"IPv4": 24, "IPv6": 64}: IPv4 from 1 to 32, IPv6 from 1 to 128.`;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new InvalidArgumentError(sentence, field);
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) throw new InvalidArgumentError(sentence, field);
  const out: Partial<Record<IpFamily, number>> = {};
  for (const [family, length] of entries) {
    const bits = family === IpFamily.IPv4 ? 32 : family === IpFamily.IPv6 ? 128 : 0;
    if (bits === 0 || typeof length !== 'number' || !Number.isInteger(length) || length < 1 || length > bits)
      throw new InvalidArgumentError(sentence, field);
    out[family as IpFamily] = length;
  }
  return out;
}

/** Checks a pool's thresholds: 1 to MAX_FREE_THRESHOLDS distinct percentages in (0, 100), kept highest first. @throws InvalidArgumentError */
export function checkFreeThresholds(value: unknown): number[] {
  const field = 'freeThresholds';
  const sentence = `${field} must be a list of 1 to ${MAX_FREE_THRESHOLDS} distinct percentages of free space, each above 0 and below 100 (at most two decimals), e.g. [20, 5].`;
  if (!Array.isArray(value) || value.length < 1 || value.length > MAX_FREE_THRESHOLDS)
    throw new InvalidArgumentError(sentence, field);
  for (const t of value)
    if (typeof t !== 'number' || !Number.isFinite(t) || t <= 0 || t >= 100 || Math.round(t * 100) !== t * 100)
      throw new InvalidArgumentError(sentence, field);
  const sorted = [...new Set(value as number[])].sort((a, b) => b - a);
  if (sorted.length !== value.length) throw new InvalidArgumentError(sentence, field);
  return sorted;
}

/** Normalizes an exclusion (a CIDR or a single address) to a canonical CIDR. @throws InvalidArgumentError */
export function normalizeExclusion(text: string, index: number): string {
  const field = `exclude[${index}]`;
  if (typeof text !== 'string') throw new InvalidArgumentError(`${field} must be a CIDR or an address.`, field);
  if (text.includes('/')) return formatCidr(parseCidr(text, field));
  const address = parseAddress(text, field);
  return formatCidr({
    family: address.family,
    base: address.value,
    prefix: address.family === IpFamily.IPv4 ? 32 : 128,
  });
}

/**
 * A growth rule's parent must be a block pool now (it may be deleted later: growth then stops) that consents to the
 * caller growing from it. @throws InvalidArgumentError, ForbiddenError
 */
async function checkGrowParent(
  deps: Pick<Deps, 'views' | 'clock'>,
  rule: GrowRule,
  blocks: Pool['blockPrefixLength'],
  caller: Principal | undefined,
): Promise<GrowRule> {
  const parent = await deps.views.get(rule.pool, deps.clock.nowMs(), true).catch(() => undefined);
  if (!parent?.pool.blockPrefixLength)
    throw new InvalidArgumentError(
      `grow.pool ${JSON.stringify(rule.pool)} must be an existing block pool.`,
      'grow.pool',
    );
  requireChildPoolConsent(parent.pool, caller, 'grow from');
  const misfit = parentBlockMisfit(rule, parent.pool, { blockPrefixLength: blocks });
  if (misfit) throw new InvalidArgumentError(misfit, 'grow.pool');
  return rule;
}

/** Creates a pool. @throws ConflictError when a pool of that name exists; PoolTerminatingError while one is being deleted */
export async function createPool(
  deps: Pick<Deps, 'pools' | 'views' | 'clock' | 'localDns'>,
  cmd: CreatePoolCommand,
): Promise<Pool> {
  const name = checkDnsLabel(cmd.name, 'name');
  const exclude = [...new Set((cmd.exclude ?? []).map(normalizeExclusion))];
  const delay = cmd.reuseDelaySeconds ?? 0;
  if (!Number.isInteger(delay) || delay < 0 || delay > MAX_REUSE_DELAY_SECONDS) {
    throw new InvalidArgumentError(
      `reuseDelaySeconds must be a whole number of seconds from 0 to ${MAX_REUSE_DELAY_SECONDS}.`,
      'reuseDelaySeconds',
    );
  }
  const historyDays = cmd.historyDays;
  if (
    historyDays !== undefined &&
    (!Number.isInteger(historyDays) || historyDays < 0 || historyDays > MAX_HISTORY_DAYS)
  ) {
    throw new InvalidArgumentError(
      `historyDays must be a whole number of days from 0 to ${MAX_HISTORY_DAYS}.`,
      'historyDays',
    );
  }
  const access = cmd.access === undefined ? undefined : checkAccess(cmd.access);
  const open = cmd.openToChildPools === true;
  if (open && access)
    throw new InvalidArgumentError(
      'openToChildPools is for a pool without access; a pool with access lets its members use its blocks from other pools.',
      'openToChildPools',
    );
  const freeThresholds = cmd.freeThresholds === undefined ? undefined : checkFreeThresholds(cmd.freeThresholds);
  const blockPrefixLength =
    cmd.blockPrefixLength === undefined ? undefined : checkBlockPrefixLength(cmd.blockPrefixLength);
  const grow =
    cmd.grow === undefined
      ? undefined
      : await checkGrowParent(deps, checkGrow(cmd.grow, name), blockPrefixLength, cmd.caller);
  const dns =
    cmd.dns === undefined
      ? undefined
      : checkDnsSettings(cmd.dns, { blockPool: blockPrefixLength !== undefined, localDns: deps.localDns === true });
  const createdAt = nowIso(deps);
  // A new pool has no leases: its (empty) summary is complete from the start.
  const pool: Pool = {
    name,
    exclude,
    createdAt,
    summarySince: createdAt,
    ...(delay > 0 ? { reuseDelaySeconds: delay } : {}),
    ...(historyDays !== undefined ? { historyDays } : {}),
    ...(access ? { access } : {}),
    ...(freeThresholds ? { freeThresholds } : {}),
    ...(blockPrefixLength ? { blockPrefixLength } : {}),
    ...(grow ? { grow } : {}),
    ...(open ? { openToChildPools: true as const } : {}),
    ...(dns ? { dns } : {}),
  };
  const outcome = await deps.pools.createPool(pool);
  if (outcome === 'terminating') throw new PoolTerminatingError(name);
  if (outcome === 'exists') throw new ConflictError(`Pool ${JSON.stringify(name)} already exists.`);
  return pool;
}

/**
 * Lists pools in name order: those the caller may see (a pool with `access` only to its administrators and
 * allocators; a page may then hold fewer than `limit` pools, and still have a next one).
 */
export async function listPools(
  deps: Pick<Deps, 'pools'>,
  limit?: number,
  cursor?: string,
  caller?: Principal,
): Promise<Page<Pool>> {
  const page = await deps.pools.listPools(pageLimit(limit), cursor);
  return { ...page, items: page.items.filter((pool) => roleIn(pool.access, caller) !== Role.None) };
}

export interface RangeWithUsage {
  readonly range: Range;
  readonly utilization: Utilization;
}

export interface PoolDetails {
  readonly pool: Pool;
  readonly ranges: readonly RangeWithUsage[];
  /**
   * Per family over the space a dynamic claim may be given (claimableSpace): the union of its Ready ranges (space
   * they share counted once) less the pool's exclusions (in a block pool, every block one touches).
   */
  readonly utilization: Partial<Record<IpFamily, Utilization>>;
  /**
   * Per family, the lowest free-space threshold it is below, as the stream function last decided (the same signal as
   * the pool's PoolFreeBelowThreshold events): a threshold in percent, 'full', or null above them all. The hook for
   * a consumer that must answer "exhausted" (the CNI plugin's STATUS).
   */
  readonly warnings: Partial<Record<IpFamily, { readonly below: number | 'full' | null; readonly since: string }>>;
}

/** A pool's thresholds and its utilization per family, read consistently; undefined when the pool is gone. */
export async function poolExhaustionReading(
  deps: UsageDeps & Pick<Deps, 'views'>,
  name: string,
): Promise<{ thresholds: readonly number[]; families: Partial<Record<IpFamily, Utilization>> } | undefined> {
  let view: PoolView;
  try {
    view = await deps.views.get(name, deps.clock.nowMs(), true);
  } catch (error) {
    if (error instanceof NotFoundError) return undefined;
    throw error;
  }
  return { thresholds: freeThresholdsOf(view.pool), families: await familyUtilization(deps, view) };
}

async function warningsOf(deps: Pick<Deps, 'exhaustion'>, pool: Pool): Promise<PoolDetails['warnings']> {
  const states = (await deps.exhaustion?.states(pool.name)) ?? new Map<IpFamily, never>();
  const thresholds = freeThresholdsOf(pool);
  const out: Partial<Record<IpFamily, { below: number | 'full' | null; since: string }>> = {};
  for (const [family, state] of states) {
    // A level from before the pool was made is an earlier pool's of the name (its deletion or the stream raced it).
    if (state.since < pool.createdAt) continue;
    out[family] = {
      below: state.level === 0 ? null : state.level > thresholds.length ? 'full' : thresholds[state.level - 1]!,
      since: state.since,
    };
  }
  return out;
}

/** What a utilization count reads: the occupancy summary, or else the lease listing. */
type UsageDeps = Pick<Deps, 'occupancy' | 'leases' | 'clock'>;

/**
 * Unexpired leases of a pool family in disjoint intervals: `used` held by claims, `releasing` Released (held for a
 * previous owner). From the occupancy summary where the pool has one and none of its leases there has a TTL: reads
 * proportional to the chunks, behind the leases by the stream's lag (a Released lease always has a TTL, so such a
 * summary shows none). Otherwise by counting the listing (reads proportional to the leases): the summary cannot tell
 * an expired lease, which the rest of the API already treats as gone, from a live one. The two counts are two
 * reads: a release between them moves an address from one to the other, never out of both.
 */
async function usedIn(
  deps: UsageDeps,
  pool: Pool,
  family: IpFamily,
  intervals: readonly Interval[],
): Promise<{ used: bigint; releasing: bigint }> {
  if (intervals.length === 0) return { used: 0n, releasing: 0n };
  if (pool.summarySince !== undefined) {
    const summary = await readSummary(deps.occupancy, pool.name, family, intervals);
    if (!summary.expiring) return { used: summary.used, releasing: 0n };
  }
  const nowMs = deps.clock.nowMs();
  const [taken, releasing] = await Promise.all([
    deps.leases.countLeases(pool.name, family, intervals, { nowMs }),
    pool.reuseDelaySeconds
      ? deps.leases.countLeases(pool.name, family, intervals, { nowMs, releasedOnly: true })
      : Promise.resolve(0n),
  ]);
  return { used: taken > releasing ? taken - releasing : 0n, releasing };
}

function utilizationOf(size: bigint, counts: { used: bigint; releasing: bigint }): Utilization {
  const free = size - counts.used - counts.releasing;
  return { size, used: counts.used, releasing: counts.releasing, free: free > 0n ? free : 0n };
}

/** A block pool's utilization in addresses: each block counts every address it covers (it is handed out whole). */
export function addressesOfBlocks(u: Utilization, block: { family: IpFamily; prefixLength: number }): Utilization {
  const per = blockSize({ family: block.family, base: 0n, prefix: block.prefixLength });
  return { size: u.size * per, used: u.used * per, releasing: u.releasing * per, free: u.free * per };
}

/**
 * Utilization of one range of `pool`: its capacity and the leases among its host addresses. The pool's exclusions are
 * not taken out here (a range reads as its CIDR holds); the pool's utilization leaves them out.
 */
export async function rangeUtilization(deps: UsageDeps, pool: Pool, range: Range): Promise<Utilization> {
  const cidr = rangeCidr(range);
  const size = capacity(cidr);
  const interval = hostInterval(cidr);
  return utilizationOf(size, await usedIn(deps, pool, range.family, interval ? [interval] : []));
}

/** A pool with its ranges and utilization, read consistently. @throws NotFoundError */
export async function getPool(
  deps: UsageDeps & Pick<Deps, 'views' | 'exhaustion'>,
  name: string,
): Promise<PoolDetails> {
  const view = await deps.views.get(name, deps.clock.nowMs(), true);
  const ranges = await Promise.all(
    view.ranges.map(async (range) => ({ range, utilization: await rangeUtilization(deps, view.pool, range) })),
  );
  return {
    pool: view.pool,
    ranges,
    utilization: await familyUtilization(deps, view),
    warnings: await warningsOf(deps, view.pool),
  };
}

/**
 * Per family with a Ready range: its claimable space and the leases in it. A lease outside it (an excluded address an
 * address pool gave to a claim naming it) is in neither size nor used, so used + releasing + free = size still holds.
 */
async function familyUtilization(deps: UsageDeps, view: PoolView): Promise<Partial<Record<IpFamily, Utilization>>> {
  const out: Partial<Record<IpFamily, Utilization>> = {};
  for (const family of [IpFamily.IPv4, IpFamily.IPv6]) {
    if (rangesOf(view, family).length === 0) continue;
    const { intervals, size } = claimableSpace(view, family);
    out[family] = utilizationOf(size, await usedIn(deps, view.pool, family, intervals));
  }
  return out;
}

/**
 * A Terminating pool's second phase (PoolStore.finalizePool), giving back each block the pool took by growing once its
 * range no longer marks it.
 */
export function finalizePool(
  deps: GrownReleaseDeps & Pick<Deps, 'pools'>,
  name: string,
): Promise<'finalized' | 'absent'> {
  return deps.pools.finalizePool(name, {
    nowMs: deps.clock.nowMs(),
    unmarked: (range) => releaseGrownSource(deps, range),
  });
}

/**
 * Finishes the deletion of a pool that is already Terminating (its second phase), and marks nothing: a repeated DELETE
 * whose pool was not found Ready. A pool Ready again under that name (created meanwhile) is left alone.
 * @returns 'gone' when this request finished it, 'terminating' when the rest is left to the reconciler (as deletePool)
 * @throws NotFoundError when no deletion of that name is in progress
 */
export async function finishPoolDeletion(
  deps: GrownReleaseDeps & Pick<Deps, 'pools'>,
  name: string,
): Promise<'gone' | 'terminating'> {
  let outcome;
  try {
    outcome = await finalizePool(deps, name);
  } catch {
    return 'terminating';
  }
  if (outcome === 'absent') throw new NotFoundError('pool', name);
  return 'gone';
}

/**
 * Deletes a pool in two phases (Kubernetes' Namespace finalizer): one transaction marks it Terminating, refused while
 * its claims listing shows a claim; from then on every request finds it gone (404) and its name is not free
 * (PoolTerminatingError). Then this request removes what it left (finalizePool), the pool item last; a request that
 * stops or fails on the way leaves the rest to a repeated DELETE or the reconciler's next run, and a pool made again
 * under the name can only be made after it.
 * @returns 'gone' when this request finished the deletion, 'terminating' when the rest is left to the reconciler
 * @throws PoolNotEmptyError while claims exist; NotFoundError when no pool of that name exists
 */
export async function deletePool(
  deps: GrownReleaseDeps & Pick<Deps, 'pools'>,
  name: string,
): Promise<'gone' | 'terminating'> {
  const outcome = await deps.pools.deletePool(name, deps.clock.nowMs());
  deps.views.forget(name);
  deps.hints.forget(name);
  if (outcome === 'absent') throw new NotFoundError('pool', name);
  if (outcome === 'notEmpty') throw new PoolNotEmptyError(name, 1);
  try {
    await finalizePool(deps, name);
    return 'gone';
  } catch {
    // The deletion was accepted (the pool is Terminating); what is left is the finalizer's, resumed later.
    return 'terminating';
  }
}
