import { NotFoundError } from './errors.ts';
import type { PoolView } from './model.ts';
import type { PoolStore } from './ports.ts';

/** How old a cached pool view may be by default, in milliseconds. */
export const DEFAULT_VIEW_MAX_AGE_MS = 1_000;

/**
 * A warm container's short-lived copy of pools and their ranges (up to `maxAgeMs` old). A copy can show a range as
 * Ready after it became Terminating: after committing, the claim use case compares the pool's range generation with
 * the copy's, reads the view again when they differ, and releases a claim whose range is no longer Ready (see
 * createClaim), so a stale copy costs a release and a second allocation, never an address handed out from a
 * Terminating or deleted range. A check that finds the generation unchanged renews the copy (`remember`): every
 * change of a view changes its generation. For the same reason a copy past its age is first checked against the
 * generation (one read of one copy, in one of several partitions) and kept when unchanged; only a changed generation
 * reads the pool's partition again, so an idle container's next request does not add to that one partition's reads.
 */
export class PoolViewCache {
  private readonly entries = new Map<string, { view: PoolView; at: number }>();

  constructor(
    private readonly store: Pick<PoolStore, 'getPoolView' | 'rangeGeneration'>,
    readonly maxAgeMs = DEFAULT_VIEW_MAX_AGE_MS,
  ) {}

  /** The pool's view, read through when stale or when `fresh` is asked for. @throws NotFoundError */
  async get(pool: string, nowMs: number, fresh = false): Promise<PoolView> {
    return (await this.read(pool, nowMs, fresh)).view;
  }

  /**
   * Like `get`, saying whether the view is current as of this call (`readNow`: read from the store, or a copy whose
   * generation this call found unchanged) or came from the cache as it was.
   */
  async read(pool: string, nowMs: number, fresh = false): Promise<{ view: PoolView; readNow: boolean }> {
    const entry = this.entries.get(pool);
    if (!fresh && entry && nowMs - entry.at < this.maxAgeMs) return { view: entry.view, readNow: false };
    if (!fresh && entry && (await this.confirm(pool, entry.view, nowMs))) return { view: entry.view, readNow: true };
    const view = await this.store.getPoolView(pool);
    if (!view) {
      this.entries.delete(pool);
      throw new NotFoundError('pool', pool);
    }
    this.entries.set(pool, { view, at: nowMs });
    return { view, readNow: true };
  }

  /**
   * Whether no range change committed since `view` was read: its generation is still the pool's (one consistent read
   * of one copy). Then the view is as current as this check, and kept as such (every change of a view changes or
   * removes its generation). False for a view read when the pool had no generation.
   */
  async confirm(pool: string, view: PoolView, nowMs: number): Promise<boolean> {
    if (view.generation === undefined || (await this.store.rangeGeneration(pool)) !== view.generation) return false;
    this.remember(pool, view, nowMs);
    return true;
  }

  /** Keeps a view this container has just read from the store some other way (createClaim's read after a changed generation). */
  remember(pool: string, view: PoolView, nowMs: number): void {
    this.entries.set(pool, { view, at: nowMs });
  }

  /** Drops a pool after this container changed it. */
  forget(pool: string): void {
    this.entries.delete(pool);
  }
}
