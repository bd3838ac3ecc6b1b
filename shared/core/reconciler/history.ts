import { endReasonOfRepair } from '../history/recorder.ts';
import { afterStart } from '../history/holding.ts';
import type { HistoryMark, RepairEventRef } from '../history/ports.ts';
import { historyDaysOf, type PoolView } from '../model.ts';
import { events } from '../events.ts';
import { EVENT_RETENTION_MS } from '../events.ts';
import { Phase, type Run } from './run.ts';

/**
 * How old a lease change must be before a missing holding proves a gap: the stream's `maximumRecordAgeInSeconds`
 * (6 hours, serverless.yml), after which the event source mapping skips a record it could not deliver, plus 10 minutes.
 * Before that age a missing holding may still be on its way (a retry, a lagging shard).
 */
export const GAP_PROOF_AGE_MS = 6 * 3_600_000 + 10 * 60_000;
/** Least span of events checked at once: a pool's events query and its position write happen at most this often. */
export const GAP_CHECK_SPAN_MS = 10 * 60_000;
/** Most release events checked per pool and run (each costs a query per address); the rest wait for the next run. */
export const GAP_CHECK_EVENTS = 200;

/** What the history phase found: each pool's lag, and the gaps it reported. */
export interface HistoryCheck {
  /**
   * Pool (each that keeps history) -> how long the oldest lease change the stream function failed to record has been
   * waiting (ms): 0 when none is pending, so an idle pool reads 0. The stream's own delay before a batch (changes
   * in flight, no failure) is the stream function's IteratorAge, not counted here.
   */
  readonly lagMs: Readonly<Record<string, number>>;
  /** Release events checked against the history in this run. */
  readonly eventsChecked: number;
}

/**
 * The address history's health, once per run: its lag (from the pending notes on the mark items: one query for every
 * pool, and one read for a pool with a note), and a gap check that proves what it reports. The provable gaps are lease
 * changes that left a record outside the stream: a release repair (ClaimExpired, OwnerReleased, LeaseOrphaned,
 * PoolDeleted, RangeRetired) writes its event, with the released addresses, in the release's own transaction, so once
 * that event is older than the stream's maximum record age, the stream function has either recorded the holding it
 * ended or skipped the change for good. A holding of that claim uid missing then is a gap: reported once as a
 * HistoryGap event, not repaired (the event does not carry the whole holding: its start and owner uid are the
 * lease's). A change the stream function noted as failing (historyLag) is proved the same way, whatever its kind. Not
 * detectable here: a client's release or a takeover of an expired lease that the stream function skipped without
 * noting it (its note write failed too, or a newer note was refused beside an older one), and events older than 24
 * hours (their retention) or written before events carried their addresses.
 */
export async function checkHistory(run: Run, views: readonly PoolView[]): Promise<HistoryCheck> {
  const read = await run.read('read history marks', () => run.deps.history.marks());
  if (!read.ok) return { lagMs: {}, eventsChecked: 0 };
  const keeping = views.filter((v) => historyDaysOf(v.pool) > 0).map((v) => v.pool.name);
  const lags = new Map<string, number>();
  let eventsChecked = 0;
  await run.each(Phase.History, keeping, async (pool) => {
    const mark = read.value.get(pool);
    lags.set(pool, await historyLag(run, pool, mark));
    eventsChecked += await checkPool(run, pool, mark);
    return true;
  });
  // In the pools' order, whichever finished first.
  return { lagMs: Object.fromEntries(keeping.filter((p) => lags.has(p)).map((p) => [p, lags.get(p)!])), eventsChecked };
}

/**
 * The pool's lag: 0 without a pending note; otherwise the noted change's age while its holding is still missing. A
 * note whose holding is recorded is cleared (0); one older than the stream's maximum record age plus 10 minutes can no
 * longer be recorded (the stream skipped it): it is reported once as a HistoryGap and cleared.
 */
async function historyLag(run: Run, pool: string, mark: HistoryMark | undefined): Promise<number> {
  const since = mark?.pendingSince;
  const address = mark?.pendingAddress;
  const holding = mark?.pendingHolding;
  if (since === undefined || address === undefined || holding === undefined) return 0;
  const found = await run.read(`pending holding of ${pool}/${address}`, () =>
    run.deps.history.hasHolding(pool, address, holding),
  );
  if (!found.ok) return Math.max(0, run.now() - since);
  const lost = !found.value && run.now() - since > GAP_PROOF_AGE_MS;
  if (lost) {
    const gap = events.historyGapOfChange({ pool, address, holding, atMs: since }, run.iso());
    const reported = await run.repair(
      `report history gap of ${pool}/${address}`,
      async () => (
        run.done(gap, await run.deps.reconcile.reportOnce(gap, `histgap/${address}/${holding}`, run.now())),
        true
      ),
    );
    if (!reported) return Math.max(0, run.now() - since);
  }
  if (found.value || lost) {
    await run.repair(
      `history pending note of ${pool}`,
      async () => (await run.deps.history.clearPending(pool, since), true),
    );
    return 0;
  }
  return Math.max(0, run.now() - since);
}

/** Checks the pool's release events of the next span that has become provable; returns how many it checked. */
async function checkPool(run: Run, pool: string, mark: HistoryMark | undefined): Promise<number> {
  const nowMs = run.now();
  const to = nowMs - GAP_PROOF_AGE_MS;
  // Events older than their retention are gone (and may be half deleted): start inside it.
  const from = Math.max(mark?.gapCheckedThrough ?? 0, nowMs - EVENT_RETENTION_MS + GAP_CHECK_SPAN_MS);
  if (to - from < GAP_CHECK_SPAN_MS) return 0;
  const listed = await run.read(`history gap check of ${pool}`, () =>
    run.deps.history.repairEvents(pool, { fromMs: from, toMs: to }),
  );
  if (!listed.ok) return 0;
  const releases = listed.value
    .filter((e) => e.claimUid !== '' && endReasonOfRepair(e.reason) !== undefined && e.addresses?.length)
    .sort((a, b) => a.atMs - b.atMs);
  const checked = releases.slice(0, GAP_CHECK_EVENTS);
  // The position moves only past what was checked: a capped run leaves the rest to the next one.
  const through = releases.length > GAP_CHECK_EVENTS ? checked[checked.length - 1]!.atMs : to;
  const all = await run.each(Phase.History, checked, (event) => checkEvent(run, pool, event));
  if (all)
    await run.repair(
      `history gap position of ${pool}`,
      async () => (await run.deps.history.advanceGapCheck(pool, through), true),
    );
  return checked.length;
}

/** Reports each address of a release event whose holding of that claim uid is missing; false when a read failed. */
async function checkEvent(run: Run, pool: string, event: RepairEventRef): Promise<boolean> {
  let ok = true;
  for (const address of event.addresses ?? []) {
    const page = await run.read(`history of ${pool}/${address}`, () =>
      run.deps.history.addressHoldings(pool, address, 5, { before: afterStart(event.atMs) }),
    );
    if (!page.ok) {
      ok = false;
      continue;
    }
    if (page.value.items.some((h) => h.claimUid === event.claimUid)) continue;
    const gap = events.historyGap(pool, address, event, run.iso());
    ok =
      (await run.repair(
        `report history gap of ${pool}/${address}`,
        async () => (
          run.done(gap, await run.deps.reconcile.reportOnce(gap, `histgap/${address}/${event.claimUid}`, run.now())),
          true
        ),
      )) && ok;
  }
  return ok;
}
