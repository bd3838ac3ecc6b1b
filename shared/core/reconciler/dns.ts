// Over 300 lines: one reconciler phase read top to bottom (windows, plan, apply), its steps private to it.
/**
 * Rows 22-24: the pools' DNS zones against what their live claims should publish, repaired both ways. The stream
 * function keeps the records (dns/projection.ts); this is the backstop for what it missed (records it never got, a
 * release while it was down, a record deleted by hand).
 *
 * Per pool with `dns`, within a budget of target calls and names a run (DnsRepairBudget): list the pool's zones,
 * compare a window of the names the service owns there (its ownership TXT naming this pool) and of the pool's claims
 * with what the claims and leases say now (consistent reads), and write each difference with the planner's guard
 * (dns/plan.ts). Both windows move on from a per-pool checkpoint, so a big zone or pool is covered over runs; a run
 * whose change budget ran out keeps the windows where they were, so the next run finishes them (convergence over
 * runs). A record the service did not make is never changed: a live claim's name it holds is reported as taken.
 * Names of claims younger than the orphan grace are left to the stream function, which is probably writing them.
 */
import { isExpired, isReleased, type Claim, type Lease, type PoolView } from '../model.ts';
import type { PoolViewList } from '../use-cases/reconcile-ports.ts';
import type { DnsTarget } from '../dns/ports.ts';
import type { DnsSettings } from '../dns/settings.ts';
import { ownerAt, planName } from '../dns/plan.ts';
import { forwardName, reverseName, reverseZoneOf, type NameChange, type RecordSet } from '../dns/records.ts';
import { addressSets, claimLabel } from '../dns/projection.ts';
import { formatAddress, IpFamily, parseAddress } from '../ip/address.ts';
import { Phase, RETRIES, type Run } from './run.ts';
import type { DnsRepairBudget } from './plan.ts';

export type { DnsRepairBudget } from './plan.ts';

/**
 * The default budget: 8 target calls, the zone listings first (at most 7), then change calls of up to 100 names, at
 * most 200 names changed (a name's change is at most 8 records in Route 53's terms, a DELETE and a CREATE of each of
 * 4 types, within its 1,000 records a request); 1,000 owned names and 1,000 claims compared (10 batch reads each).
 */
export const DNS_REPAIR_BUDGET: DnsRepairBudget = { calls: 8, changes: 200, names: 1000, claims: 1000 };
const NAMES_PER_CALL = 100;
const CLAIMS_PAGE = 100;

/** What the repair did for one pool in one run. */
export interface DnsPoolRepair {
  readonly pool: string;
  /** Target calls made (listings and changes). */
  calls: number;
  /** Record sets the listings held. */
  listed: number;
  /** Names compared. */
  examined: number;
  /** Names written to what a live claim should publish (missing or wrong). */
  published: number;
  /** The service's names removed (their claim gone, or no longer holding the address). */
  removed: number;
  /** Names a live claim should publish that records the service did not make hold (`holder`: their TXT). */
  readonly taken: { name: string; claim: string; holder?: string }[];
  /** Changes the target failed. */
  failed: number;
}

/** Where the pool's windows stand: the next zone to list first, the last owned name compared, the claims cursor. */
interface DnsCheckpoint {
  readonly zone?: number;
  readonly after?: string;
  readonly claims?: string;
}

/** One name to compare: where it is, and the claims of this run's window that want it. */
interface Subject {
  readonly zone: string;
  readonly name: string;
  readonly address?: string;
  readonly existing: readonly RecordSet[];
  readonly candidates: Claim[];
}

export const dnsCheckpointName = (pool: string): string => `dns/${pool}`;

/** Rows 22-24 for every pool with `dns`; nothing without DNS targets (a container that writes no DNS). */
export async function repairDns(run: Run, views: PoolViewList): Promise<DnsPoolRepair[]> {
  const targets = run.deps.dns;
  const out: DnsPoolRepair[] = [];
  if (!targets) return out;
  const budget = { ...DNS_REPAIR_BUDGET, ...run.deps.settings.dns };
  for (const view of views) {
    const dns = view.pool.dns;
    if (!dns || run.out(Phase.Dns)) continue;
    const tally: DnsPoolRepair = {
      pool: view.pool.name,
      calls: 0,
      listed: 0,
      examined: 0,
      published: 0,
      removed: 0,
      taken: [],
      failed: 0,
    };
    out.push(tally);
    await run.attempt(`dns repair ${view.pool.name}`, async () => {
      await repairPool({ run, view, dns, target: targets(dns.target), budget, tally });
      return true;
    });
  }
  return out;
}

