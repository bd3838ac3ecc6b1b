import { round, type ScenarioResult } from './results.ts';
import type { GoalRow } from './report.ts';

type Row = Record<string, unknown>;

/**
 * The block pools' two goals, read off the blocks scenario's rows in every mode it ran: a goal is met only where every mode
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
    const blocks = cell(mode, 'lease-blocks', 90, 32);
    const doc = cell(mode, 'parent-document', 90, 32);
    const [b, d] = [Number(blocks?.claimsPerSecond), Number(doc?.claimsPerSecond)];
    const medians = Number(doc?.claimMsP50) / Number(blocks?.claimMsP50);
    return { mode, blocks, doc, b, d, ratio: b / d, medians };
  });
  const lower = modes.flatMap((mode) =>
    [0, 50].map(
      (full) =>
        Number(cell(mode, 'lease-blocks', full, 32)?.claimsPerSecond) /
        Number(cell(mode, 'parent-document', full, 32)?.claimsPerSecond),
    ),
  );
  const span = (values: number[]) => `${round(Math.min(...values), 1)}-${round(Math.max(...values), 1)}x`;
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
      measured: ratios
        .map(
          (x) =>
            `${x.mode} ${round(x.ratio, 2)}x (${x.b}/s vs ${x.d}/s; median claim ${String(x.blocks?.claimMsP50)} ms vs ${String(x.doc?.claimMsP50)} ms, the slowest ${String(x.blocks?.claimMsMax)} ms vs ${String(x.doc?.claimMsMax)} ms)`,
        )
        .join('; '),
      met: ratios.every((x) => Number.isFinite(x.ratio)) ? ratios.every((x) => x.ratio >= 5) : undefined,
      note: rateNote(ratios, { cell, span, lower, modes }),
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

/**
 * Why the rate goal reads as it does, from the rows: where per-block leases lead, what a 90 % cell's block claims spend
 * their requests on, and the most this engine gives the design at all (the empty pool's cell, where a block claim
 * takes its fewest requests).
 */
function rateNote(
  ratios: readonly { mode: string; blocks?: Row; medians: number }[],
  {
    cell,
    span,
    lower,
    modes,
  }: {
    cell: (mode: string, strategy: string, full: number, callers: number) => Row | undefined;
    span: (values: number[]) => string;
    lower: number[];
    modes: readonly string[];
  },
): string {
  const empty = modes.map((mode) => {
    const b = cell(mode, 'lease-blocks', 0, 32);
    const d = cell(mode, 'parent-document', 0, 32);
    return `${mode} ${round(Number(b?.claimsPerSecond) / Number(d?.claimsPerSecond), 1)}x at ${String(b?.requestsPerClaim)} requests a claim`;
  });
  const one = modes.map((mode) => String(cell(mode, 'lease-blocks', 90, 1)?.requestsPerClaim));
  const kinds = ratios.map((x) => `${x.mode}: ${String(x.blocks?.requestsByKind ?? 'n/a')}`);
  return [
    `Per-block leases lead wherever callers contend below 90 % full (0 and 50 % full, 32 callers: ${span(lower)} the parent document's rate; it pays 25-40 requests a claim there, a read and a write per lost race).`,
    `At 90 % full with 32 callers the median block claim is ${span(ratios.map((x) => x.medians))} faster than the parent document's, but a cell's rate is its claims over the time its slowest claim ended, and near full a few block claims take far longer than the median: ${ratios.map((x) => String(x.blocks?.requestsPerClaim)).join(', ')} requests a claim with 32 callers (${one.join(', ')} with one), by kind per claim ${kinds.join('; ')}.`,
    'They read the last free blocks of the upper band consistently, collide with callers sharing the same stale summary, and make the upper band\'s one "used up" decision before the lower band (see the scenario\'s notes).',
    `The engine bounds the ratio before the pool fills: in the empty pool's cell, where a block claim takes its fewest requests (a transaction and the range-generation check) and hardly collides, per-block leases reach ${empty.join('; ')}. On DynamoDB Local every request of every caller waits for the same engine on the same 2 cores; the parent document's lost races cost it little engine time.`,
    "Not met as measured. What would close it: a run against DynamoDB itself (not reachable from this machine), where the engine is not one process shared by all callers; fewer requests for a contended claim near full would narrow it, but not past the empty pool's ratio.",
  ].join(' ');
}
