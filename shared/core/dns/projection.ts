// Over 300 lines: the names a batch touches, what each should hold, their batched writes and the claims' status, one flow.
/**
 * The DNS projection of the leases: run by the stream function after the lease changes are committed, like the
 * mirrors, and never on the allocation's path. Level-triggered: a change only says which names to look at; what they
 * should hold is read again from the claims and leases (consistent reads), and what they hold from the zone, so a
 * repeated, late or out-of-order record, a crash between two writes and a failed call all converge on redelivery.
 *
 * Per lease change it looks at three names: the forward name of the claim before and after (its hostname, or its
 * name) and, with `reverse`, the address's PTR name. A forward name's rightful holder is the live claim its TXT
 * names, else the first live claim (by name) of the change whose label it is; another live claim wanting it is
 * told the name is taken, as when a foreign record holds it.
 */
import type { LeaseChange } from '../base/lease-change.ts';
import { isExpired, isReleased, type Claim, type Pool, type PoolView } from '../model.ts';
import type { ClaimStore, Clock, LeaseIndex, PoolStore } from '../ports.ts';
import { planName, ownerAt } from './plan.ts';
import {
  forwardName,
  reverseName,
  reverseZoneOf,
  type NameChange,
  type RecordOwner,
  type RecordSet,
} from './records.ts';
import type { ChangeOutcome, DnsTarget, DnsTargets } from './ports.ts';
import type { DnsSettings } from './settings.ts';
import { sameStatus, takenReason, type DnsNameStatus, type DnsStatusStore } from './status.ts';
import { EventReason } from '../events.ts';
import { IpFamily, parseAddress } from '../ip/address.ts';
import { cidrContains, parseCidr } from '../ip/cidr.ts';

export interface DnsProjectionDeps {
  readonly pools: Pick<PoolStore, 'getPoolView'>;
  readonly claims: Pick<ClaimStore, 'getClaim'>;
  readonly leases: Pick<LeaseIndex, 'getLease'>;
  readonly targets: DnsTargets;
  readonly clock: Clock;
  /** Where each claim's names' status goes (GET claim shows it); absent: not kept. */
  readonly status?: DnsStatusStore;
}

/** What the projection did with one name. */
export interface NameOutcome {
  readonly pool: string;
  readonly name: string;
  readonly kind: 'forward' | 'reverse';
  /** The claim that holds (or wanted) the name, and its incarnation; absent when nobody does. */
  readonly claim?: string;
  readonly claimUid?: string;
  readonly outcome: 'published' | 'removed' | 'unchanged' | 'taken' | 'failed';
  /** For `taken`: who holds it (another claim's name, or the foreign TXT's text). */
  readonly holder?: string;
  readonly error?: unknown;
}

export interface DnsResult {
  /** Ids of the changes whose names failed: reported as batch item failures, so the stream delivers them again. */
  readonly failed: readonly string[];
  readonly names: readonly NameOutcome[];
}

/** One name to look at, the claims that may want it, and the changes that pointed at it. */
interface Subject {
  readonly pool: string;
  readonly kind: 'forward' | 'reverse';
  readonly label: string;
  readonly candidates: Set<string>;
  readonly address?: string;
  readonly ids: string[];
}

/** How often a name whose guard failed (written meanwhile) is read and planned again within one batch. */
const STALE_TRIES = 3;

export const claimLabel = (claim: Claim): string => claim.dnsLabel ?? claim.spec.hostname ?? claim.name;

export class DnsProjection {
  constructor(private readonly deps: DnsProjectionDeps) {}

