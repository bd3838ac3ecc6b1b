import type { Clock } from '../ports.ts';
import { DEFAULT_HISTORY_DAYS } from '../model.ts';
import type { LeaseChange } from '../base/lease-change.ts';
import { EventReason } from '../events.ts';
import { endedHolding, endedHoldingId, type Holding, type RepairRecord } from './holding.ts';
import { EndReason } from '../events.ts';
import type { HistoryWriter, RepairEventRef } from './ports.ts';

/** The holding end a release repair stands for. */
export function endReasonOfRepair(reason: EventReason): EndReason | undefined {
  switch (reason) {
    case EventReason.ClaimExpired:
      return EndReason.Expired;
    case EventReason.OwnerReleased:
      return EndReason.OwnerGone;
    case EventReason.LeaseOrphaned:
      return EndReason.Repaired;
    case EventReason.PoolDeleted:
      return EndReason.PoolDeleted;
    case EventReason.RangeRetired:
      return EndReason.RangeTerminated;
    case EventReason.ClaimReleased:
      return EndReason.Released;
    default:
      return undefined;
  }
}

/** How far before a deletion's record its repair's event may be stamped (a reconciler run decides, then writes). */
export const REPAIR_LOOKBACK_MS = 15 * 60_000;
/** How far after the stream function read it (clocks differ a little). */
export const REPAIR_LOOKAHEAD_MS = 5_000;
export interface HistoryRecorderDeps {
  readonly store: Omit<HistoryWriter, 'advanceMark'>;
  readonly clock: Clock;
}

export interface HistoryResult {
  /** Ids of the changes whose holding could not be written (the stream delivers them again). */
  readonly failed: readonly string[];
  readonly written: number;
  readonly errors: readonly unknown[];
  /**
   * Pool -> how far its history is complete after this batch (epoch ms, exclusive: every change stamped before it is
   * recorded), for each pool whose every change of the batch was recorded. Nothing is written here: the mark rides on
   * the summary chunk the same batch writes (LeaseProjections), so it costs no write of its own.
   */
  readonly marks: ReadonlyMap<string, number>;
}

/**
 * The address history's upkeep, from the stream: one write per ended holding (the lease change that ended it carries
 * the whole holding in its old image), none for a holding that begins or is renewed (the lease item is the open
 * holding; the reads join it in). Keys come from the lease's own version, so a redelivered or replayed change writes
 * the same item again and the history never shows a holding twice; an end known only as a bound is written only
 * where it is earlier than the one stored, so a later redelivery (a later bound) leaves the item as it was.
 *
 * A deletion does not say why it happened; the recorder reads the repair events of the claim it ended, of the minutes
 * before it (a repair writes its event in the release's own transaction, kept under the claim's uid), and otherwise
 * calls it a client's release.
 */
export class HistoryRecorder {
  private readonly retention = new Map<string, { days: number | undefined; readAt: number }>();

  constructor(private readonly deps: HistoryRecorderDeps) {}

  async apply(changes: readonly LeaseChange[]): Promise<HistoryResult> {
    const byPool = new Map<string, LeaseChange[]>();
    for (const change of changes) {
      if (!change.transition) continue;
      const list = byPool.get(change.pool) ?? [];
      list.push(change);
      byPool.set(change.pool, list);
    }
    const failed: string[] = [];
    const errors: unknown[] = [];
    const marks = new Map<string, number>();
    let written = 0;
    await Promise.all(
      [...byPool].map(async ([pool, list]) => {
        // This pool's failures apart: the pools run side by side, so the shared list interleaves them.
        const mine: string[] = [];
        try {
          written += await this.applyPool(pool, list, mine, errors);
        } catch (error) {
          errors.push(error);
          mine.splice(0, mine.length, ...list.map((c) => c.id));
        }
        failed.push(...mine);
        if (mine.length === 0) marks.set(pool, Math.max(...list.map((c) => c.transition!.atMs)));
        else
          await this.notePending(
            pool,
            list.filter((c) => mine.includes(c.id)),
          );
      }),
    );
    return { failed, written, errors, marks };
  }

  /**
   * Notes on the pool's mark item the oldest failed change that ends a holding, so the reconciler's HistoryLag tells a
   * history held back by failing writes from an idle one (and sees when that holding is recorded after all). A write
   * only on this failure path; when it fails too, the change's redelivery tries again.
   */
  private async notePending(pool: string, changes: readonly LeaseChange[]): Promise<void> {
    const ending = changes.flatMap((c) => {
      const id = endedHoldingId(c.transition!);
      return id === undefined ? [] : [{ change: c, id }];
    });
    if (ending.length === 0) return;
    const oldest = ending.reduce((a, b) => (b.change.transition!.atMs < a.change.transition!.atMs ? b : a));
    try {
      await this.deps.store.notePending(pool, oldest.change.transition!.atMs, oldest.change.address, oldest.id);
    } catch {
      // Best effort: the lag metric is advice; the change itself goes back to the stream.
    }
  }

  private async applyPool(
    pool: string,
    changes: readonly LeaseChange[],
    failed: string[],
    errors: unknown[],
  ): Promise<number> {
    const days = await this.historyDays(pool);
    const seenMs = this.deps.clock.nowMs();
    let repairs: readonly RepairEventRef[] | undefined;
    const deletions = changes.filter((c) => c.transition!.before && !c.transition!.after && !c.transition!.byTtl);
    if (deletions.length > 0 && days !== 0) {
      const times = deletions.map((c) => c.transition!.atMs);
      const claimUids = deletions.map((c) => c.transition!.before!.claimUid).filter((uid) => uid !== '');
      repairs = await this.deps.store.repairEvents(pool, {
        fromMs: Math.min(...times) - REPAIR_LOOKBACK_MS,
        toMs: seenMs + REPAIR_LOOKAHEAD_MS,
        claimUids,
      });
    }
    const lookup = (before: { claimUid: string }): RepairRecord | undefined => {
      const found = repairs
        ?.filter((r) => r.claimUid === before.claimUid && r.claimUid !== '')
        .sort((a, b) => b.atMs - a.atMs)[0];
      const reason = found && endReasonOfRepair(found.reason);
      return found && reason
        ? { reason, atMs: found.atMs, ...(found.principal ? { by: { arn: found.principal } } : {}) }
        : undefined;
    };
    const ended: { change: LeaseChange; holding: Holding }[] = [];
    for (const change of changes) {
      const holding = endedHolding(change.transition!, seenMs, lookup);
      if (holding) ended.push({ change, holding });
    }
    let written = 0;
    if (days !== 0) {
      const keepMs = (days ?? DEFAULT_HISTORY_DAYS) * 86_400_000;
      await Promise.all(
        ended.map(async ({ change, holding }) => {
          try {
            await this.deps.store.putHolding(holding, Math.ceil((Date.parse(holding.to!) + keepMs) / 1000));
            written += 1;
          } catch (error) {
            errors.push(error);
            failed.push(change.id);
          }
        }),
      );
    }
    return written;
  }

  /** The pool's retention, read at most once a minute per container (a pool's setting is fixed at creation). */
  private async historyDays(pool: string): Promise<number | undefined> {
    const nowMs = this.deps.clock.nowMs();
    const cached = this.retention.get(pool);
    if (cached && nowMs - cached.readAt < 60_000) return cached.days;
    const days = await this.deps.store.historyDays(pool);
    this.retention.set(pool, { days, readAt: nowMs });
    return days;
  }
}
