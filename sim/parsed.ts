/**
 * parseAddress and parseCidr remembered per text, for the checkers: they parse the same addresses and CIDRs every
 * virtual second, and ip-num's parsing was about 15 % of a run's CPU. The same results: both functions are pure, and
 * nothing modifies what they return.
 */
import { parseAddress, type IpAddress } from '../shared/core/ip/address.ts';
import { parseCidr, type Cidr } from '../shared/core/ip/cidr.ts';

const addresses = new Map<string, IpAddress>();
const cidrs = new Map<string, Cidr>();

export function parsedAddress(text: string): IpAddress {
  let parsed = addresses.get(text);
  if (!parsed) {
    parsed = parseAddress(text);
    addresses.set(text, parsed);
  }
  return parsed;
}

export function parsedCidr(text: string): Cidr {
  let parsed = cidrs.get(text);
  if (!parsed) {
    parsed = parseCidr(text);
    cidrs.set(text, parsed);
  }
  return parsed;
}
