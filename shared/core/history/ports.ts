import type { EventReason } from '../reconciler/ports.ts';
import type { Holding } from './holding.ts';

/** A release repair's event, as the history needs it: which claim incarnation, why, when. */
export interface RepairEventRef {
  readonly claimUid: string;
  readonly reason: EventReason;
  /** Epoch ms of the repair. */
  readonly atMs: number;
  /** The ARN of the caller whose request made the repair (the event's principal); absent: the reconciler's own. */
  readonly principal?: string;
  /** The addresses it let go of; absent on events written before events carried them. */
  readonly addresses?: readonly string[];
}

/** How far a pool's history is complete: every lease change DynamoDB stamped up to `through` is recorded. */
export interface HistoryMark {
  /** Epoch ms (to the second: the stream record's time). */
  readonly through: number;
  /** The stream function's delay on the batch that moved the mark: its processing time minus the records' time. */
  readonly lagMs: number;
  /** Epoch ms the mark was written. */
  readonly writtenAt: number;
  /** Epoch ms up to which the reconciler has checked the pool's release repairs against the history (its gap check). */
  readonly gapCheckedThrough?: number;
}

/** A page of one address's (or one owner's) ended holdings, newest first. */
export interface HoldingPage {
  readonly items: readonly Holding[];
  /** Where the next page starts (a holding's sort key); absent at the end. */
  readonly next?: string;
}

/** The history's storage: ended holdings, the repairs that explain deletions, and the completeness mark. */
export interface HistoryStore {
  /**
   * Writes an ended holding unless the item (its key is the lease's version) already has an end no later: a
   * redelivered change leaves it as it was.
   */
  putHolding(holding: Holding, expiresAtSeconds: number): Promise<void>;
  /** Release repairs of a pool recorded in [fromMs, toMs] (at most `limit`). */
  repairEvents(pool: string, fromMs: number, toMs: number): Promise<readonly RepairEventRef[]>;
  /** The pool's history retention in days; undefined for an unknown pool. */
  historyDays(pool: string): Promise<number | undefined>;
  /** Moves the pool's mark forward (never back). */
  advanceMark(pool: string, mark: HistoryMark): Promise<void>;
  mark(pool: string): Promise<HistoryMark | undefined>;
  /** Every pool's mark (the reconciler's lag metric). */
  marks(): Promise<ReadonlyMap<string, HistoryMark>>;
  /** Moves the pool's gap-check position forward (never back) on its existing mark. */
  advanceGapCheck(pool: string, throughMs: number): Promise<void>;
  /** An address's ended holdings that began before `before` (a sort key; undefined: all), newest first. */
  addressHoldings(pool: string, address: string, limit: number, before?: string): Promise<HoldingPage>;
  /** The oldest ended holding of an address after the one of this sort key (the one that cut its end). */
  addressHoldingAfter(pool: string, address: string, after: string): Promise<Holding | undefined>;
  /** An owner's ended holdings, newest first (eventually consistent: an index). */
  ownerHoldings(pool: string, ownerUid: string, limit: number, before?: string): Promise<HoldingPage>;
}

/** Where a history listing stands: the sort key to continue below, and the start of the holding just returned. */
export interface HistoryPosition {
  readonly k: string;
  /** The `from` of the last holding returned (the next page's first holding ends there at the latest). */
  readonly n?: string;
}

/** What a history cursor is valid for: the listing and its subject, e.g. `['addressHistory', 'p', '10.0.0.7']`. */
export type HistoryScope = readonly string[];

/** Opaque, tamper-evident cursors of history listings, each valid for its own listing only. */
export interface HistoryCursors {
  encode(scope: HistoryScope, position: HistoryPosition): string;
  /** @throws InvalidArgumentError for a cursor not made here, or made for another listing */
  decode(scope: HistoryScope, cursor: string): HistoryPosition;
}
