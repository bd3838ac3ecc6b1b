/**
 * npm run sim -- [--seed N] [--scenario NAME] [--quick] [--seeds K]
 *
 * Runs the deterministic simulation (world.ts) and prints what happened; the same seed prints the same bytes.
 * Without --seed, seeds 1..K (default 5 in quick mode, 1 otherwise); without --scenario, each seed picks one.
 * `--seeds 1000` is the long hunt. Exit code 1 when an invariant broke (its seed and trace are printed). Every
 * invariant is strict (the former --strict flag, which stopped on the owner-release gap now fixed, is gone).
 */
import { parseArgs } from 'node:util';
import { formatOutcome } from './report.ts';
import { quick, SCENARIO_NAMES, SCENARIOS, scenarioForSeed } from './scenarios.ts';
import { World } from './world.ts';

/** Runs one seed and returns its printout and whether the invariants held. */
export async function simulate(seed: number, scenarioName: string | undefined, isQuick: boolean): Promise<{ text: string; ok: boolean }> {
  const named = scenarioName === undefined ? scenarioForSeed(seed) : SCENARIOS[scenarioName];
  if (!named) throw new Error(`unknown scenario ${JSON.stringify(scenarioName)}; known: ${SCENARIO_NAMES.join(', ')}`);
  const outcome = await new World(seed, isQuick ? quick(named) : named).run();
  return { text: formatOutcome(outcome, { quick: isQuick }), ok: outcome.violation === undefined };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { seed: { type: 'string' }, scenario: { type: 'string' }, quick: { type: 'boolean', default: false }, seeds: { type: 'string' } },
  });
  const count = values.seeds !== undefined ? Number(values.seeds) : values.quick ? 5 : 1;
  const seeds = values.seed !== undefined ? [Number(values.seed)] : Array.from({ length: count }, (_, i) => i + 1);
  let broken = 0;
  for (const seed of seeds) {
    const { text, ok } = await simulate(seed, values.scenario, values.quick);
    process.stdout.write(`${text}\n\n`);
    if (!ok) broken += 1;
  }
  process.stdout.write(`${seeds.length - broken} of ${seeds.length} seeds held every invariant\n`);
  process.exitCode = broken ? 1 : 0;
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