  async apply(changes: readonly LeaseChange[]): Promise<DnsResult> {
    const views = new Map<string, Promise<PoolView | undefined>>();
    const viewOf = (pool: string) => {
      if (!views.has(pool)) views.set(pool, this.deps.pools.getPoolView(pool));
      return views.get(pool)!;
    };
    const subjects = new Map<string, Subject>();
    const add = (s: Omit<Subject, 'candidates' | 'ids'>, id: string, candidate?: string) => {
      const key = `${s.pool}\u0000${s.kind}\u0000${s.label}`;
      const subject = subjects.get(key) ?? { ...s, candidates: new Set<string>(), ids: [] };
      subjects.set(key, subject);
      subject.ids.push(id);
      if (candidate !== undefined) subject.candidates.add(candidate);
    };
    for (const change of changes) {
      const leases = [change.transition?.before, change.transition?.after].filter((l) => l?.dnsLabel !== undefined);
      // Only the leases of pools with dns carry a label: the others cost no read here.
      if (leases.length === 0) continue;
      const dns = (await viewOf(change.pool))?.pool.dns;
      if (!dns) continue;
      for (const lease of leases)
        add({ pool: change.pool, kind: 'forward', label: lease!.dnsLabel! }, change.id, lease!.claim);
      if (dns.reverse)
        add({ pool: change.pool, kind: 'reverse', label: change.address, address: change.address }, change.id);
    }
    const names: NameOutcome[] = [];
    const failed = new Set<string>();
    const places: Place[] = [];
    for (const subject of subjects.values()) {
      const view = (await viewOf(subject.pool))!;
      const dns = view.pool.dns!;
      places.push({ subject, view, dns, target: this.deps.targets(dns.target), ...this.placeOf(subject, view, dns) });
    }
    const settled = await this.settleAll(places);
    for (const place of places) {
      const outcomes = settled.get(place)!;
      names.push(...outcomes);
      if (outcomes.some((o) => o.outcome === 'failed')) for (const id of place.subject.ids) failed.add(id);
    }
    await this.recordStatus(names);
    return { failed: [...failed], names };
  }

  /**
   * Puts each claim's names' status where it changed (one consistent read of a claim's statuses, one put a changed
   * name), with a DnsNameTaken event as a name turns taken. Best effort: a failed status write fails no record (the
   * records are right; the next change of the claim's names writes the status again), and the status items are no
   * lease items, so their own stream records start no DNS work.
   */
  private async recordStatus(names: readonly NameOutcome[]): Promise<void> {
    const store = this.deps.status;
    if (!store) return;
    const read = new Map<string, Promise<DnsNameStatus[]>>();
    for (const n of names) {
      const state = n.outcome === 'taken' ? 'taken' : n.outcome === 'failed' ? 'pending' : 'published';
      if (!n.claim || !n.claimUid || n.outcome === 'removed') continue;
      const reason =
        n.outcome === 'taken'
          ? takenReason(n.holder)
          : n.outcome === 'failed'
            ? ((n.error as Error | undefined)?.message ?? String(n.error))
            : undefined;
      const status: DnsNameStatus = { name: n.name, kind: n.kind, state, ...(reason ? { reason } : {}) };
      try {
        const key = `${n.pool}\u0000${n.claimUid}`;
        if (!read.has(key)) read.set(key, store.statuses(n.pool, n.claimUid));
        const before = (await read.get(key)!).find((s) => s.name === n.name);
        if (sameStatus(before, status)) continue;
        const event =
          state === 'taken' && before?.state !== 'taken'
            ? {
                pool: n.pool,
                time: new Date(this.deps.clock.nowMs()).toISOString(),
                reason: EventReason.DnsNameTaken,
                object: `claim/${n.claim}`,
                message: `DNS name ${n.name} of claim ${n.claim} is ${reason}: not published, nothing in the zone changed.`,
                claimUid: n.claimUid,
              }
            : undefined;
        await store.putStatus(n.pool, n.claimUid, status, event);
      } catch {
        // Best effort, as said above.
      }
    }
  }

