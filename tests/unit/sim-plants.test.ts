import { describe, expect, it } from 'vitest';
import { PLANT_NAMES, PLANTS } from '../../sim/plants.ts';
import { simulate, simulateOutcome } from '../../sim/run.ts';
import { SCENARIO_NAMES } from '../../sim/scenarios.ts';

// Each planted bug (sim/plants.ts) stops a quick run on the invariant named for it, and the scenario it runs in
// holds every invariant without it: a check that cannot see the bug it exists for fails here.
describe('Simulator plants', { timeout: 300_000 }, () => {
  describe('Method: simulateOutcome', () => {
    it.each(PLANT_NAMES)('catches the planted bug %s in quick mode, naming its invariant', async (name) => {
      // Act
      const outcome = await simulateOutcome(PLANTS[name]!.seed ?? 1, undefined, true, name);

      // Assess
      expect(outcome.violation?.invariant).toBe(PLANTS[name]!.caughtBy);
    });

    // The plants' own scenarios; the others (calm, crowded) are among the seeds `npm run sim -- --quick` runs in `npm test`.
    const own = [...new Set(PLANT_NAMES.map((name) => PLANTS[name]!.scenario.name))].filter(
      (name) => !SCENARIO_NAMES.includes(name),
    );

    it('runs every plant in a named scenario', () => {
      expect(own).toEqual(['churn', 'late-renewals']);
    });

    it.each(own)("holds every invariant in the plants' scenario %s without a plant", async (scenario) => {
      // Act
      const outcome = await simulateOutcome(1, scenario, true);

      // Assess
      expect(outcome.violation).toBeUndefined();
      expect(outcome.told).toBeGreaterThan(50);
    });
  });

  describe('Method: simulate', () => {
    it("breaks on a parent pool's deletion that trusts its claims listing, and holds without it", async () => {
      // Act: quick seed 18 of `blocks`, whose tree operator deletes a parent pool right after a child range is made
      // from its one block, with and without the finalizer that reads no lease's claim
      const planted = await simulate(18, undefined, true, 'delete-parent-on-listing');
      const fixed = await simulate(18, 'blocks', true);

      // Assess: the block's lease deleted under its live claim; without the plant the deletion refused (409 while
      // listed, 202 once the finalizer read the claim's child range) and every invariant holds
      expect(planted.ok).toBe(false);
      expect(planted.text).toMatch(
        /INVARIANT BROKEN: live-claim-leases-exist-and-name-it: live claim block-\d+ lists 10\.70\.0\.0/,
      );
      expect(planted.text).toContain('replay: npm run sim -- --seed 18 --plant delete-parent-on-listing --quick\n');
      expect(fixed.ok).toBe(true);
      expect(fixed.text).toMatch(/parent-delete-202=[1-9]/);
    });

    it('prints the same bytes for the same seed and plant, with the replay command of the plant', async () => {
      // Act
      const first = await simulate(2, undefined, true, 'early-expiry');
      const second = await simulate(2, undefined, true, 'early-expiry');

      // Assess
      expect(first.ok).toBe(false);
      expect(second.text).toBe(first.text);
      expect(first.text).toContain('INVARIANT BROKEN: answered-claim-held-until-released-or-expired');
      expect(first.text).toContain('replay: npm run sim -- --seed 2 --plant early-expiry --quick\n');
    });
  });
});
