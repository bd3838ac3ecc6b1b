/** DNS record sets as the planner and the targets see them, the names a claim publishes, and the ownership record. */
import { familyBits, IpFamily, parseAddress } from '../ip/address.ts';

/** The record types the service writes; a name may hold others (someone else's), which it never touches. */
export const OwnedTypes = ['A', 'AAAA', 'PTR', 'TXT'] as const;
export type OwnedType = (typeof OwnedTypes)[number];

/** One RRset: every record of a type at a name. Names are absolute and lower-case; values as in zone files. */
export interface RecordSet {
  readonly name: string;
  readonly type: string;
  readonly ttl: number;
  /** A/AAAA: address text; PTR: an absolute name; TXT: the text of each string, unquoted. */
  readonly values: readonly string[];
}

/**
 * The change of one name: what the service read of its own types there (`before`, the guard: the target writes only
 * while the name still holds exactly that) and what they should be (`after`; empty removes them).
 */
export interface NameChange {
  readonly zone: string;
  readonly name: string;
  readonly before: readonly RecordSet[];
  readonly after: readonly RecordSet[];
}

/** Who a published name belongs to: written beside it as a TXT record (external-dns's TXT registry). */
export interface RecordOwner {
  readonly pool: string;
  readonly claim: string;
  readonly uid: string;
}

const HERITAGE = 'heritage=ipam';

/** The ownership TXT's text: the service's mark, the pool, the claim and its incarnation. */
export function ownerText(owner: RecordOwner): string {
  return `${HERITAGE},pool=${owner.pool},claim=${owner.claim},uid=${owner.uid}`;
}

/** The owner an ownership TXT names, or undefined for any other text (someone else's TXT). */
export function parseOwnerText(text: string): RecordOwner | undefined {
  const parts = text.split(',');
  if (parts[0] !== HERITAGE || parts.length !== 4) return undefined;
  const field = (i: number, key: string) => (parts[i]?.startsWith(`${key}=`) ? parts[i]!.slice(key.length + 1) : '');
  const owner = { pool: field(1, 'pool'), claim: field(2, 'claim'), uid: field(3, 'uid') };
  return owner.pool && owner.claim && owner.uid ? owner : undefined;
}

/** `label.zone`, absolute. */
export function forwardName(label: string, zone: string): string {
  return `${label}.${zone}`;
}

/** An address's PTR owner name (`4.3.2.1.in-addr.arpa.`, or 32 nibbles under `ip6.arpa.`). */
export function reverseName(address: string): string {
  const a = parseAddress(address);
  if (a.family === IpFamily.IPv4) {
    const octets = [24n, 16n, 8n, 0n].map((s) => ((a.value >> s) & 255n).toString());
    return `${octets.reverse().join('.')}.in-addr.arpa.`;
  }
  const hex = a.value.toString(16).padStart(32, '0');
  return `${[...hex].reverse().join('.')}.ip6.arpa.`;
}

/**
 * The reverse zone a PTR goes in: the longest of `zones` the name lies in, else the zone of the range's whole octets
 * (IPv4) or nibbles (IPv6), the delegation boundaries of in-addr.arpa. and ip6.arpa. (RFC 2317 aside).
 */
export function reverseZoneOf(address: string, rangeCidr: string | undefined, zones?: readonly string[]): string {
  const name = reverseName(address);
  const matching = (zones ?? []).filter((z) => name.endsWith(`.${z}`)).sort((a, b) => b.length - a.length);
  if (matching[0]) return matching[0];
  const family = parseAddress(address).family;
  const prefix = rangeCidr ? Number(rangeCidr.split('/')[1]) : familyBits(family) === 32 ? 24 : 64;
  const step = family === IpFamily.IPv4 ? 8 : 4;
  const labels = family === IpFamily.IPv4 ? 4 : 32;
  const keep = Math.max(1, Math.floor(prefix / step));
  return name
    .split('.')
    .slice(labels - keep)
    .join('.');
}

/** The sets sorted by type, values sorted: two reads of the same records compare equal. */
export function canonicalSets(sets: readonly RecordSet[]): RecordSet[] {
  return [...sets]
    .map((s) => ({ ...s, values: [...s.values].sort() }))
    .sort((a, b) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0));
}

export function sameSets(a: readonly RecordSet[], b: readonly RecordSet[]): boolean {
  return JSON.stringify(canonicalSets(a)) === JSON.stringify(canonicalSets(b));
}
