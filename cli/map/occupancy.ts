import { parseAddress } from '../../shared/core/ip/address.ts';
import type { IpamApi } from '../api/ipam-api.ts';
import type { Pool, Range, RangeOccupancy } from '../api/types.ts';
import { ProblemError } from '../errors.ts';

/** What `ipam map` draws: the pool (its exclusions), the range, and the values of the addresses held in it. */
export interface Occupancy {
  readonly pool: Pool;
  readonly range: Range;
  /** Held addresses as numbers, in address order. */
  readonly held: readonly bigint[];
}

/**
 * Reads a range's occupancy in bulk: the occupancy route (the summary's slices, a few small items whatever the
 * number of leases), alongside the range and the pool's exclusions. This is the one place that knows how occupancy
 * is read.
 *
 * The exclusions come from the pool listing, the range's figures from GET .../ranges/{range} (both a few items).
 * @throws ProblemError NotFound when the pool or the range does not exist.
 */
export async function readOccupancy(api: IpamApi, pool: string, rangeName: string): Promise<Occupancy> {
  const [range, pools, occupancy] = await Promise.all([
    api.getRange(pool, rangeName),
    api.listPools(),
    api.getOccupancy(pool, rangeName),
  ]);
  const found = pools.items.find((p) => p.name === pool);
  if (!found) throw new ProblemError(404, 'NotFound', `pool ${JSON.stringify(pool)} was not found.`);
  return { pool: found, range, held: heldOf(occupancy) };
}

/** The held addresses of an occupancy answer, in address order. */
export function heldOf(occupancy: RangeOccupancy): bigint[] {
  const held: bigint[] = [];
  for (const slice of occupancy.slices) {
    const first = addressValue(slice.first);
    // atob rather than Buffer: the web console decodes the same slices in the browser.
    const bytes = atob(slice.bits);
    for (let k = 0; k < bytes.length; k += 1) {
      for (let byte = bytes.charCodeAt(k); byte !== 0; byte &= byte - 1)
        held.push(first + BigInt(8 * k + 31 - Math.clz32(byte & -byte)));
    }
  }
  return held;
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
const IPV6_CANONICAL = /^[0-9a-f:]+$/;

/**
 * The numeric value of an address as the API writes it (dotted quad, RFC 5952). The shared parser validates any
 * spelling through ip-num and costs about 14 us an address, most of a second for a full /16; canonical text
 * needs none of that, so it is read directly and anything else goes through the shared parser.
 */
export function addressValue(text: string): bigint {
  const v4 = IPV4.exec(text);
  if (v4) {
    const [a, b, c, d] = [Number(v4[1]), Number(v4[2]), Number(v4[3]), Number(v4[4])];
    if (a < 256 && b < 256 && c < 256 && d < 256) return BigInt(a * 16_777_216 + b * 65_536 + c * 256 + d);
  }
  if (IPV6_CANONICAL.test(text)) {
    const halves = text.split('::');
    if (halves.length <= 2) {
      const head = halves[0] ? halves[0].split(':') : [];
      const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
      const zeros = 8 - head.length - tail.length;
      if (
        (halves.length === 2 ? zeros >= 1 : zeros === 0) &&
        [...head, ...tail].every((g) => g.length >= 1 && g.length <= 4)
      ) {
        return BigInt(
          `0x${[...head, ...Array<string>(zeros).fill('0'), ...tail].map((g) => g.padStart(4, '0')).join('')}`,
        );
      }
    }
  }
  return parseAddress(text).value;
}
