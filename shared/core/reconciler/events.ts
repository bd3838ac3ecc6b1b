import type { Page } from '../ports.ts';
import type { EventLog } from '../use-cases/reconcile-ports.ts';
import { type Deps } from '../use-cases/deps.ts';
import { pageLimit } from '../base/time.ts';
import { EVENT_RETENTION_MS, type IpamEvent } from '../events.ts';

/**
 * The pool's events of the last 24 hours, newest first (older items may linger until DynamoDB's TTL deletes them;
 * they are never listed).
 * @throws NotFoundError for an unknown pool; InvalidArgumentError for a bad cursor
 */
export async function listEvents(
  deps: Pick<Deps, 'clock' | 'views'> & { readonly reconcile: Pick<EventLog, 'listEvents'> },
  pool: string,
  limit?: number,
  cursor?: string,
): Promise<Page<IpamEvent>> {
  const nowMs = deps.clock.nowMs();
  const { pool: current } = await deps.views.get(pool, nowMs);
  // From the pool's creation at the earliest: an earlier pool of the same name left events that stay until their TTL.
  const retained = new Date(nowMs - EVENT_RETENTION_MS).toISOString();
  return deps.reconcile.listEvents(
    pool,
    retained > current.createdAt ? retained : current.createdAt,
    pageLimit(limit),
    cursor,
  );
}
