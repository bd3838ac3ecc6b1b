import { familyBits, formatAddress, IpFamily, parseAddress } from '../ip/address.ts';
import { formatCidr, lastAddress, parseCidr } from '../ip/cidr.ts';
import { leasePlaceOf } from '../base/pool-geometry.ts';
import { NotFoundError } from '../errors.ts';
import { isExpired, type Lease } from '../model.ts';
import type { LeaseScope, Page, PageQuery } from '../ports.ts';
import { type Deps } from './deps.ts';
import { pageLimit } from '../base/time.ts';

/** What the address reads use: the pool (it must exist) and the lease index. */
type AddressDeps = Pick<Deps, 'views' | 'clock' | 'leases'>;

/**
 * The lease holding an address now. In a block pool that is the lease of the block containing it (keyed by the
 * block's network address), so any address of a held block answers the claim holding it.
 * @throws NotFoundError when the address is free (absent or expired lease)
 */
export async function getAddress(deps: AddressDeps, pool: string, text: string): Promise<Lease> {
  const view = await deps.views.get(pool, deps.clock.nowMs());
  const asked = parseAddress(text);
  const address = formatAddress(asked);
  const { key, block } = leasePlaceOf(view.pool, asked);
  const lease = await deps.leases.getLease(pool, key);
  if (!lease || isExpired(lease, deps.clock.nowMs())) {
    const where = block ? `: the block ${formatCidr(block)} holding it is free` : '';
    throw new NotFoundError(
      'address',
      address,
      `Address ${address} is not allocated in pool ${JSON.stringify(pool)}${where}.`,
    );
  }
  return lease;
}

/** Held addresses in address order, of one range or of the whole pool (IPv4 first). @throws NotFoundError */
export async function listAddresses(
  deps: AddressDeps,
  pool: string,
  query: PageQuery & { readonly range?: string } = {},
): Promise<Page<Lease>> {
  const { range: rangeName, limit, cursor } = query;
  const view = await deps.views.get(pool, deps.clock.nowMs());
  let scopes: LeaseScope[];
  if (rangeName !== undefined) {
    const range = view.ranges.find((r) => r.name === rangeName);
    if (!range) throw new NotFoundError('range', rangeName);
    const cidr = parseCidr(range.cidr);
    scopes = [{ family: cidr.family, from: cidr.base, to: lastAddress(cidr) }];
  } else {
    scopes = [IpFamily.IPv4, IpFamily.IPv6].map((family) => ({
      family,
      from: 0n,
      to: (1n << BigInt(familyBits(family))) - 1n,
    }));
  }
  return deps.leases.listLeases(pool, scopes, deps.clock.nowMs(), { limit: pageLimit(limit), cursor });
}
