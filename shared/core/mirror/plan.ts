import { parseAddress } from '../ip/address.ts';
import type { Bitmap } from '../bitmap/bitmap.ts';
import { legacyBitOf } from '../bitmap/legacy.ts';
import type { ParsedRange } from '../base/pool-geometry.ts';
import type { PoolView } from '../model.ts';
import { LeaseItemPresence, type LeaseChange } from '../base/lease-change.ts';

/** The wanted state of one bit: its address, and whether its lease is held. */
export interface BitChange {
  readonly address: string;
  readonly held: boolean;
}

/** What one batch asks of one legacy bitmap: at most one write. */
export interface RangePlan {
  readonly pool: string;
  readonly range: ParsedRange;
  /** Bit -> the state of the LAST change of its address in the batch (coalesced: one entry per address). */
  readonly bits: ReadonlyMap<number, BitChange>;
  /** Every change of the batch that maps to this bitmap: reported as failed, all of them, when its write fails. */
  readonly ids: readonly string[];
}

/**
 * Coalesces a batch into one plan per legacy bitmap. A change maps to the legacy range of its family whose bitmap
 * window holds its address (the bitmap says which of the range's addresses are taken, whichever range a lease was
 * taken through); changes of pools without a view, of addresses no bitmap covers, and malformed addresses are
 * dropped, and so acknowledged. Within an address the later change wins, as records of one key arrive in order.
 *
 *   batch:  INSERT a  INSERT b  REMOVE a  MODIFY b  INSERT c(no bitmap)
 *   plan:   a -> clear, b -> set                    (c ignored; ids of a, a, b, b reported together)
 */
export function planMirror(
  changes: readonly LeaseChange[],
  viewOf: (pool: string) => PoolView | undefined,
): RangePlan[] {
  const plans = new Map<string, { pool: string; range: ParsedRange; bits: Map<number, BitChange>; ids: string[] }>();
  for (const change of changes) {
    const view = viewOf(change.pool);
    if (!view) continue;
    let found;
    try {
      found = legacyBitOf(view, parseAddress(change.address));
    } catch {
      continue;
    }
    if (!found) continue;
    const key = `${change.pool}\u0000${found.range.range.name}`;
    let plan = plans.get(key);
    if (!plan) {
      plan = { pool: change.pool, range: found.range, bits: new Map(), ids: [] };
      plans.set(key, plan);
    }
    plan.bits.set(found.bit, { address: change.address, held: change.state === LeaseItemPresence.Held });
    plan.ids.push(change.id);
  }
  return [...plans.values()];
}

/**
 * Replaces each planned state by the truth read after the bitmap: held when a lease item exists now. This makes a
 * redelivered or out-of-order batch harmless: whatever order its records come in, every bit it touches ends equal to
 * the lease item as it was after the bitmap was read, and a later change of that lease has a later record that will
 * run again. Expired-but-present lease items count as held (their claim may still renew them; their deletion clears
 * the bit).
 */
export function settle(
  plan: RangePlan,
  held: ReadonlySet<string> | ReadonlyMap<string, unknown>,
): Map<number, BitChange> {
  const out = new Map<number, BitChange>();
  for (const [bit, change] of plan.bits) out.set(bit, { address: change.address, held: held.has(change.address) });
  return out;
}

/** Applies wanted bit states to a bitmap in place; true when any bit changed (setting a set bit is a no-op). */
export function applyBits(bitmap: Bitmap, bits: ReadonlyMap<number, BitChange>): boolean {
  let changed = false;
  for (const [bit, { held }] of bits) changed = (held ? bitmap.set(bit) : bitmap.clear(bit)) || changed;
  return changed;
}
