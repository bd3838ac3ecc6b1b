import { NotReadyError } from '../errors.ts';
import type { PoolView } from '../model.ts';
import type { LeaseIndex, PoolStore } from '../ports.ts';
import type { AllocationGates } from '../ports.ts';
import { bitmapOf, bitmapOfDocument, bitmapsMaintained, windowInterval } from '../bitmap/legacy.ts';
import type { BitmapStore } from '../bitmap/ports.ts';
import type { LeaseChange } from '../base/lease-change.ts';
import { applyBits, planMirror, settle, type RangePlan } from './plan.ts';

export interface LegacyMirrorDeps {
  readonly pools: Pick<PoolStore, 'getPoolView'>;
  readonly leases: Pick<LeaseIndex, 'takenAddresses'>;
  readonly bitmaps: Pick<BitmapStore, 'getBitmap' | 'putBitmap' | 'leaseHolders'>;
  readonly gates: AllocationGates;
  /** Read-modify-write rounds per bitmap before its changes are reported failed. Default 8. */
  readonly maxAttempts?: number;
}

/** How one bitmap fared in a batch. */
export interface RangeOutcome {
  readonly pool: string;
  readonly range: string;
  /** created: the bitmap item did not exist (or named another CIDR) and was built from the range's leases. */
  readonly outcome: 'created' | 'written' | 'unchanged' | 'failed';
  readonly changes: number;
  readonly error?: unknown;
}

export interface MirrorResult {
  /** Ids of the changes to report as batch item failures: every change of each bitmap whose write failed. */
  readonly failed: readonly string[];
  readonly ranges: readonly RangeOutcome[];
  /** False when dual-write is off and the batch was acknowledged untouched. */
  readonly active: boolean;
}

/**
 * Keeps every legacy bitmap equal to the lease items of its window, from the table's stream. Per batch and per
 * legacy bitmap it makes at most ONE conditional write, and it never vetoes anything: an allocation never waits for
 * it, and drift it cannot fix (a write that keeps failing) goes back to the stream as batch item failures, and
 * beyond that to the reconciler.
 *
 * One bitmap's round, and why its order matters:
 *
 *   1. read the bitmap (consistently)                  version v, or absent -> build it from the range's leases
 *   2. read the lease items of the batch's addresses   consistently, AFTER 1
 *   3. bit := lease item exists, for those addresses   (settle: the record order no longer matters)
 *   4. put the bitmap IF version = v (or absent)       lost the race -> back to 1
 *
 * A legacy-mode allocation writes its lease and its bit in one transaction that bumps the version: if it lands
 * between 1 and 4 the put fails and the round starts over; if it landed before 1, step 2 sees its lease. A
 * lease-mode write between 2 and 4 does not touch the bitmap, but its own record comes later in the stream and
 * will run its own round. So after the stream drains, each bit equals its lease item, whatever was redelivered,
 * duplicated or reordered in between.
 */
export class LegacyMirror {
  private readonly maxAttempts: number;

  constructor(private readonly deps: LegacyMirrorDeps) {
    this.maxAttempts = deps.maxAttempts ?? 8;
  }

  /** Whether this container keeps bitmaps at all (see bitmapsMaintained). */
  get active(): boolean {
    return bitmapsMaintained(this.deps.gates);
  }

  async apply(changes: readonly LeaseChange[]): Promise<MirrorResult> {
    if (!this.active || changes.length === 0) return { failed: [], ranges: [], active: this.active };
    const pools = [...new Set(changes.map((c) => c.pool))];
    const views = new Map<string, PoolView | undefined>();
    const failed: string[] = [];
    const ranges: RangeOutcome[] = [];
    await Promise.all(
      pools.map(async (pool) => {
        try {
          views.set(pool, await this.deps.pools.getPoolView(pool));
        } catch (error) {
          // Without the pool's ranges nothing of it can be mirrored: all its changes go back to the stream.
          const ids = changes.filter((c) => c.pool === pool).map((c) => c.id);
          failed.push(...ids);
          ranges.push({ pool, range: '*', outcome: 'failed', changes: ids.length, error });
        }
      }),
    );
    const plans = planMirror(
      changes.filter((c) => views.has(c.pool)),
      (pool) => views.get(pool),
    );
    const outcomes = await Promise.all(
      plans.map(async (plan): Promise<RangeOutcome> => {
        const base = { pool: plan.pool, range: plan.range.range.name, changes: plan.ids.length };
        try {
          return { ...base, outcome: await this.mirrorRange(plan) };
        } catch (error) {
          failed.push(...plan.ids);
          return { ...base, outcome: 'failed', error };
        }
      }),
    );
    return { failed, ranges: [...ranges, ...outcomes], active: true };
  }

  /** One bitmap's read-settle-write rounds. @throws NotReadyError when it keeps losing; store errors as they come */
  private async mirrorRange(plan: RangePlan): Promise<'created' | 'written' | 'unchanged'> {
    const { pool, range } = plan;
    const addresses = [...plan.bits.values()].map((b) => b.address);
    for (let attempt = 0; attempt < this.maxAttempts; attempt += 1) {
      const doc = await this.deps.bitmaps.getBitmap(pool, range.range.name);
      let bitmap = doc ? bitmapOfDocument(doc, range) : undefined;
      const fresh = bitmap === undefined;
      if (!bitmap) {
        // A new environment (or a bitmap of another CIDR): build it from THIS range's leases, expired ones included.
        const window = windowInterval(range.cidr);
        bitmap = bitmapOf(
          range.cidr,
          window ? await this.deps.leases.takenAddresses(pool, range.range.family, [window], 0) : [],
        );
      }
      const holders = await this.deps.bitmaps.leaseHolders(pool, addresses);
      const changed = applyBits(bitmap, settle(plan, holders));
      if (!changed && !fresh) return 'unchanged';
      const written = await this.deps.bitmaps.putBitmap({
        pool,
        rangeName: range.range.name,
        allocation: { range: range.range.cidr, data: bitmap.encode(), version: (doc?.version ?? 0) + 1 },
        expected: doc ? { version: doc.version } : 'absent',
      });
      if (written === 'written') return fresh ? 'created' : 'written';
    }
    throw new NotReadyError(
      `The bitmap of range ${JSON.stringify(range.range.name)} kept changing during ${this.maxAttempts} rounds.`,
    );
  }
}