  /**
   * Reads, plans and writes every name until it is settled, or reports why not. Per round, the names of one zone of
   * one target are read in one call and their changes written in one call (the target batches them within its
   * limits, in order); a name whose guard failed (written meanwhile) goes to the next round, at most STALE_TRIES.
   */
  private async settleAll(places: readonly Place[]): Promise<Map<Place, NameOutcome[]>> {
    const done = new Map<Place, NameOutcome[]>();
    const fail = (p: Place, error: unknown) =>
      done.set(p, [{ pool: p.subject.pool, name: p.name, kind: p.subject.kind, outcome: 'failed', error }]);
    let pending = [...places];
    for (let attempt = 0; attempt < STALE_TRIES && pending.length > 0; attempt++) {
      const stale: Place[] = [];
      for (const group of groupedByZone(pending)) {
        const { target, zone } = group[0]!;
        let read: ReadonlyMap<string, readonly RecordSet[]>;
        try {
          read = await target.read(zone, [...new Set(group.map((p) => p.name))]);
        } catch (error) {
          for (const p of group) fail(p, error);
          continue;
        }
        const changing: { place: Place; plan: Planned }[] = [];
        for (const p of group) {
          try {
            const planned = await this.planOf(p, read.get(p.name) ?? []);
            if (planned.change) changing.push({ place: p, plan: planned });
            else done.set(p, planned.outcomes);
          } catch (error) {
            fail(p, error);
          }
        }
        if (changing.length === 0) continue;
        let outcomes: readonly ChangeOutcome[];
        try {
          outcomes = await target.change(
            zone,
            changing.map((c) => c.plan.change!),
          );
        } catch (error) {
          outcomes = changing.map(() => ({ kind: 'failed', error }) as const);
        }
        changing.forEach(({ place, plan }, i) => {
          const outcome = outcomes[i];
          if (outcome?.kind === 'applied') done.set(place, plan.outcomes);
          else if (outcome?.kind === 'stale') stale.push(place);
          else {
            // The claim it was for stays named (its status says pending, with the error).
            const error = outcome?.kind === 'failed' ? outcome.error : new Error('no outcome from the target');
            done.set(place, [{ ...plan.outcomes[0]!, outcome: 'failed', error }]);
          }
        });
      }
      pending = stale;
    }
    for (const p of pending) fail(p, new Error(`${p.name} kept changing under the update`));
    return done;
  }

  /** What one name should become: its outcomes when no change is needed (or once the change applied), and the change. */
  private async planOf(p: Place, existing: readonly RecordSet[]): Promise<Planned> {
    const { subject, view, dns, zone, name } = p;
    const base = { pool: subject.pool, name, kind: subject.kind };
    const wanted = await this.wanted(subject, view.pool, dns, existing);
    const plan = planName({
      zone,
      name,
      pool: subject.pool,
      existing,
      ttl: dns.ttlSeconds,
      ...(wanted.holder ? { wanted: wanted.holder } : {}),
    });
    const claim = wanted.holder?.owner.claim;
    const held = { ...base, ...(claim ? { claim, claimUid: wanted.holder!.owner.uid } : {}) };
    // A live claim that wants a name another live claim of the pool holds is told so; the holder keeps it.
    const rivals = (wanted.rivals ?? []).map(
      (r): NameOutcome => ({ ...base, claim: r.claim, claimUid: r.uid, outcome: 'taken', holder: `claim ${claim}` }),
    );
    if (plan.kind === 'taken')
      return { outcomes: [{ ...held, outcome: 'taken', ...(plan.holder ? { holder: plan.holder } : {}) }, ...rivals] };
    if (plan.kind === 'unchanged') return { outcomes: [{ ...held, outcome: 'unchanged' }, ...rivals] };
    const outcome = plan.change.after.length ? 'published' : 'removed';
    return { change: plan.change, outcomes: [{ ...held, outcome }, ...rivals] };
  }

