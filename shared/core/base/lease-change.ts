import type { Lease } from '../model.ts';

/** What a stream record says about one lease item, once the adapter has read it. */
export const LeaseItemPresence = {
  /** The lease item exists after the change: inserted, renewed, or taken over by another claim. */
  Held: 'held',
  /** The lease item is gone: released, deleted by the reconciler, or deleted by DynamoDB's TTL. */
  Gone: 'gone',
} as const;
export type LeaseItemPresence = (typeof LeaseItemPresence)[keyof typeof LeaseItemPresence];

/** One lease change of a stream batch; `id` is the record's sequence number, reported back when its range fails. */
export interface LeaseChange {
  readonly id: string;
  readonly pool: string;
  /** The lease's address, as written in the item (canonical text). */
  readonly address: string;
  readonly state: LeaseItemPresence;
  /** The lease before and after, read off the record's images (the address history's input); absent without images. */
  readonly transition?: LeaseTransition;
}

/** What one lease change says: the lease before and after (either may be absent), and how DynamoDB saw it. */
export interface LeaseTransition {
  readonly before?: Lease;
  readonly after?: Lease;
  /** The stream record's time (epoch ms; DynamoDB gives it rounded down to the second, DynamoDB Local to the minute). */
  readonly atMs: number;
  /** Deleted by DynamoDB's TTL (the record's principal is dynamodb.amazonaws.com). */
  readonly byTtl: boolean;
}
