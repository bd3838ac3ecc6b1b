/** The owner mark's window, shared by the claim refusal (use cases) and the reconciler's recheck of gone owners. */
import { OwnerGoneError } from '../errors.ts';
import { type Deps } from './deps.ts';

/**
 * How long after an owner is reported gone each reconciler run looks for its claims again. It must exceed the owner
 * index's lag plus the longest claim request (29 s, the API function's timeout: a create in flight during the report
 * commits within it) plus the reconciler's period (1 minute by default) and a run (60 s); ten minutes leaves room for
 * several failed runs. Owners reported longer ago cost nothing: their tombstones are not read.
 */
export const OWNER_RECHECK_MS = 10 * 60_000;

/**
 * Refuses a claim for an owner uid reported gone less than OWNER_RECHECK_MS ago (one consistent read of the uid's
 * mark). Within that window the reconciler releases every claim of the uid, so such a claim would be answered and then
 * dropped; after it, nothing releases it, and it is accepted. Uids are never reused, so the request is a late or
 * retried one for an owner that is gone, or a caller's bug: either way the truth is a refusal. A create that passed
 * this check while the report ran commits within the window and is released by its recheck.
 * @throws OwnerGoneError
 */
export async function refuseGoneOwner(
  deps: Pick<Deps, 'reconcile' | 'clock'>,
  pool: string,
  ownerUid: string,
): Promise<void> {
  const reportedAt = await deps.reconcile.ownerReportedGoneAt(pool, ownerUid);
  if (reportedAt === undefined || deps.clock.nowMs() >= reportedAt + OWNER_RECHECK_MS) return;
  const iso = (ms: number) => new Date(ms).toISOString();
  throw new OwnerGoneError(ownerUid, iso(reportedAt), iso(reportedAt + OWNER_RECHECK_MS));
}

/**
 * refuseGoneOwner for one create request, read at most once however many rounds the request takes, and only when
 * asked: by a claim about to be committed or previewed, or an existing claim about to be answered. A request refused
 * before that (RangeFull, an explicit address held) never reads the mark (docs/decisions/0008-claims-for-a-gone-owner.md).
 */
export function goneOwnerCheck(
  deps: Pick<Deps, 'reconcile' | 'clock'>,
  pool: string,
  ownerUid: string,
): () => Promise<void> {
  let read: Promise<void> | undefined;
  return () => (read ??= refuseGoneOwner(deps, pool, ownerUid));
}