  private placeOf(subject: Subject, view: PoolView, dns: DnsSettings): { zone: string; name: string } {
    if (subject.kind === 'forward') return { zone: dns.zone, name: forwardName(subject.label, dns.zone) };
    const address = subject.address!;
    const parsed = parseAddress(address);
    const range = view.ranges.find((r) => r.family === parsed.family && cidrContains(parseCidr(r.cidr), parsed));
    return { zone: reverseZoneOf(address, range?.cidr, dns.reverseZones), name: reverseName(address) };
  }

  /** Who should hold the name, read from the claims (forward) or the lease (reverse) as they are now. */
  private async wanted(
    subject: Subject,
    pool: Pool,
    dns: DnsSettings,
    existing: readonly RecordSet[],
  ): Promise<Wanted> {
    const now = this.deps.clock.nowMs();
    if (subject.kind === 'reverse') {
      const lease = await this.deps.leases.getLease(pool.name, subject.address!);
      if (!lease?.dnsLabel || isReleased(lease) || isExpired(lease, now)) return {};
      const owner = { pool: pool.name, claim: lease.claim, uid: lease.claimUid };
      const ptr = forwardName(lease.dnsLabel, dns.zone);
      const name = reverseName(subject.address!);
      return { holder: { owner, sets: [{ name, type: 'PTR', ttl: dns.ttlSeconds, values: [ptr] }] } };
    }
    const current = ownerAt(existing, pool.name);
    const names = [...new Set([...(current ? [current.claim] : []), ...[...subject.candidates].sort()])];
    const live: Claim[] = [];
    for (const claimName of names) {
      const claim = await this.deps.claims.getClaim(pool.name, claimName);
      if (claim && !isExpired(claim, now) && claimLabel(claim) === subject.label) live.push(claim);
    }
    // The claim the TXT names keeps the name while it lives; otherwise the first live one takes it.
    const holder = live.find((c) => current && c.uid === current.uid) ?? live[0];
    if (!holder) return {};
    const owner: RecordOwner = { pool: pool.name, claim: holder.name, uid: holder.uid };
    return {
      holder: { owner, sets: addressSets(holder, forwardName(subject.label, dns.zone), dns.ttlSeconds) },
      rivals: live.filter((c) => c !== holder).map((c) => ({ claim: c.name, uid: c.uid })),
    };
  }
}

/** A subject placed: its pool's view and dns, its target, and the zone and name it is. */
interface Place {
  readonly subject: Subject;
  readonly view: PoolView;
  readonly dns: DnsSettings;
  readonly target: DnsTarget;
  readonly zone: string;
  readonly name: string;
}

interface Planned {
  readonly change?: NameChange;
  readonly outcomes: NameOutcome[];
}

/** The places by target and zone, in their first appearance's order. */
function groupedByZone(places: readonly Place[]): Place[][] {
  const groups = new Map<DnsTarget, Map<string, Place[]>>();
  for (const p of places) {
    const zones = groups.get(p.target) ?? new Map<string, Place[]>();
    groups.set(p.target, zones);
    zones.set(p.zone, [...(zones.get(p.zone) ?? []), p]);
  }
  return [...groups.values()].flatMap((zones) => [...zones.values()]);
}

interface Wanted {
  readonly holder?: { readonly owner: RecordOwner; readonly sets: readonly RecordSet[] };
  /** Other live claims of the pool that want the same name (each reported as taken by the holder). */
  readonly rivals?: readonly { readonly claim: string; readonly uid: string }[];
}

/** A claim's A and AAAA sets at `name`. */
export function addressSets(claim: Claim, name: string, ttl: number): RecordSet[] {
  const sets: RecordSet[] = [];
  for (const [family, type] of [
    [IpFamily.IPv4, 'A'],
    [IpFamily.IPv6, 'AAAA'],
  ] as const) {
    const values = claim.addresses.filter((a) => a.family === family).map((a) => a.address);
    if (values.length > 0) sets.push({ name, type, ttl, values });
  }
  return sets;
}
