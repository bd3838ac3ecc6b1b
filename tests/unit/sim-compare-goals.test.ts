import { describe, expect, it } from 'vitest';
import type { CompareRow, Design } from '../../sim/compare.ts';
import { compareGoals, goalsTable } from '../../sim/compare-run.ts';

const row = (design: Design, perSecond: number, firstLimit: string): CompareRow => ({
  design,
  unit: design === 'block-lease' || design === 'parent-document' ? 'block' : 'address',
  fullPercent: 90,
  containers: 1000,
  perSecond,
  p99Ms: 50,
  requestsPerClaim: 5,
  writeUnitsPerClaim: 16,
  readUnitsPerClaim: 3,
  usdPerMillionClaims: 14,
  firstLimit,
  claimOnly: { requests: 3, readUnits: 2, writeUnits: 8 },
  claims: perSecond,
  busy: 0,
  full: 0,
  throttled: 0,
});

describe("the comparison's goals table", () => {
  it('reads each goal off the 90 % full, 1,000-container cells, and lists what is not met first', () => {
    const rows = [
      row('lease', 4000, 'write units of a table partition'),
      row('bitmap-cas', 50, 'read units of a table partition (BITMAP#p)'),
      row('block-lease', 400, 'read units of a table partition'),
      row('parent-document', 100, 'read units of a table partition (PARENT#p)'),
    ];
    const [block, lease] = compareGoals(rows);
    expect(block).toMatchObject({ ratio: 4, met: false });
    expect(lease).toMatchObject({ ratio: 80, met: true });
    const lines = goalsTable(rows).split('\n').slice(2);
    expect(lines[0]).toContain('block claims >= 5x the parent-document design');
    expect(lines[0]).toMatch(/\| \*\*not met\*\* \|$/);
    // Designs whose cell did not run come before what is met, and say so; none says "not yet".
    const notMeasured = lines.findIndex((l) => l.endsWith('| not measured |'));
    const firstMet = lines.findIndex((l) => l.endsWith('| met |'));
    expect(lines[notMeasured]).toContain('the first limit lease-blind meets');
    expect(notMeasured).toBeLessThan(firstMet);
    expect(lines.join('\n')).toContain(
      'the first limit parent-document meets (90 % full, 1,000 containers), named | 100/s: read units of a table partition (PARENT#p) | met |',
    );
    expect(lines.join('\n')).not.toContain('not yet');
  });

  it('leaves a goal unmeasured, not failed, when one of its cells is missing', () => {
    const [block] = compareGoals([row('block-lease', 400, 'x')]);
    expect(block!.met).toBeUndefined();
    expect(block!.figure).toMatch(/^not measured/);
  });
});
