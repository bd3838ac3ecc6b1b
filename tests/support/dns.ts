import type { ChangeOutcome, DnsTarget } from '../../shared/core/dns/ports.ts';
import type { NameChange, RecordSet } from '../../shared/core/dns/records.ts';
import { MemoryZones } from '../../shared/adapters/dns/memory-zone.ts';

/** Memory zones whose next calls can be made to fail (a target that is down, or throttles), counted per call. */
export class FlakyZones implements DnsTarget {
  readonly zones = new MemoryZones();
  /** Change calls still to fail before the target works again. */
  failChanges = 0;
  failReads = 0;
  readonly applied: NameChange[] = [];
  /** Read calls made. */
  reads = 0;
  /** Each change call's zone and names, in order. */
  readonly changeCalls: { zone: string; names: string[] }[] = [];

  async read(zone: string, names: readonly string[]): Promise<ReadonlyMap<string, readonly RecordSet[]>> {
    this.reads++;
    if (this.failReads > 0) {
      this.failReads--;
      throw new Error('target unreachable');
    }
    return this.zones.read(zone, names);
  }

  async change(zone: string, changes: readonly NameChange[]): Promise<readonly ChangeOutcome[]> {
    this.changeCalls.push({ zone, names: changes.map((c) => c.name) });
    if (this.failChanges > 0) {
      this.failChanges--;
      return changes.map(() => ({ kind: 'failed', error: new Error('Throttling') }) as const);
    }
    const outcomes = await this.zones.change(zone, changes);
    changes.forEach((c, i) => outcomes[i]?.kind === 'applied' && this.applied.push(c));
    return outcomes;
  }

  list(zone: string): Promise<readonly RecordSet[]> {
    return this.zones.list(zone);
  }

  /** The values of one type at a name, sorted; [] when absent. */
  values(name: string, type: string): string[] {
    return [...(this.zones.lookup(name).find((s) => s.type === type)?.values ?? [])].sort();
  }
}
