/**
 * The DNS status of a claim's names, as the stream function last saw them: kept beside the claim (its GET shows it),
 * never on the claim item itself, so writing it is no lease change and sets no DNS work going again.
 */
import type { IpamEvent } from '../events.ts';

export type DnsNameState = 'published' | 'pending' | 'taken';

export interface DnsNameStatus {
  readonly name: string;
  readonly kind: 'forward' | 'reverse';
  readonly state: DnsNameState;
  /** Why a name is pending (the target's error) or taken (who holds it). */
  readonly reason?: string;
}

/** The statuses of claim incarnations' names (TableDnsStatusStore is the adapter). */
export interface DnsStatusStore {
  /** Every name's status of one claim incarnation, read consistently, in name order. */
  statuses(pool: string, claimUid: string): Promise<DnsNameStatus[]>;
  /** Puts one name's status, and `event` with it in one transaction. */
  putStatus(pool: string, claimUid: string, status: DnsNameStatus, event?: IpamEvent): Promise<void>;
}

/** Why a name is taken, in a sentence fragment: by another claim, or by records the service did not make. */
export function takenReason(holder: string | undefined): string {
  if (holder?.startsWith('claim ')) return `held by ${holder} of this pool`;
  return holder
    ? `held by records the service did not make (TXT "${holder}")`
    : 'held by records the service did not make (no ownership TXT of this pool)';
}

export const sameStatus = (a: DnsNameStatus | undefined, b: DnsNameStatus): boolean =>
  a !== undefined && a.state === b.state && a.reason === b.reason && a.kind === b.kind;