interface PoolRepair {
  readonly run: Run;
  readonly view: PoolView;
  readonly dns: DnsSettings;
  readonly target: DnsTarget;
  readonly budget: DnsRepairBudget;
  readonly tally: DnsPoolRepair;
}

async function repairPool(p: PoolRepair): Promise<void> {
  const { run, view, budget, tally } = p;
  const pool = view.pool.name;
  const store = run.deps.reconcile;
  const read = await run.read(`read dns checkpoint ${pool}`, () =>
    store.getCheckpoint<DnsCheckpoint>(dnsCheckpointName(pool)),
  );
  if (!read.ok) return;
  const at = read.value?.value ?? {};
  const all = zonesOf(view, p.dns);
  // More zones than listings a run allows: they take turns, from the checkpoint's.
  const lists = Math.min(all.length, Math.max(1, budget.calls - 1));
  const first = (at.zone ?? 0) % all.length;
  const zones = Array.from({ length: lists }, (_, i) => all[(first + i) % all.length]!);
  const listed = new Map<string, Map<string, RecordSet[]>>();
  for (const zone of zones) {
    if (run.out(Phase.Dns) || tally.calls >= budget.calls) break;
    tally.calls++;
    const sets = await run.read(`list dns zone ${zone} of ${pool}`, () => p.target.list(zone));
    // The other zones are still compared; the windows stay for the next run (below).
    if (!sets.ok) continue;
    tally.listed += sets.value.length;
    const names = new Map<string, RecordSet[]>();
    for (const s of sets.value) names.set(s.name, [...(names.get(s.name) ?? []), s]);
    listed.set(zone, names);
  }
  const owned = ownedWindow(listed, pool, at.after, budget.names);
  const claims = await claimsWindow(run, pool, at.claims, budget.claims);
  if (!claims) return;
  const subjects = subjectsOf(p, listed, owned.keys, claims.items);
  tally.examined += subjects.length;
  const changes = await plan(p, subjects);
  const done = (await apply(p, changes)) && listed.size === zones.length;
  // Every zone listed and every difference sent (a taken or stale name is the next listing's): the windows move on.
  const next: DnsCheckpoint = done
    ? {
        ...(zones.length < all.length ? { zone: (first + zones.length) % all.length } : {}),
        ...(owned.next !== undefined ? { after: owned.next } : {}),
        ...(claims.next !== undefined ? { claims: claims.next } : {}),
      }
    : at;
  if (JSON.stringify(next) === JSON.stringify(at)) return;
  await run.repair(
    `save dns checkpoint ${pool}`,
    async () => (await store.saveCheckpoint(dnsCheckpointName(pool), next, read.value?.version), true),
  );
}

/** The pool's zones: its forward zone and, with `reverse`, the reverse zone of each of its ranges. */
function zonesOf(view: PoolView, dns: DnsSettings): string[] {
  const reverse = dns.reverse
    ? view.ranges.map((r) => reverseZoneOf(r.cidr.split('/')[0]!, r.cidr, dns.reverseZones))
    : [];
  return [...new Set([dns.zone, ...reverse])];
}

const keyOf = (zone: string, name: string) => `${zone}\u0000${name}`;

/** Up to `limit` names this pool owns, in key order after `after`; `next` absent when the window reached the end. */
function ownedWindow(
  listed: ReadonlyMap<string, ReadonlyMap<string, readonly RecordSet[]>>,
  pool: string,
  after: string | undefined,
  limit: number,
): { keys: string[]; next?: string } {
  const keys: string[] = [];
  for (const [zone, names] of listed)
    for (const [name, sets] of names) if (ownerAt(sets, pool)) keys.push(keyOf(zone, name));
  keys.sort();
  const from = after === undefined ? keys : keys.filter((k) => k > after);
  const window = from.slice(0, limit);
  return from.length > limit ? { keys: window, next: window.at(-1)! } : { keys: window };
}

