import type { DnsTargetSpec } from './settings.ts';
import type { NameChange, RecordSet } from './records.ts';

/** What became of one name's change at the target. */
export type ChangeOutcome =
  | { readonly kind: 'applied' }
  /** The name no longer held what the change was read against (someone wrote it meanwhile): read it again. */
  | { readonly kind: 'stale' }
  | { readonly kind: 'failed'; readonly error: unknown };

/**
 * A DNS server that holds a pool's zones (Route 53, or any RFC 2136 server). Narrow on purpose: read a few names,
 * change a few names, list a zone (the reconciler's drift check).
 */
export interface DnsTarget {
  /** Every record set at each name, of any type (names absolute and lower-case). @throws when the target is down */
  read(zone: string, names: readonly string[]): Promise<ReadonlyMap<string, readonly RecordSet[]>>;
  /**
   * Applies each change only while its name still holds exactly its `before` of the service's types (prerequisites
   * in RFC 2136, exact DELETE values in Route 53), never reordering two changes of one name; one outcome per change,
   * in order.
   */
  change(zone: string, changes: readonly NameChange[]): Promise<readonly ChangeOutcome[]>;
  /** Every record set of the zone (AXFR, ListResourceRecordSets). */
  list(zone: string): Promise<readonly RecordSet[]>;
}

/** The target a pool's settings name (one adapter per kind, built by the composition root). */
export type DnsTargets = (spec: DnsTargetSpec) => DnsTarget;
