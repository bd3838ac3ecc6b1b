/**
 * The named scenarios. Without --scenario the seed picks one, so a sweep over seeds covers all of them. Quick mode
 * shortens the load (and the client count) so a handful of seeds fit CI's minute.
 */
import { NO_FAULTS, type FaultRates, type Scenario } from './world.ts';

const ALL_FAULTS: FaultRates = {
  timeout: 0.02,
  die: 0.01,
  stormsPerMinute: 2,
  redeliver: 0.1,
  streamFailure: 0.05,
  reconcilerOverlap: 0.3,
  reconcilerKill: 0.01,
  rangeChurnPerMinute: 3,
  ownerReleasesPerMinute: 4,
  poolDeletesPerMinute: 2,
};

const base: Scenario = {
  name: 'calm',
  durationMs: 120_000,
  clients: 24,
  maxContainers: 16,
  thinkMs: 400,
  cidrs: ['10.0.0.0/24', '10.0.1.0/24'],
  legacy: true,
  ipv6: 'fd00::/120',
  ttlShare: 0.3,
  ttlSeconds: 30,
  generateShare: 0.3,
  releaseShare: 0.3,
  holdMax: 8,
  skewMs: 0,
  reconcilePeriodMs: 20_000,
  faults: NO_FAULTS,
  allocator: 'lease',
  prefill: 0,
  checkEveryMs: 500,
};

export const SCENARIOS: Readonly<Record<string, Scenario>> = {
  /** No faults: the baseline every other scenario is compared to. */
  calm: base,
  /** Every fault at once: timeouts, deaths after commit, storms, stream redelivery, reconciler overlap, range churn, owner releases, the second pool deleted and created again. */
  faults: { ...base, name: 'faults', faults: ALL_FAULTS },
  /** Clocks up to 3 s apart and short TTLs: what a TTL means when containers disagree on the time. */
  skew: {
    ...base,
    name: 'skew',
    skewMs: 3000,
    ttlShare: 0.8,
    ttlSeconds: 10,
    faults: { ...NO_FAULTS, timeout: 0.01, die: 0.005 },
  },
  /** A nearly full /24 shared by many clients: collisions, RangeFull, the hint's trust window. */
  crowded: {
    ...base,
    name: 'crowded',
    cidrs: ['10.0.0.0/24'],
    ipv6: undefined,
    prefill: 0.9,
    holdMax: 4,
    faults: { ...ALL_FAULTS, rangeChurnPerMinute: 0, poolDeletesPerMinute: 0 },
  },
  /** The legacy allocator (MultiCIDRServiceAllocator=false): one bitmap per range, written in every claim's transaction. */
  legacy: {
    ...base,
    name: 'legacy',
    allocator: 'bitmap-cas',
    ipv6: undefined,
    cidrs: ['10.0.0.0/24'],
    faults: { ...ALL_FAULTS, rangeChurnPerMinute: 0, poolDeletesPerMinute: 0 },
  },
};

/**
 * Scenarios run by name only, outside the seeds' rotation (so the rotation, and every seed's run, stays as it was):
 * `sim --quick` runs each once after its seeds.
 */
export const NAMED_ONLY: Readonly<Record<string, Scenario>> = {
  /**
   * A block pool: claims take /26 blocks of two /22s (32 blocks) and /120 blocks of an IPv6 /112 (256),
   * with every fault; range churn adds /26 ranges, one block each. The same invariants: no block held twice, every
   * held block in a Ready or Terminating range, released in time, utilization equal to the table.
   */
  blocks: {
    ...base,
    name: 'blocks',
    legacy: false,
    cidrs: ['10.0.0.0/22', '10.0.4.0/22'],
    ipv6: 'fd00::/112',
    blocks: { IPv4: 26, IPv6: 120 },
    tree: { belowFree: 200, maxBlocks: 3, parentDeletes: 60 },
    faults: ALL_FAULTS,
  },
};

export const SCENARIO_NAMES = [...Object.keys(SCENARIOS), ...Object.keys(NAMED_ONLY)];

/** The scenario a seed picks when none is named: the rotation leaves out NAMED_ONLY. */
export function scenarioForSeed(seed: number): Scenario {
  const rotation = Object.keys(SCENARIOS);
  return SCENARIOS[rotation[Math.abs(seed) % rotation.length]!]!;
}

/** Quick mode: a shorter load with fewer clients (CI runs a handful of seeds of it). */
export function quick(s: Scenario): Scenario {
  return { ...s, durationMs: 40_000, clients: Math.min(s.clients, 12), maxContainers: Math.min(s.maxContainers, 8) };
}
