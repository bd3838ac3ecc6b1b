import { PickStrategy } from '../../shared/core/allocator/lease-allocator.ts';
import { compareCell, type Design, type Geometry } from '../../sim/compare.ts';
import { Mode, openBench, strategyContext, type Bench } from '../lib/harness.ts';
import { round, type RunContext, type Scenario, type ScenarioResult } from '../lib/results.ts';
import type { Usage } from '../lib/meter.ts';
import { bitmapCasStrategy } from '../strategies/bitmap-cas.ts';
import { globalLockStrategy } from '../strategies/global-lock.ts';
import { leaseStrategy } from '../strategies/lease.ts';
import type { Strategy } from '../strategies/strategy.ts';
import { leaseStrategy as blockStrategy, parentDocument, type BlockStrategy } from './blocks.ts';

/**
 * The simulator's accounting against DynamoDB Local's: the same small case through the same code on both (the bench's
 * strategies here, sim/compare.ts's cell there, which runs the core and scripts/lib/designs.ts), one warm caller, and
 * per claim the requests and the read and write units (table and indexes) each side counts, by its own pricer (the
 * bench's of the wire items, the simulator's of the plain ones). Counts, not contention: one caller, no limits.
 */
const GEOMETRY: Geometry = { addresses: '10.0.0.0/24', parent: '10.0.0.0/16', blockPrefix: 26 };
/** The parent document 40 % full: its 409 children make it ~9 KB (10 write units, 3 read units), priced by size, and
 * the children the simulator's releases leave in it (go-ipam keeps them) stay within the same units. */
const FULL: Partial<Record<Design, number>> = { 'parent-document': 40 };
const TOLERANCE = 0.1;

type Claimer = { claim(name: string): Promise<boolean>; close(): Promise<void> };

function addressDesign(strategy: Strategy) {
  return async (bench: Bench): Promise<Claimer> => {
    const run = await strategy.open(strategyContext(bench, GEOMETRY.addresses, 'cmp'));
    const caller = run.caller(0);
    await caller.warm?.();
    await run.settle?.();
    return {
      claim: async (name) => (await caller.allocate(name)).kind === 'allocated',
      close: async () => run.close?.(),
    };
  };
}

function blockDesign(strategy: BlockStrategy, design: Design) {
  return async (bench: Bench): Promise<Claimer> => {
    const run = await strategy.open(bench, Math.floor(((FULL[design] ?? 0) / 100) * 1024));
    await run.warm(0);
    return { claim: async (name) => (await run.claim(0, name)) === 'ok', close: () => run.close() };
  };
}

const DESIGNS: Record<Design, (bench: Bench) => Promise<Claimer>> = {
  lease: addressDesign(leaseStrategy(PickStrategy.Hinted)),
  'lease-blind': addressDesign(leaseStrategy(PickStrategy.Blind)),
  'bitmap-cas': addressDesign(bitmapCasStrategy),
  'global-lock': addressDesign(globalLockStrategy(10)),
  'block-lease': blockDesign(blockStrategy('blocks'), 'block-lease'),
  'parent-document': blockDesign(parentDocument, 'parent-document'),
};

const perClaim = (a: Usage, b: Usage, n: number) => ({
  requests: (b.requests - a.requests) / n,
  readUnits: (b.readUnits - a.readUnits) / n,
  writeUnits: (b.writeUnits - a.writeUnits + b.indexWriteUnits - a.indexWriteUnits) / n,
});

async function onDynamoDbLocal(ctx: RunContext, design: Design, claims: number) {
  const bench = await openBench(ctx.engine, `model-${design}`, Mode.Raw);
  try {
    const claimer = await DESIGNS[design](bench);
    const before = bench.meter.snapshot();
    let ok = 0;
    for (let i = 0; i < claims; i += 1) if (await claimer.claim(`m-${i}`)) ok += 1;
    const after = bench.meter.snapshot();
    await claimer.close();
    return { ok, ...perClaim(before, after, Math.max(1, ok)) };
  } finally {
    await bench.close();
  }
}

/** A figure's relative difference, the bench's as the reference. */
const off = (sim: number, bench: number) => (bench === 0 ? (sim === 0 ? 0 : 1) : Math.abs(sim - bench) / bench);

export const modelCheckScenario: Scenario = {
  name: 'model-check',
  title: 'Model check: the simulator against DynamoDB Local, every design',
  async run(ctx: RunContext): Promise<ScenarioResult> {
    const t0 = performance.now();
    const claims = ctx.quick ? 30 : 60;
    const rows: Record<string, unknown>[] = [];
    const failures: string[] = [];
    for (const design of Object.keys(DESIGNS) as Design[]) {
      const local = await onDynamoDbLocal(ctx, design, claims);
      const sim = await compareCell({
        design,
        fullPercent: FULL[design] ?? 0,
        containers: 1,
        warmupMs: 300,
        windowMs: 1000,
        seed: 1,
        geometry: GEOMETRY,
        unlimited: true,
      });
      const worst = Math.max(
        off(sim.claimOnly.requests, local.requests),
        off(sim.claimOnly.readUnits, local.readUnits),
        off(sim.claimOnly.writeUnits, local.writeUnits),
      );
      if (worst > TOLERANCE)
        failures.push(`${design}: the simulator's counts differ from DynamoDB Local's by ${round(worst * 100, 0)} %`);
      ctx.log(`model-check ${design}: worst difference ${round(worst * 100, 1)} %`);
      rows.push({
        design,
        fullPercent: FULL[design] ?? 0,
        benchClaims: local.ok,
        simClaims: sim.claims,
        requests: { bench: round(local.requests), sim: round(sim.claimOnly.requests) },
        readUnits: { bench: round(local.readUnits), sim: round(sim.claimOnly.readUnits) },
        writeUnits: { bench: round(local.writeUnits), sim: round(sim.claimOnly.writeUnits) },
        worstDifferencePercent: round(worst * 100, 1),
      });
    }
    return {
      name: 'model-check',
      title: this.title,
      status: failures.length ? 'failed' : 'ok',
      failures,
      notes: [
        `One warm caller per design, ${claims} claims on DynamoDB Local (raw, the bench's strategies; its claims are not released) and the simulator's cell of the same pool (sim/compare.ts, capacity limits off; each claim released before the next). Address designs on ${GEOMETRY.addresses} empty; block designs on ${GEOMETRY.parent} in /${GEOMETRY.blockPrefix} blocks, the parent document 40 % full (~9 KB). Per claim: requests, read units, write units of table and indexes; a design fails past ${TOLERANCE * 100} %.`,
      ],
      parameters: { claims, geometry: GEOMETRY, tolerance: TOLERANCE },
      rows,
      seconds: round((performance.now() - t0) / 1000, 1),
      charts: [],
    };
  },
};
