import { round, type ScenarioResult } from './results.ts';
import type { GoalRow } from './report.ts';

type Row = Record<string, unknown>;

/**
 * Issue 35's two goals, read off the blocks scenario's rows in every mode it ran: a goal is met only where every mode
 * meets it, so the modelled round trip (deployed) cannot carry a goal the engine as it is (raw) misses.
 */
export function blocksGoals(results: readonly ScenarioResult[]): GoalRow[] {
  const result = results.find((r) => r.name === 'blocks');
  const rows = (result?.rows ?? []) as Row[];
  const modes = [...new Set(rows.map((r) => String(r.mode)))];
  const cell = (mode: string, strategy: string, full: number, callers: number) =>
    rows.find((r) => r.mode === mode && r.strategy === strategy && r.fullPercent === full && r.callers === callers);
  const rateGoal = 'at 90 % full with 32 callers: block claims/s >= 5x the parent-document design (go-ipam)';
  const requestsGoal = "requests per block claim within 10 % of an address claim's in the same cell";
  if (rows.length === 0)
    return [rateGoal, requestsGoal].map((goal) => ({
      scenario: 'blocks',
      goal,
      measured: 'n/a',
      met: undefined,
      note: result?.unavailable ?? 'not run',
    }));

  const ratios = modes.map((mode) => {
    const blocks = Number(cell(mode, 'lease-blocks', 90, 32)?.claimsPerSecond);
    const doc = Number(cell(mode, 'parent-document', 90, 32)?.claimsPerSecond);
    return { mode, blocks, doc, ratio: blocks / doc };
  });
  const pairs = rows
    .filter((r) => r.strategy === 'lease-blocks')
    .map((r) => {
      const a = cell(String(r.mode), 'lease-addresses', Number(r.fullPercent), Number(r.callers));
      return { r, excess: Number(r.requestsPerClaim) / Number(a?.requestsPerClaim) - 1 };
    });
  const within = pairs.filter((p) => p.excess <= 0.1);
  const worst = pairs.reduce((w, p) => (p.excess > w.excess ? p : w), pairs[0]!);
  return [
    {
      scenario: 'blocks',
      goal: rateGoal,
      measured: ratios.map((x) => `${x.mode} ${round(x.ratio, 2)}x (${x.blocks}/s vs ${x.doc}/s)`).join('; '),
      met: ratios.every((x) => Number.isFinite(x.ratio)) ? ratios.every((x) => x.ratio >= 5) : undefined,
      note: "Per-block leases lead wherever callers contend (0 and 50 % full, 32 callers: the parent document pays 25-33 requests a claim there, one read and one write per lost race). At 90 % full the lease path costs about 3.4 requests a claim with one caller and 6.5-7.6 with 32 (consistent batch reads of the few free blocks, collisions among callers sharing a stale summary), and on DynamoDB Local, one engine on the 2 cores the callers share, a request's engine time and not its round trip is what a claim waits for: the parent document's cheap GetItem and PutItem rounds cost the engine little. The deployed rows add a modelled round trip to every request of both designs; that is where a parent document's one-winner-per-round shows, and it is still short of 5x here. Reaching it needs a run against DynamoDB itself (no shared engine), or fewer requests a contended claim near full.",
    },
    {
      scenario: 'blocks',
      goal: requestsGoal,
      measured: `${within.length} of ${pairs.length} cells; the largest difference ${round(worst.excess * 100, 0)} % (${String(worst.r.mode)}, ${String(worst.r.fullPercent)} % full, ${String(worst.r.callers)} callers: ${String(worst.r.requestsPerClaim)} requests a block claim)`,
      met: within.length === pairs.length,
      note: 'A block claim takes the same path as an address claim (the same stages over slots of the block size), so the two differ only where callers collide: at 90 % full with 32 callers the number of collisions changes from run to run with timing, in either direction.',
    },
  ];
}
