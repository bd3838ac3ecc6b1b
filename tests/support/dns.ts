import type { ChangeOutcome, DnsTarget } from '../../shared/core/dns/ports.ts';
import { OwnedTypes, type NameChange, type RecordSet } from '../../shared/core/dns/records.ts';
import { MemoryZones } from '../../shared/adapters/dns/memory-zone.ts';

/** Memory zones whose next calls can be made to fail (a target that is down, or throttles), counted per call. */
export class FlakyZones implements DnsTarget {
  readonly zones = new MemoryZones();
  /** Change calls still to fail before the target works again. */
  failChanges = 0;
  failReads = 0;
  /** Zone listings still to fail. */
  failLists = 0;
  readonly applied: NameChange[] = [];
  /** Calls made of each kind (a reconciler run's budget is checked against them). */
  readonly calls = { read: 0, change: 0, list: 0 };

  /** Each change call's zone and names, in order. */
  readonly changeCalls: { zone: string; names: string[] }[] = [];

  async read(zone: string, names: readonly string[]): Promise<ReadonlyMap<string, readonly RecordSet[]>> {
    this.calls.read++;
    if (this.failReads > 0) {
      this.failReads--;
      throw new Error('target unreachable');
    }
    return this.zones.read(zone, names);
  }

  async change(zone: string, changes: readonly NameChange[]): Promise<readonly ChangeOutcome[]> {
    this.calls.change++;
    this.changeCalls.push({ zone, names: changes.map((c) => c.name) });
    if (this.failChanges > 0) {
      this.failChanges--;
      return changes.map(() => ({ kind: 'failed', error: new Error('Throttling') }) as const);
    }
    const outcomes = await this.zones.change(zone, changes);
    changes.forEach((c, i) => outcomes[i]?.kind === 'applied' && this.applied.push(c));
    return outcomes;
  }

  async list(zone: string): Promise<readonly RecordSet[]> {
    this.calls.list++;
    if (this.failLists > 0) {
      this.failLists--;
      throw new Error('zone transfer refused');
    }
    return this.zones.list(zone);
  }

  /** The values of one type at a name, sorted; [] when absent. */
  values(name: string, type: string): string[] {
    return [...(this.zones.lookup(name).find((s) => s.type === type)?.values ?? [])].sort();
  }

  /** Every call so far, of any kind. */
  totalCalls(): number {
    return this.calls.read + this.calls.change + this.calls.list;
  }

  /** Deletes the service's records at a name as someone would by hand (not counted as the service's calls). */
  async dropByHand(zone: string, name: string): Promise<void> {
    const sets = (await this.zones.read(zone, [name])).get(name) ?? [];
    const before = sets.filter((s) => (OwnedTypes as readonly string[]).includes(s.type));
    await this.zones.change(zone, [{ zone, name, before, after: [] }]);
  }
}
