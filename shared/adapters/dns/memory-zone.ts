import type { ChangeOutcome, DnsTarget } from '../../core/dns/ports.ts';
import { OwnedTypes, sameSets, type NameChange, type RecordSet } from '../../core/dns/records.ts';

/**
 * Zones held in memory, with the guard every real target has: a change applies only while its name still holds its
 * `before`. The local stack's embedded DNS server answers from it, and tests and the property run against it.
 */
export class MemoryZones implements DnsTarget {
  /** zone -> name -> record sets. */
  private readonly zones = new Map<string, Map<string, RecordSet[]>>();
  /** zone -> how many writes it took (its SOA serial, when a server answers from it). */
  private readonly writes = new Map<string, number>();

  private zone(zone: string): Map<string, RecordSet[]> {
    let z = this.zones.get(zone);
    if (!z) this.zones.set(zone, (z = new Map()));
    return z;
  }

  async read(zone: string, names: readonly string[]): Promise<ReadonlyMap<string, readonly RecordSet[]>> {
    const z = this.zone(zone);
    return new Map(names.map((n) => [n, [...(z.get(n) ?? [])]]));
  }

  async change(zone: string, changes: readonly NameChange[]): Promise<readonly ChangeOutcome[]> {
    return changes.map((c) => this.applyOne(zone, c));
  }

  private applyOne(zone: string, c: NameChange): ChangeOutcome {
    const z = this.zone(zone);
    const sets = z.get(c.name) ?? [];
    const owned = sets.filter((s) => (OwnedTypes as readonly string[]).includes(s.type));
    // An empty `before` means the name held nothing at all (RFC 2136's "name is not in use").
    if (c.before.length === 0 ? sets.length > 0 : !sameSets(owned, c.before)) return { kind: 'stale' };
    const others = sets.filter((s) => !(OwnedTypes as readonly string[]).includes(s.type));
    const next = [...others, ...c.after];
    if (next.length === 0) z.delete(c.name);
    else z.set(c.name, next);
    this.writes.set(zone, this.serial(zone) + 1);
    return { kind: 'applied' };
  }

  async list(zone: string): Promise<readonly RecordSet[]> {
    return [...this.zone(zone).values()].flat();
  }

  /** Writes a record set as someone else would (by hand, or another service): no guard, no ownership. */
  put(zone: string, set: RecordSet): void {
    const z = this.zone(zone);
    z.set(set.name, [...(z.get(set.name) ?? []).filter((s) => s.type !== set.type), set]);
    this.writes.set(zone, this.serial(zone) + 1);
  }

  /** A number that grows with every write to the zone: its SOA serial. */
  serial(zone: string): number {
    return this.writes.get(zone) ?? 0;
  }

  /** Every record set at `name` in any zone (what a resolver asking this server gets). */
  lookup(name: string): RecordSet[] {
    for (const z of this.zones.values()) if (z.has(name)) return [...z.get(name)!];
    return [];
  }

  /** The zones held, by name. */
  zoneNames(): string[] {
    return [...this.zones.keys()];
  }
}
