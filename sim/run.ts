/**
 * npm run sim -- [--seed N] [--scenario NAME] [--quick] [--seeds K] [--plant NAME]
 *
 * Runs the deterministic simulation (world.ts) and prints what happened; the same seed prints the same bytes.
 * Without --seed, seeds 1..K (default 5 in quick mode, 1 otherwise); without --scenario, each seed picks one.
 * `--seeds 1000` is the long hunt. Exit code 1 when an invariant broke (its seed and trace are printed).
 * `--plant NAME` injects one known bug (plants.ts) into the plant's own scenario (or --scenario's): the run must
 * break, naming the invariant that caught it. Every invariant is strict (the former --strict flag, which stopped
 * on the owner-release gap now fixed, is gone).
 */
import { parseArgs } from 'node:util';
import { PLANT_NAMES, PLANT_SCENARIOS, PLANTS } from './plants.ts';
import { formatOutcome } from './report.ts';
import { NAMED_ONLY, quick, SCENARIO_NAMES, SCENARIOS, scenarioForSeed } from './scenarios.ts';
import { World, type Outcome } from './world.ts';

/** Runs one seed of a scenario, with a planted bug when `plantName` is given. */
export async function simulateOutcome(
  seed: number,
  scenarioName: string | undefined,
  isQuick: boolean,
  plantName?: string,
): Promise<Outcome> {
  const plant = plantName === undefined ? undefined : PLANTS[plantName];
  if (plantName !== undefined && !plant)
    throw new Error(`unknown plant ${JSON.stringify(plantName)}; known: ${PLANT_NAMES.join(', ')}`);
  const named =
    scenarioName !== undefined
      ? (SCENARIOS[scenarioName] ?? NAMED_ONLY[scenarioName] ?? PLANT_SCENARIOS[scenarioName])
      : plant
        ? plant.scenario
        : scenarioForSeed(seed);
  if (!named)
    throw new Error(
      `unknown scenario ${JSON.stringify(scenarioName)}; known: ${[...SCENARIO_NAMES, ...Object.keys(PLANT_SCENARIOS)].join(', ')}`,
    );
  const scenario = isQuick ? quick(named) : named;
  return new World(seed, plant ? { ...scenario, plant: plant.hooks } : scenario).run();
}

/** Runs one seed and returns its printout and whether the invariants held. */
export async function simulate(
  seed: number,
  scenarioName: string | undefined,
  isQuick: boolean,
  plantName?: string,
): Promise<{ text: string; ok: boolean }> {
  const outcome = await simulateOutcome(seed, scenarioName, isQuick, plantName);
  const plant = plantName === undefined ? '' : `planted bug ${plantName}: ${PLANTS[plantName]!.bug}\n`;
  return {
    text: plant + formatOutcome(outcome, { quick: isQuick, ...(plantName !== undefined ? { plant: plantName } : {}) }),
    ok: outcome.violation === undefined,
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      seed: { type: 'string' },
      scenario: { type: 'string' },
      quick: { type: 'boolean', default: false },

      seeds: { type: 'string' },
      plant: { type: 'string' },
    },
  });
  const count = values.seeds !== undefined ? Number(values.seeds) : values.quick ? 5 : 1;
  const seeds = values.seed !== undefined ? [Number(values.seed)] : Array.from({ length: count }, (_, i) => i + 1);
  let broken = 0;
  for (const seed of seeds) {
    const { text, ok } = await simulate(seed, values.scenario, values.quick, values.plant);
    process.stdout.write(`${text}\n\n`);
    if (!ok) broken += 1;
  }
  process.stdout.write(`${seeds.length - broken} of ${seeds.length} seeds held every invariant\n`);
  // Quick mode (CI) also runs each named-only scenario once, after the seeds, whose printout stays as it was.
  if (values.quick && values.seed === undefined && values.scenario === undefined && values.plant === undefined) {
    for (const name of Object.keys(NAMED_ONLY)) {
      const { text, ok } = await simulate(count + 1, name, true);
      process.stdout.write(
        `\n${text}\n\n${ok ? `scenario ${name} held every invariant` : `scenario ${name} broke an invariant`}\n`,
      );
      if (!ok) broken += 1;
    }
  }
  process.exitCode = broken ? 1 : 0;
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
