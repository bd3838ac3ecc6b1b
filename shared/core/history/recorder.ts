import type { Clock } from '../ports.ts';
import { DEFAULT_HISTORY_DAYS } from '../model.ts';
import type { LeaseChange } from '../mirror/lease-change.ts';
import { EventReason } from '../reconciler/ports.ts';
import { EndReason, endedHolding, type Holding, type RepairRecord } from './holding.ts';
import type { HistoryStore, RepairEventRef } from './ports.ts';

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
/** Least time between two writes of a pool's mark by one container: the mark costs a write per pool per interval. */
export const MARK_INTERVAL_MS = 10_000;

export interface HistoryRecorderDeps {
  readonly store: HistoryStore;
  readonly clock: Clock;
  readonly markIntervalMs?: number;
}

export interface HistoryResult {
  /** Ids of the changes whose holding could not be written (the stream delivers them again). */
  readonly failed: readonly string[];
  readonly written: number;
  readonly errors: readonly unknown[];
}

/**
 * The address history's upkeep, from the stream: one write per ended holding (the lease change that ended it carries
 * the whole holding in its old image), none for a holding that begins or is renewed (the lease item is the open
 * holding; the reads join it in). Keys come from the lease's own version, so a redelivered or replayed change writes
 * the same item again and the history never shows a holding twice; an end known only as a bound is written only
 * where it is earlier than the one stored, so a later redelivery (a later bound) leaves the item as it was.
 *
 * A deletion does not say why it happened; the recorder reads the pool's repair events of the minutes before it
 * (a repair writes its event in the release's own transaction) and otherwise calls it a client's release.
 */
export class HistoryRecorder {
  private readonly markedAt = new Map<string, number>();
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
    let written = 0;
    await Promise.all(
      [...byPool].map(async ([pool, list]) => {
        try {
          written += await this.applyPool(pool, list, failed, errors);
        } catch (error) {
          errors.push(error);
          failed.push(...list.map((c) => c.id));
        }
      }),
    );
    return { failed, written, errors };
  }

  private async applyPool(pool: string, changes: readonly LeaseChange[], failed: string[], errors: unknown[]): Promise<number> {
    const days = await this.historyDays(pool);
    const seenMs = this.deps.clock.nowMs();
    let repairs: readonly RepairEventRef[] | undefined;
    const deletions = changes.filter((c) => c.transition!.before && !c.transition!.after && !c.transition!.byTtl);
    if (deletions.length > 0 && days !== 0) {
      const times = deletions.map((c) => c.transition!.atMs);
      repairs = await this.deps.store.repairEvents(pool, Math.min(...times) - REPAIR_LOOKBACK_MS, seenMs + REPAIR_LOOKAHEAD_MS);
    }
    const lookup = (before: { claimUid: string }): RepairRecord | undefined => {
      const found = repairs?.filter((r) => r.claimUid === before.claimUid && r.claimUid !== '').sort((a, b) => b.atMs - a.atMs)[0];
      const reason = found && endReasonOfRepair(found.reason);
      return found && reason ? { reason, atMs: found.atMs, ...(found.principal ? { by: { arn: found.principal } } : {}) } : undefined;
    };
    const ended: { change: LeaseChange; holding: Holding }[] = [];
    for (const change of changes) {
      const holding = endedHolding(change.transition!, seenMs, lookup);
      if (holding) ended.push({ change, holding });
    }
    let written = 0;
    let poolFailed = false;
    if (days !== 0) {
      const keepMs = (days ?? DEFAULT_HISTORY_DAYS) * 86_400_000;
      await Promise.all(
        ended.map(async ({ change, holding }) => {
          try {
            await this.deps.store.putHolding(holding, Math.ceil((Date.parse(holding.to!) + keepMs) / 1000));
            written += 1;
          } catch (error) {
            poolFailed = true;
            errors.push(error);
            failed.push(change.id);
          }
        }),
      );
    }
    if (!poolFailed) await this.mark(pool, changes);
    return written;
  }

  /** Moves the pool's mark to the newest record of the batch, at most once per interval per container. */
  private async mark(pool: string, changes: readonly LeaseChange[]): Promise<void> {
    const nowMs = this.deps.clock.nowMs();
    const last = this.markedAt.get(pool);
    if (last !== undefined && nowMs - last < (this.deps.markIntervalMs ?? MARK_INTERVAL_MS)) return;
    const times = changes.map((c) => c.transition!.atMs);
    const through = Math.max(...times);
    try {
      await this.deps.store.advanceMark(pool, { through, lagMs: Math.max(0, nowMs - Math.min(...times)), writtenAt: nowMs });
      this.markedAt.set(pool, nowMs);
    } catch {
      // The mark only says how complete the history is: a later batch moves it.
    }
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
