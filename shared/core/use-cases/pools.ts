import { IpFamily, parseAddress } from '../ip/address.ts';
import { capacity, formatCidr, parseCidr } from '../ip/cidr.ts';
import { ConflictError, InvalidArgumentError, NotFoundError, PoolNotEmptyError } from '../errors.ts';
import { checkDnsLabel } from '../names.ts';
import type { Pool, PoolView, Range, Utilization } from '../model.ts';
import type { Page } from '../ports.ts';
import { hostInterval, hostIntervals, rangesOf } from '../allocator/pool-geometry.ts';
import { intervalsSize } from '../allocator/intervals.ts';
import { nowIso, pageLimit, type Deps } from './deps.ts';

export interface CreatePoolCommand {
  readonly name: string;
  readonly exclude?: readonly string[];
}

/** Normalizes an exclusion (a CIDR or a single address) to a canonical CIDR. @throws InvalidArgumentError */
export function normalizeExclusion(text: string, index: number): string {
  const field = `exclude[${index}]`;
  if (typeof text !== 'string') throw new InvalidArgumentError(`${field} must be a CIDR or an address.`, field);
  if (text.includes('/')) return formatCidr(parseCidr(text, field));
  const address = parseAddress(text, field);
  return formatCidr({ family: address.family, base: address.value, prefix: address.family === IpFamily.IPv4 ? 32 : 128 });
}

/** Creates a pool. @throws ConflictError when a pool of that name exists */
export async function createPool(deps: Deps, cmd: CreatePoolCommand): Promise<Pool> {
  const name = checkDnsLabel(cmd.name, 'name');
  const exclude = [...new Set((cmd.exclude ?? []).map(normalizeExclusion))];
  const pool: Pool = { name, exclude, createdAt: nowIso(deps) };
  if ((await deps.pools.createPool(pool)) === 'exists') throw new ConflictError(`Pool ${JSON.stringify(name)} already exists.`);
  return pool;
}

/** Lists pools in name order. */
export async function listPools(deps: Deps, limit?: number, cursor?: string): Promise<Page<Pool>> {
  return deps.pools.listPools(pageLimit(limit), cursor);
}

export interface RangeWithUsage {
  readonly range: Range;
  readonly utilization: Utilization;
}

export interface PoolDetails {
  readonly pool: Pool;
  readonly ranges: readonly RangeWithUsage[];
  /** Per family over the union of its Ready ranges: overlapping space is counted once. */
  readonly utilization: Partial<Record<IpFamily, Utilization>>;
}

/** Utilization of one range: its capacity and the unexpired leases among its host addresses. */
export async function rangeUtilization(deps: Deps, range: Range): Promise<Utilization> {
  const cidr = parseCidr(range.cidr);
  const size = capacity(cidr);
  const interval = hostInterval(cidr);
  const used = interval ? await deps.leases.countLeases(range.pool, range.family, [interval], deps.clock.nowMs()) : 0n;
  return { size, used, free: size - used };
}

/** A pool with its ranges and utilization, read consistently. @throws NotFoundError */
export async function getPool(deps: Deps, name: string): Promise<PoolDetails> {
  const view = await deps.views.get(name, deps.clock.nowMs(), true);
  const ranges = await Promise.all(view.ranges.map(async (range) => ({ range, utilization: await rangeUtilization(deps, range) })));
  return { pool: view.pool, ranges, utilization: await familyUtilization(deps, view) };
}

async function familyUtilization(deps: Deps, view: PoolView): Promise<Partial<Record<IpFamily, Utilization>>> {
  const out: Partial<Record<IpFamily, Utilization>> = {};
  for (const family of [IpFamily.IPv4, IpFamily.IPv6]) {
    const ranges = rangesOf(view, family);
    if (ranges.length === 0) continue;
    const intervals = hostIntervals(ranges);
    const size = intervalsSize(intervals);
    const used = intervals.length ? await deps.leases.countLeases(view.pool.name, family, intervals, deps.clock.nowMs()) : 0n;
    out[family] = { size, used, free: size - used };
  }
  return out;
}

/** Deletes a pool and its ranges. @throws PoolNotEmptyError while claims exist; NotFoundError */
export async function deletePool(deps: Deps, name: string): Promise<void> {
  const outcome = await deps.pools.deletePool(name);
  deps.views.forget(name);
  deps.hints.forget(name);
  if (outcome === 'absent') throw new NotFoundError('pool', name);
  if (outcome === 'notEmpty') throw new PoolNotEmptyError(name, 1);
}
