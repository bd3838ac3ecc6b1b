import { describe, expect, it } from 'vitest';
import { usedUpCases } from '../cases/used-up.cases.ts';
import { rangeFullCostCases } from '../cases/rangefull-cost.cases.ts';
import { BandReading, countersOf, sealHolds, type Band } from '../../shared/core/used-up/rule.ts';
import { parseCidr } from '../../shared/core/ip/cidr.ts';
import type { RangeSeals, UsedUpSeal } from '../../shared/core/used-up/ports.ts';
import { memoryEngine } from '../support/engines.ts';

// On the memory engine: the same cases tests/int/used-up.int.test.ts runs on DynamoDB Local.
usedUpCases(memoryEngine);
rangeFullCostCases(memoryEngine);

describe('Function: sealHolds (issue 20)', () => {
  const range = {
    range: {
      pool: 'p',
      name: 'b',
      cidr: '10.0.0.0/27',
      family: 'IPv4',
      state: 'Ready',
      legacy: false,
      createdAt: '2035-01-01T00:00:00.000Z',
    },
    cidr: parseCidr('10.0.0.0/27'),
  } as const;
  // Band .17-.30 of range b, which range a (10.0.0.0/26) overlaps: a lease taken through a is freed on a's counter.
  const band: Band = { name: 'upper', part: 'upper', range, counters: ['b', 'a'], from: 16n, to: 30n, excluded: [] };
  const read = (a: number[], b: number[], seal?: UsedUpSeal): Map<string, RangeSeals> =>
    new Map<string, RangeSeals>([
      ['a', { freed: a, seals: {} }],
      ['b', { freed: b, seals: seal ? { upper: seal } : {} }],
    ]);
  const sealed = new BandReading().sealAt(countersOf(read([1, 0, 0, 2], [0, 3, 0, 0]), band), band);

  it('holds while no counter of the band moved, for an owner it does not list, before its first expiry', () => {
    expect(sealHolds(read([1, 0, 0, 2], [0, 3, 0, 0], sealed), band, 'x', 0)).toBe(true);
  });

  it("stops holding when an overlapping range's counter moved (an address of the band freed through that range)", () => {
    expect(sealHolds(read([1, 0, 1, 2], [0, 3, 0, 0], sealed), band, 'x', 0)).toBe(false);
  });

  it('stops holding for a band of another shape (an exclusion now cuts it) and past a lease it read expiring', () => {
    const reading = new BandReading();
    reading.taken({ expiring: true, expiresAt: 1_000 }, band.counters);
    const expiring = reading.sealAt(countersOf(read([1, 0, 0, 2], [0, 3, 0, 0]), band), band);
    expect(
      sealHolds(
        read([1, 0, 0, 2], [0, 3, 0, 0], sealed),
        { ...band, excluded: [[range.cidr.base + 20n, range.cidr.base + 20n]] },
        'x',
        0,
      ),
    ).toBe(false);
    expect([999, 1_000].map((t) => sealHolds(read([1, 0, 0, 2], [0, 3, 0, 0], expiring), band, 'x', t))).toEqual([
      true,
      false,
    ]);
  });
});