/** Up to `limit` claims of the pool from `cursor` on; `next` absent at the end. Undefined when a page failed. */
async function claimsWindow(
  run: Run,
  pool: string,
  cursor: string | undefined,
  limit: number,
): Promise<{ items: Claim[]; next?: string } | undefined> {
  const items: Claim[] = [];
  let next = cursor;
  do {
    if (items.length >= limit) break;
    const from = next;
    const page = await run.read(`list claims of ${pool} for dns`, () =>
      run.deps.claims.listClaims(pool, Math.min(CLAIMS_PAGE, limit - items.length), from),
    );
    if (!page.ok) return undefined;
    items.push(...page.value.items);
    next = page.value.nextCursor;
  } while (next !== undefined);
  return { items, ...(next !== undefined ? { next } : {}) };
}

/** The names to compare: the owned window's, and each live claim's of the claims window (in the zones listed). */
function subjectsOf(
  p: PoolRepair,
  listed: ReadonlyMap<string, ReadonlyMap<string, readonly RecordSet[]>>,
  owned: readonly string[],
  claims: readonly Claim[],
): Subject[] {
  const subjects = new Map<string, Subject>();
  const add = (zone: string, name: string, address?: string, claim?: Claim) => {
    const names = listed.get(zone);
    if (!names) return;
    const key = keyOf(zone, name);
    let s = subjects.get(key);
    if (!s) {
      s = { zone, name, existing: names.get(name) ?? [], candidates: [], ...(address ? { address } : {}) };
      subjects.set(key, s);
    }
    if (claim) s.candidates.push(claim);
  };
  for (const key of owned) {
    const [zone, name] = key.split('\u0000') as [string, string];
    add(zone, name, addressOfReverseName(name));
  }
  const now = p.run.now();
  for (const claim of claims) {
    if (isExpired(claim, now)) continue;
    add(p.dns.zone, forwardName(claimLabel(claim), p.dns.zone), undefined, claim);
    if (!p.dns.reverse) continue;
    for (const a of claim.addresses) {
      const cidr = p.view.ranges.find((r) => r.name === a.range)?.cidr;
      add(reverseZoneOf(a.address, cidr, p.dns.reverseZones), reverseName(a.address), a.address);
    }
  }
  return [...subjects.values()].sort((a, b) => (keyOf(a.zone, a.name) < keyOf(b.zone, b.name) ? -1 : 1));
}

/** The change each subject needs, by what the claims and leases say now; taken names go into the tally. */
async function plan(p: PoolRepair, subjects: readonly Subject[]): Promise<NameChange[]> {
  const { run, dns, tally } = p;
  const pool = p.view.pool.name;
  const store = run.deps.reconcile;
  const ownerClaims = [...new Set(subjects.flatMap((s) => (s.address ? [] : [ownerAt(s.existing, pool)?.claim])))];
  const claimRefs = ownerClaims.filter((c): c is string => c !== undefined).map((name) => ({ pool, name }));
  const addresses = subjects.flatMap((s) => (s.address ? [{ pool, address: s.address }] : []));
  const [claims, leases] = await Promise.all([
    claimRefs.length ? run.retrying(() => store.getClaims(claimRefs), RETRIES.read) : [],
    addresses.length ? run.retrying(() => store.getLeases(addresses), RETRIES.read) : [],
  ]);
  const claimByName = new Map(claims.map((c) => [c.name, c]));
  const leaseAt = new Map(leases.map((l) => [l.address, l]));
  const now = run.now();
  const young = (createdAt: string) => Date.parse(createdAt) > now - run.deps.settings.orphanLeaseGraceMs;
  const changes: NameChange[] = [];
  for (const s of subjects) {
    const holder = s.address
      ? ptrHolder(leaseAt.get(s.address), dns, s, now)
      : forwardHolder({ s, pool, dns, claims: claimByName, now });
    if (holder && young(holder.createdAt)) continue;
    const outcome = planName({
      zone: s.zone,
      name: s.name,
      pool,
      existing: s.existing,
      ttl: dns.ttlSeconds,
      ...(holder ? { wanted: { owner: holder.owner, sets: holder.sets } } : {}),
    });
    if (outcome.kind === 'taken')
      tally.taken.push({
        name: s.name,
        claim: holder!.owner.claim,
        ...(outcome.holder !== undefined ? { holder: outcome.holder } : {}),
      });
    else if (outcome.kind === 'change') changes.push(outcome.change);
  }
  return changes;
}

interface Holder {
  readonly owner: { pool: string; claim: string; uid: string };
  readonly sets: readonly RecordSet[];
  readonly createdAt: string;
}

