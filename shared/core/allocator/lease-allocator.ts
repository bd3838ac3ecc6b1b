import type { Claim, Hold, PoolView } from '../model.ts';
import type { ReleaseOutcome } from '../ports.ts';
import type { IpamEvent } from '../events.ts';
import type { AllocateOptions, AllocationResult, Allocator, ClaimDraft, FamilyRequest } from './allocator.ts';
import type { ParsedRange } from '../base/pool-geometry.ts';
import { TUNING } from './tuning.ts';
import { allocateInRounds } from './lease/commit-rounds.ts';
import type { AllocatorEnv, LeasePorts } from './lease/context.ts';
import { pickBlindly, pickWithHints, type Picker } from './lease/pick.ts';
import { addressUnits } from './lease/units.ts';

export const PickStrategy = {
  /** Upper band first, random start, steered by the container's hint of what is taken. */
  Hinted: 'hinted',
  /** Uniform random candidates with no hint: the benchmark's baseline. */
  Blind: 'blind',
} as const;
export type PickStrategy = (typeof PickStrategy)[keyof typeof PickStrategy];

const PICKERS: Record<PickStrategy, Picker> = {
  [PickStrategy.Hinted]: pickWithHints,
  [PickStrategy.Blind]: pickBlindly,
};

export interface LeaseAllocatorDeps extends LeasePorts {
  readonly strategy?: PickStrategy;
  /** Transactions tried before giving up on a contended family (default TUNING.maxCommitsHinted / maxCommitsBlind). */
  readonly maxCommits?: number;
  /** Offsets a range's dynamic picks must stay under (a legacy range's mirrored window while dual-write is on). */
  readonly windowOf?: (range: ParsedRange) => bigint | undefined;
  /** How old a summary copy may be and still steer picks near full without being read again (TUNING.fullTrustMs). */
  readonly fullTrustMs?: number;
  /** Random probes per band before the scan (TUNING.randomProbes; 0 leaves only the scan, as tests script it). */
  readonly probes?: number;
}

/**
 * The per-IP lease strategy: pick likely free addresses in advance, then take them with one conditional transaction
 * (claim absent, each lease absent or expired). A collision means "try another candidate"; any other error aborts.
 * The stages of a call are in lease/ (docs/architecture.md lists them in order); this class only wires them.
 */
export class LeaseAllocator implements Allocator {
  private readonly env: AllocatorEnv;
  private readonly picker: Picker;

  constructor(private readonly deps: LeaseAllocatorDeps) {
    const strategy = deps.strategy ?? PickStrategy.Hinted;
    this.picker = PICKERS[strategy];
    this.env = {
      ports: deps,
      units: addressUnits(deps.windowOf),
      knobs: {
        maxCommits:
          deps.maxCommits ?? (strategy === PickStrategy.Blind ? TUNING.maxCommitsBlind : TUNING.maxCommitsHinted),
        fullTrustMs: deps.fullTrustMs ?? TUNING.fullTrustMs,
        probes: deps.probes ?? TUNING.randomProbes,
      },
    };
  }

  release(claim: Claim, expectedVersion?: number, hold?: Hold, event?: IpamEvent): Promise<ReleaseOutcome> {
    return this.deps.claims.releaseClaim(claim, expectedVersion, hold, event);
  }

  allocate(
    view: PoolView,
    draft: ClaimDraft,
    requests: readonly FamilyRequest[],
    options: AllocateOptions = {},
  ): Promise<AllocationResult> {
    return allocateInRounds(this.env, this.picker, { view, draft, requests, options });
  }
}
