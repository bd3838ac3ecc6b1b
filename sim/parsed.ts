/**
 * parseAddress and parseCidr remembered per text, for the checkers: they parse the same addresses and CIDRs every
 * virtual second, and ip-num's parsing was about 15 % of a run's CPU. The same results: both functions are pure, and
 * nothing modifies what they return.
 */
import { parseAddress, type IpAddress } from '../shared/core/ip/address.ts';
import { parseCidr, type Cidr } from '../shared/core/ip/cidr.ts';

/** `compute` remembered per key (one map per call): for pure functions whose results nobody modifies. */
export function remembered<K, V>(compute: (key: K) => V): (key: K) => V {
  const seen = new Map<K, V>();
  return (key) => {
    let value = seen.get(key);
    if (value === undefined) {
      value = compute(key);
      seen.set(key, value);
    }
    return value;
  };
}

export const parsedAddress: (text: string) => IpAddress = remembered(parseAddress);
export const parsedCidr: (text: string) => Cidr = remembered(parseCidr);
