import type { Claim } from '../model.ts';
import { forwardName, reverseName } from '../dns/records.ts';
import type { DnsNameStatus } from '../dns/status.ts';
import type { Deps } from './deps.ts';

/**
 * The DNS names of a claim in a pool with `dns` and each one's state as the stream function last wrote it; a name
 * it has not written yet is pending. Undefined for a pool without dns. One consistent query of the claim's statuses.
 */
export async function claimDnsStatus(
  deps: Pick<Deps, 'views' | 'clock' | 'dnsStatus'>,
  claim: Claim,
): Promise<DnsNameStatus[] | undefined> {
  const dns = (await deps.views.get(claim.pool, deps.clock.nowMs())).pool.dns;
  if (!dns || !claim.dnsLabel || !deps.dnsStatus) return undefined;
  const stored = new Map((await deps.dnsStatus.statuses(claim.pool, claim.uid)).map((s) => [s.name, s]));
  const names: Pick<DnsNameStatus, 'name' | 'kind'>[] = [
    { name: forwardName(claim.dnsLabel, dns.zone), kind: 'forward' },
    ...(dns.reverse ? claim.addresses.map((a) => ({ name: reverseName(a.address), kind: 'reverse' as const })) : []),
  ];
  return names
    .map(
      (n) =>
        stored.get(n.name) ?? { ...n, state: 'pending' as const, reason: 'not yet written by the stream function' },
    )
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