/**
 * The live claim a forward name belongs to, as the projection decides it: the claim its TXT names while it lives
 * (same uid first, then a claim of that name again), else the first live claim (by name) that wants it.
 */
function forwardHolder(at: {
  readonly s: Subject;
  readonly pool: string;
  readonly dns: DnsSettings;
  readonly claims: ReadonlyMap<string, Claim>;
  readonly now: number;
}): Holder | undefined {
  const { s, pool, dns, claims, now } = at;
  const current = ownerAt(s.existing, pool);
  const label = s.name.slice(0, s.name.length - dns.zone.length - 1);
  const byTxt = current ? claims.get(current.claim) : undefined;
  const live = [...(byTxt ? [byTxt] : []), ...[...s.candidates].sort((a, b) => (a.name < b.name ? -1 : 1))].filter(
    (c) => !isExpired(c, now) && claimLabel(c) === label,
  );
  const claim = live.find((c) => current && c.uid === current.uid) ?? live[0];
  if (!claim) return undefined;
  return {
    owner: { pool, claim: claim.name, uid: claim.uid },
    sets: addressSets(claim, s.name, dns.ttlSeconds),
    createdAt: claim.createdAt,
  };
}

/** The lease an address's PTR belongs to, while it is held and carries the claim's label. */
function ptrHolder(lease: Lease | undefined, dns: DnsSettings, s: Subject, now: number): Holder | undefined {
  if (!lease?.dnsLabel || isReleased(lease) || isExpired(lease, now)) return undefined;
  return {
    owner: { pool: lease.pool, claim: lease.claim, uid: lease.claimUid },
    sets: [{ name: s.name, type: 'PTR', ttl: dns.ttlSeconds, values: [forwardName(lease.dnsLabel, dns.zone)] }],
    createdAt: lease.createdAt,
  };
}

/** Sends the changes zone by zone within the budget; true when every one was sent. */
async function apply(p: PoolRepair, changes: readonly NameChange[]): Promise<boolean> {
  const { run, budget, tally } = p;
  const allowed = changes.slice(0, budget.changes);
  let sent = 0;
  const zones = [...new Set(allowed.map((c) => c.zone))];
  for (const zone of zones) {
    const mine = allowed.filter((c) => c.zone === zone);
    for (let i = 0; i < mine.length; i += NAMES_PER_CALL) {
      if (run.out(Phase.Dns) || tally.calls >= budget.calls) return false;
      const batch = mine.slice(i, i + NAMES_PER_CALL);
      tally.calls++;
      sent += batch.length;
      const outcomes = await p.target
        .change(zone, batch)
        .catch((error: unknown) => batch.map(() => ({ kind: 'failed', error }) as const));
      let failed: { name: string; error: unknown } | undefined;
      outcomes.forEach((o, j) => {
        if (o.kind === 'applied') {
          if (batch[j]!.after.length > 0) tally.published++;
          else tally.removed++;
        } else if (o.kind === 'failed') {
          tally.failed++;
          failed ??= { name: batch[j]!.name, error: o.error };
        }
      });
      // One line per call, not per name: a target that is down fails them all alike.
      if (failed)
        run.errors.push(
          `dns change in ${zone} of ${tally.pool}: ${String(outcomes.filter((o) => o.kind === 'failed').length)} names failed, first ${failed.name}: ${(failed.error as Error)?.message ?? String(failed.error)}`,
        );
    }
  }
  return sent === changes.length;
}

/** The address a reverse name stands for (`4.3.2.1.in-addr.arpa.`, 32 nibbles under `ip6.arpa.`); else undefined. */
export function addressOfReverseName(name: string): string | undefined {
  const labels = name.toLowerCase().replace(/\.$/, '').split('.');
  const tail = labels.slice(-2).join('.');
  const parts = labels.slice(0, -2).reverse();
  try {
    if (tail === 'in-addr.arpa' && parts.length === 4 && parts.every((o) => /^\d{1,3}$/.test(o)))
      return formatAddress(parseAddress(parts.join('.')));
    if (tail === 'ip6.arpa' && parts.length === 32 && parts.every((n) => /^[0-9a-f]$/.test(n))) {
      const groups = Array.from({ length: 8 }, (_, i) => parts.slice(i * 4, i * 4 + 4).join(''));
      const address = parseAddress(groups.join(':'));
      return address.family === IpFamily.IPv6 ? formatAddress(address) : undefined;
    }
  } catch {
    return undefined;
  }
  return undefined;
}
