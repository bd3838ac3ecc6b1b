import { describe, expect, it } from 'vitest';
import { Bitmap } from '../../shared/core/bitmap/bitmap.ts';
import { LeaseItemPresence, type LeaseChange } from '../../shared/core/base/lease-change.ts';
import { applyBits, planMirror, settle } from '../../shared/core/mirror/plan.ts';
import type { PoolView, Range } from '../../shared/core/model.ts';

const range = (name: string, cidr: string, legacy: boolean): Range => ({
  pool: 'p',
  name,
  cidr,
  family: cidr.includes(':') ? 'IPv6' : 'IPv4',
  state: 'Ready',
  legacy,
  createdAt: '2026-01-01T00:00:00.000Z',
});

/** A dual-stack pool: legacy 10.0.0.0/24 and fd00::/108, plus a non-legacy 10.1.0.0/24. */
const view: PoolView = {
  pool: { name: 'p', exclude: [], createdAt: '2026-01-01T00:00:00.000Z' },
  ranges: [range('v4', '10.0.0.0/24', true), range('v6', 'fd00::/108', true), range('extra', '10.1.0.0/24', false)],
};
const viewOf = (pool: string) => (pool === 'p' ? view : undefined);

let seq = 0;
const held = (address: string, pool = 'p'): LeaseChange => ({
  id: String((seq += 1)),
  pool,
  address,
  state: LeaseItemPresence.Held,
});
const gone = (address: string, pool = 'p'): LeaseChange => ({
  id: String((seq += 1)),
  pool,
  address,
  state: LeaseItemPresence.Gone,
});

/** The plan's bits as {bit: held} for compact assertions. */
const bitsOf = (bits: ReadonlyMap<number, { held: boolean }>) =>
  Object.fromEntries([...bits].map(([bit, { held: h }]) => [bit, h]));

describe('Function: planMirror', () => {
  it('coalesces a batch into one plan per legacy bitmap, the last change of an address winning', () => {
    // Prepare
    const changes = [
      held('10.0.0.1'),
      held('10.0.0.2'),
      gone('10.0.0.1'),
      held('10.0.0.10'),
      gone('10.0.0.2'),
      held('10.0.0.2'),
    ];
    // Act
    const plans = planMirror(changes, viewOf);
    // Assess
    expect(plans).toHaveLength(1);
    expect(plans[0]!.range.range.name).toBe('v4');
    expect(bitsOf(plans[0]!.bits)).toEqual({ 0: false, 1: true, 9: true });
    expect(plans[0]!.ids).toEqual(changes.map((c) => c.id));
  });

  it('gives each family of a dual-stack pool its own legacy bitmap', () => {
    // Act
    const plans = planMirror([held('10.0.0.5'), held('fd00::5'), gone('fd00::ffff')], viewOf);
    // Assess
    expect(plans.map((p) => [p.range.range.name, bitsOf(p.bits)])).toEqual([
      ['v4', { 4: true }],
      ['v6', { 4: true, 65534: false }],
    ]);
  });

  it('ignores addresses no bitmap covers: non-legacy ranges, beyond the IPv6 window, reserved, unknown pools, bad text', () => {
    // Act
    const plans = planMirror(
      [
        held('10.1.0.5'),
        held('fd00::1:0'),
        held('10.0.0.0'),
        held('10.0.0.255'),
        held('10.0.0.7', 'other'),
        held('not-an-ip'),
      ],
      viewOf,
    );
    // Assess
    expect(plans).toEqual([]);
  });

  it('plans the same bits for a batch delivered twice in a row (a redelivery)', () => {
    // Prepare
    const batch = [held('10.0.0.1'), gone('10.0.0.3'), held('10.0.0.4')];
    // Act
    const once = planMirror(batch, viewOf);
    const twice = planMirror([...batch, ...batch], viewOf);
    // Assess
    expect(bitsOf(twice[0]!.bits)).toEqual(bitsOf(once[0]!.bits));
  });
});

describe('Function: settle', () => {
  it('takes the lease item as it is now over the order records came in (a reordered batch)', () => {
    // Prepare: the batch says .1 was removed last, but a lease for .1 exists now; it says .2 is held, but it is gone.
    const [plan] = planMirror([held('10.0.0.1'), gone('10.0.0.1'), held('10.0.0.2')], viewOf);
    // Act
    const bits = settle(plan!, new Map([['10.0.0.1', 'uid-1']]));
    // Assess
    expect(bitsOf(bits)).toEqual({ 0: true, 1: false });
  });
});

describe('Function: applyBits', () => {
  it('treats setting a set bit and clearing a clear bit as no change', () => {
    // Prepare
    const bitmap = Bitmap.empty(254);
    bitmap.set(0);
    // Act
    const changed = applyBits(
      bitmap,
      new Map([
        [0, { address: '10.0.0.1', held: true }],
        [1, { address: '10.0.0.2', held: false }],
      ]),
    );
    // Assess
    expect(changed).toBe(false);
    expect([...bitmap.setBits()]).toEqual([0]);
  });

  it('reports a change when a bit flips', () => {
    // Prepare
    const bitmap = Bitmap.empty(254);
    // Act
    const changed = applyBits(bitmap, new Map([[7, { address: '10.0.0.8', held: true }]]));
    // Assess
    expect(changed).toBe(true);
    expect([...bitmap.setBits()]).toEqual([7]);
  });
});
