import { NotReadyError } from '../errors.ts';
import { parseAddress, type IpFamily } from '../ip/address.ts';
import type { LeaseChange } from '../base/lease-change.ts';
import type { Clock } from '../ports.ts';
import { bitOf, chunkIndexOf, emptyChunk, type OccupancyChunk } from './chunk.ts';
import type { OccupancyStore } from './ports.ts';

export interface SummaryMirrorDeps {
  readonly store: Pick<OccupancyStore, 'getChunk' | 'putChunk' | 'leaseStates'>;
  readonly clock: Clock;
  /** Read-settle-write rounds per chunk before its changes are reported failed. Default 8. */
  readonly maxAttempts?: number;
}

/** How one chunk fared in a batch. */
export interface ChunkOutcome {
  readonly pool: string;
  readonly family: IpFamily;
  readonly index: bigint;
  readonly outcome: 'written' | 'unchanged' | 'failed';
  readonly changes: number;
  readonly error?: unknown;
  /** The history mark on the chunk as this round left it (read, or written), when it has one. */
  readonly historyThrough?: number;
}

export interface SummaryResult {
  /** Ids of the changes of every chunk whose write failed (the stream delivers them again). */
  readonly failed: readonly string[];
  readonly chunks: readonly ChunkOutcome[];
}

/** Which chunk: a pool's family's chunk of this index. */
export interface ChunkAt {
  readonly pool: string;
  readonly family: IpFamily;
  readonly index: bigint;
}

interface ChunkPlan extends ChunkAt {
  readonly addresses: Set<string>;
  readonly ids: string[];
}

/**
 * Keeps the occupancy summary equal to the lease items, from the table's stream: per batch at most one conditional
 * write per chunk touched, whatever the batch's size. The same round as the legacy mirror (LegacyMirror), for the
 * same reasons:
 *
 *   1. read the chunk (consistently)                      version v, or absent
 *   2. read the lease items of the batch's addresses      consistently, AFTER 1
 *   3. bit := lease item exists                           (so redelivered, duplicated, reordered records are harmless)
 *   4. put the chunk IF version = v (or absent)           lost the race -> back to 1
 *
 * Only this mirror and the reconciler's repair (which runs the same round) write chunks. A lease change after step 2
 * has a later record of its own, so once the stream drains every bit equals its lease item. It never vetoes an
 * allocation: a chunk that lags costs a collision, never a duplicate (the conditional write judges every allocation).
 */
export class SummaryMirror {
  private readonly maxAttempts: number;

  constructor(private readonly deps: SummaryMirrorDeps) {
    this.maxAttempts = deps.maxAttempts ?? 8;
  }

  /**
   * @param historyMarks the history's marks of this batch (HistoryResult.marks): each chunk of a pool with a mark is
   *   written with it, once the history has recorded the pool's changes (awaited just before the write)
   */
  async apply(
    changes: readonly LeaseChange[],
    historyMarks?: Promise<ReadonlyMap<string, number>>,
  ): Promise<SummaryResult> {
    const plans = new Map<string, ChunkPlan>();
    for (const change of changes) {
      let address;
      try {
        address = parseAddress(change.address);
      } catch {
        continue;
      }
      const index = chunkIndexOf(address.value);
      const key = `${change.pool}\u0000${address.family}\u0000${index}`;
      let plan = plans.get(key);
      if (!plan) {
        plan = { pool: change.pool, family: address.family, index, addresses: new Set(), ids: [] };
        plans.set(key, plan);
      }
      plan.addresses.add(change.address);
      plan.ids.push(change.id);
    }
    const failed: string[] = [];
    const chunks = await Promise.all(
      [...plans.values()].map(async (plan): Promise<ChunkOutcome> => {
        const base = { pool: plan.pool, family: plan.family, index: plan.index, changes: plan.ids.length };
        try {
          const mark = historyMarks?.then((marks) => marks.get(plan.pool));
          const settled = await this.settle(plan, [...plan.addresses], mark);
          return {
            ...base,
            outcome: settled.outcome,
            ...(settled.historyThrough !== undefined ? { historyThrough: settled.historyThrough } : {}),
          };
        } catch (error) {
          failed.push(...plan.ids);
          return { ...base, outcome: 'failed', error };
        }
      }),
    );
    return { failed, chunks };
  }

  /**
   * Makes the bits of these addresses (all in one chunk) equal to their lease items: steps 1-4 above. A written chunk
   * carries `historyThrough` (the newer of its own and the one given); an unchanged one is not written for it.
   * @throws NotReadyError when the chunk keeps changing; store errors as they come
   */
  async settleChunk(
    at: ChunkAt,
    addresses: readonly string[],
    historyThrough?: Promise<number | undefined>,
  ): Promise<'written' | 'unchanged'> {
    return (await this.settle(at, addresses, historyThrough)).outcome;
  }

  private async settle(
    at: ChunkAt,
    addresses: readonly string[],
    historyThrough?: Promise<number | undefined>,
  ): Promise<{ outcome: 'written' | 'unchanged'; historyThrough?: number }> {
    const { pool, family, index } = at;
    for (let attempt = 0; attempt < this.maxAttempts; attempt += 1) {
      const current = await this.deps.store.getChunk(pool, family, index);
      const states = await this.deps.store.leaseStates(pool, addresses);
      const chunk = current ?? emptyChunk(pool, family, index);
      const bits = chunk.bits.clone();
      const expiring = chunk.expiring.clone();
      let changed = false;
      for (const text of addresses) {
        const bit = bitOf(parseAddress(text).value);
        const state = states.get(text);
        changed = (state ? bits.set(bit) : bits.clear(bit)) || changed;
        changed = (state?.expiring ? expiring.set(bit) : expiring.clear(bit)) || changed;
      }
      // An absent chunk is an empty one: nothing to write until a bit is set.
      if (!changed)
        return {
          outcome: 'unchanged',
          ...(chunk.historyThrough !== undefined ? { historyThrough: chunk.historyThrough } : {}),
        };
      const through = await historyThrough;
      const mark =
        through !== undefined && through > (chunk.historyThrough ?? -Infinity) ? { historyThrough: through } : {};
      const next: OccupancyChunk = {
        ...chunk,
        bits,
        expiring,
        version: chunk.version + 1,
        asOf: new Date(this.deps.clock.nowMs()).toISOString(),
        ...mark,
      };
      if ((await this.deps.store.putChunk(next, current ? current.version : 'absent')) === 'written')
        return {
          outcome: 'written',
          ...(next.historyThrough !== undefined ? { historyThrough: next.historyThrough } : {}),
        };
    }
    throw new NotReadyError(
      `A chunk of pool ${JSON.stringify(pool)}'s summary kept changing during ${this.maxAttempts} rounds.`,
    );
  }
}
