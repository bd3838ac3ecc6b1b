import type { EventReason } from '../events.ts';
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

/**
 * How far a pool's history is complete. The stream function keeps `through` on the summary chunks it writes in the same
 * batch (no write of its own), and on the pool's mark item only in a batch that writes no chunk of the pool; a read
 * takes the newest of the mark item and the chunks it looks at (each is true for the whole pool).
 */
export interface HistoryMark {
  /** Epoch ms (a stream record's time, to the second): every lease change stamped before it is recorded. */
  readonly through?: number;
  /** Epoch ms up to which the reconciler has checked the pool's release repairs against the history (its gap check). */
  readonly gapCheckedThrough?: number;
  /** The stamp of the oldest change ending a holding that the stream function failed to record (HistoryLag). */
  readonly pendingSince?: number;
  /** That holding's address and id (holdingId): once its item exists, the change is recorded. */
  readonly pendingAddress?: string;
  readonly pendingHolding?: string;
}

/** Which holdings a listing reads: those that began before `before` (a sort key) and at or after `since` (ISO time). */
export interface HoldingBounds {
  readonly before?: string;
  readonly since?: string;
}

/** A page of one address's (or one owner's) ended holdings, newest first. */
export interface HoldingPage {
  readonly items: readonly Holding[];
  /** Where the next page starts (a holding's sort key); absent at the end. */
  readonly next?: string;
}

/**
 * What the stream function writes (history/recorder.ts; mirror/projections.ts puts the mark): ended holdings, with the
 * repairs that explain deletions, the pool's retention, the mark, and a note of a change not recorded yet.
 */
export interface HistoryWriter {
  /**
   * Writes an ended holding unless the item (its key is the lease's version) already has an end no later: a
   * redelivered change leaves it as it was.
   */
  putHolding(holding: Holding, expiresAtSeconds: number): Promise<void>;
  /**
   * Release repairs of a pool recorded in [fromMs, toMs]: those about the given claims, read consistently (the stream
   * function's question, one small read a claim), or with no claims given, all of them as the pool's listing has them
   * (eventually consistent: the reconciler's gap check, which reads only spans older than the index's lag).
   */
  repairEvents(
    pool: string,
    span: { readonly fromMs: number; readonly toMs: number; readonly claimUids?: readonly string[] },
  ): Promise<readonly RepairEventRef[]>;
  /** The pool's history retention in days; 0 (keep none) for a pool that is absent or being deleted. */
  historyDays(pool: string): Promise<number | undefined>;
  /** Moves the pool's mark item forward (never back): for a batch that wrote no summary chunk of the pool. */
  advanceMark(pool: string, throughMs: number): Promise<void>;
  /** Notes a change not recorded yet (the holding it ends), unless an older one is noted. */
  notePending(pool: string, sinceMs: number, address: string, holding: string): Promise<void>;
}

/** What the history's answers read (use-cases/history.ts): the mark, then the holdings it vouches for. */
export interface HistoryReader {
  /**
   * The pool's mark: its mark item with `through` raised to the newest mark on the summary chunks of `near` (the
   * addresses a read is about). Read it before the holdings it vouches for.
   */
  mark(pool: string, near?: readonly string[]): Promise<HistoryMark | undefined>;
  /**
   * An address's ended holdings that began before `before` (a sort key; undefined: all) and not before `since` (an ISO
   * time: the pool's createdAt, so a pool made again under a name never reads an earlier pool's), newest first.
   */
  addressHoldings(pool: string, address: string, limit: number, bounds?: HoldingBounds): Promise<HoldingPage>;
  /** The oldest ended holding of an address after the one of this sort key (the one that cut its end). */
  addressHoldingAfter(pool: string, address: string, after: string): Promise<Holding | undefined>;
  /** An owner's ended holdings, newest first (eventually consistent: an index), within `bounds` as addressHoldings. */
  ownerHoldings(pool: string, ownerUid: string, limit: number, bounds?: HoldingBounds): Promise<HoldingPage>;
}

/**
 * What the reconciler's history check uses (reconciler/history.ts): every pool's mark for the lag, the pending note
 * it clears, and the gap check's repairs, holdings and position.
 */
export interface HistoryAuditor extends Pick<HistoryWriter, 'repairEvents'>, Pick<HistoryReader, 'addressHoldings'> {
  /** Every pool's mark item (the reconciler's lag and gap check), without the chunks' marks. */
  marks(): Promise<ReadonlyMap<string, HistoryMark>>;
  /** Removes the pending note if it is still the one read (its holding is recorded, or it was reported lost). */
  clearPending(pool: string, sinceMs: number): Promise<void>;
  /** Moves the pool's gap-check position forward (never back), making the pool's mark item if it has none. */
  advanceGapCheck(pool: string, throughMs: number): Promise<void>;
  /** Whether the ended holding of this id (holdingId) is recorded. */
  hasHolding(pool: string, address: string, holding: string): Promise<boolean>;
}

/** The history's storage, all three roles: ended holdings, the repairs that explain deletions, the completeness mark. */
export interface HistoryStore extends HistoryWriter, HistoryReader, HistoryAuditor {}

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
