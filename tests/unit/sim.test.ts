import { describe, expect, it } from 'vitest';
import type { Item } from '../../shared/adapters/dynamodb/codec.ts';
import { itemIsAbsent } from '../../shared/adapters/dynamodb/conditions.ts';
import type { Query, WriteOp } from '../../shared/adapters/dynamodb/table.ts';
import { Invariant } from '../../sim/invariants.ts';
import { checkRangeFull, FreeAddresses, type RangeFullAnswer } from '../../sim/ledger.ts';
import { formatOutcome } from '../../sim/report.ts';
import { quick, SCENARIOS } from '../../sim/scenarios.ts';
import { NO_FAULTS, World, type Scenario } from '../../sim/world.ts';

/** A short scenario: 15 s of load by 8 clients, a reconciler every 10 s. */
function small(overrides: Partial<Scenario>): Scenario {
  return {
    ...quick(SCENARIOS.calm!),
    durationMs: 15_000,
    clients: 8,
    maxContainers: 6,
    reconcilePeriodMs: 10_000,
    ...overrides,
  };
}

/** A small scenario whose broken store only the table-only invariants may report (the ledger sees most of them first). */
function tableOnly(overrides: Partial<Scenario>): Scenario {
  return small({ ...overrides, tableInvariantsOnly: true });
}

const entityOf = (op: WriteOp): unknown => (op.kind === 'put' ? op.item.entity : undefined);
const isPutOf = (op: WriteOp, entity: string): op is Extract<WriteOp, { kind: 'put' }> =>
  op.kind === 'put' && op.item.entity === entity;
const withoutCondition = (op: WriteOp): WriteOp => (op.kind === 'check' ? op : { ...op, condition: undefined });

describe('Simulator', { timeout: 120_000 }, () => {
  describe('Method: run', () => {
    it('prints the same bytes for the same seed', async () => {
      // Prepare
      const scenario = small({ name: 'faults', faults: SCENARIOS.faults!.faults });

      // Act
      const first = formatOutcome(await new World(7, scenario).run());
      const second = formatOutcome(await new World(7, scenario).run());

      // Assess
      expect(second).toBe(first);
      expect(first).toContain('all invariants held');
    });

    it('holds every invariant on the shipped code without faults', async () => {
      const outcome = await new World(11, small({})).run();

      expect(outcome.violation).toBeUndefined();
      expect(outcome.allocations).toBeGreaterThan(20);
    });
  });

  // Each invariant, shown to catch a store broken on purpose (SimTable's `mutate` rewrites writes before MemoryTable).
  describe('Method: formatOutcome', () => {
    const broken = {
      seed: 16,
      scenario: 'faults',
      virtualMs: 40_000,
      steps: 1,
      answers: {},
      allocations: 0,
      latencies: [],
      spend: new Map(),
      faults: {},
      reconcilerRuns: 0,
      streamRecords: 0,
      mirrorBatches: 0,
      checks: 1,
      told: 0,
      maxProjectionLagMs: 0,
      refused: {},
      throttledBy: [],
      violation: { invariant: Invariant.NoDoubleHold, detail: '10.0.0.1 held by c1 and c2', subjects: ['10.0.0.1'] },
      trace: [],
      notes: [],
    };

    it('names a replay command that runs the same form of the scenario, quick or full', () => {
      // Act
      const quickText = formatOutcome(broken, { quick: true });
      const fullText = formatOutcome(broken);

      // Assess
      expect(quickText).toContain('replay: npm run sim -- --seed 16 --scenario faults --quick\n');
      expect(fullText).toContain('replay: npm run sim -- --seed 16 --scenario faults\n');
    });

    it("names the command it is given when the run is not one of `npm run sim`'s scenarios (the open loop)", () => {
      const text = formatOutcome(
        { ...broken, scenario: 'open-loop' },
        { replay: 'npm run sim:open-loop -- --case increased --seconds 60' },
      );
      expect(text).toContain('replay: npm run sim:open-loop -- --case increased --seconds 60\n');
      expect(text).not.toContain('--scenario open-loop');
    });
  });

  describe('Invariant checker on broken stores', () => {
    const broken = async (seed: number, scenario: Scenario) => (await new World(seed, scenario).run()).violation;

    it('catches an address held twice when lease puts lose their condition', async () => {
      const mutate = (ops: readonly WriteOp[]) => ops.map((op) => (isPutOf(op, 'lease') ? withoutCondition(op) : op));
      const violation = await broken(
        1,
        tableOnly({
          name: 'dup',
          cidrs: ['10.0.0.0/27'],
          ipv6: undefined,
          legacy: false,
          prefill: 0.5,
          clients: 12,
          holdMax: 4,
          mutate,
        }),
      );

      expect(violation?.invariant).toBe(Invariant.NoDoubleHold);
    });

    it('catches a live claim without its lease when commits drop the lease puts', async () => {
      const mutate = (ops: readonly WriteOp[]) =>
        ops.some((op) => isPutOf(op, 'claim')) ? ops.filter((op) => !isPutOf(op, 'lease')) : [...ops];
      const violation = await broken(2, tableOnly({ name: 'noLease', mutate }));

      expect(violation?.invariant).toBe(Invariant.ClaimLeases);
    });

    it('catches a lease outside every range when marking a range Terminating deletes it instead', async () => {
      const mutate = (ops: readonly WriteOp[]) =>
        ops.map(
          (op): WriteOp =>
            op.kind === 'update' && op.key.SK.startsWith('RANGE#') && op.update.set?.state === 'Terminating'
              ? { kind: 'delete', key: op.key }
              : op,
        );
      const violation = await broken(
        3,
        tableOnly({ name: 'rangeGone', durationMs: 60_000, faults: { ...NO_FAULTS, rangeChurnPerMinute: 6 }, mutate }),
      );

      expect(violation?.invariant).toBe(Invariant.LeaseInRange);
    });

    it('catches expired claims left in place when releases that write an event can never commit', async () => {
      const mutate = (ops: readonly WriteOp[]) =>
        ops.some((op) => isPutOf(op, 'event'))
          ? ops.map(
              (op): WriteOp =>
                op.kind === 'delete' && op.key.PK.startsWith('CLAIM#') ? { ...op, condition: itemIsAbsent() } : op,
            )
          : [...ops];
      const violation = await broken(4, tableOnly({ name: 'noExpiry', ttlShare: 1, ttlSeconds: 10, mutate }));

      expect(violation?.invariant).toBe(Invariant.ReleasedInTime);
    });

    it('catches utilization that misses leases when summary chunk writes are lost and lease puts lose their index keys', async () => {
      // Utilization reads the occupancy summary, or the listing where a range has leases with a TTL: both are broken.
      const mutate = (ops: readonly WriteOp[]) =>
        ops
          .filter((op) => entityOf(op) !== 'chunk')
          .map((op): WriteOp => {
            if (!isPutOf(op, 'lease')) return op;
            const { GSI1PK: _pk, GSI1SK: _sk, ...item } = op.item as Item;
            return { ...op, item };
          });
      const violation = await broken(5, tableOnly({ name: 'unindexed', mutate }));

      expect(violation?.invariant).toBe(Invariant.Utilization);
    });

    it('catches an occupancy summary that keeps released addresses when chunk writes that clear bits are lost', async () => {
      // Every claim has a TTL, so the summary shows expiring leases and utilization counts the listing, which stays
      // right: only the summary check can see the stale bits.
      const written = new Map<string, number>();
      const mutate = (ops: readonly WriteOp[]) =>
        ops.filter((op) => {
          if (op.kind !== 'put' || entityOf(op) !== 'chunk') return true;
          const key = `${op.item.PK as string}/${op.item.SK as string}`;
          const used = op.item.used as number;
          if (used < (written.get(key) ?? 0)) return false;
          written.set(key, used);
          return true;
        });
      const violation = await broken(9, tableOnly({ name: 'noSummary', ttlShare: 1, ttlSeconds: 600, mutate }));

      expect(violation?.invariant).toBe(Invariant.Summary);
    });

    it('catches a legacy bitmap that differs from the leases when bitmap writes are lost', async () => {
      const mutate = (ops: readonly WriteOp[]) => ops.filter((op) => entityOf(op) !== 'bitmap');
      const violation = await broken(6, tableOnly({ name: 'noBitmap', legacy: true, mutate }));

      expect(violation?.invariant).toBe(Invariant.Bitmaps);
    });

    it('catches a retry answered with a second claim when claim puts lose their condition', async () => {
      const mutate = (ops: readonly WriteOp[]) => ops.map((op) => (isPutOf(op, 'claim') ? withoutCondition(op) : op));
      const violation = await broken(
        7,
        tableOnly({
          name: 'overwrite',
          durationMs: 30_000,
          faults: { ...NO_FAULTS, die: 0.05, timeout: 0.05 },
          mutate,
        }),
      );

      expect(violation?.invariant).toBe(Invariant.RetrySameAddresses);
    });

    it('catches claims that outlive their pool when the pool delete sees no claims', async () => {
      // The claims and leases listings of the second pool answer empty: the operator releases nothing and the delete
      // finds nothing to read again, so the pool goes with its claims and leases still in the table. (With the leases
      // listing alone answering, the delete reads each listed lease's claim and finds them.)
      const hideQuery = (query: Query) =>
        query.partition.startsWith('CLAIMS#sim-b#') || query.partition.startsWith('ADDR#sim-b#');
      const violation = await broken(
        10,
        tableOnly({
          name: 'poolGone',
          durationMs: 30_000,
          faults: { ...NO_FAULTS, poolDeletesPerMinute: 4 },
          hideQuery,
        }),
      );

      expect(violation?.invariant).toBe(Invariant.DeletedPoolEmpty);
    });

    it('catches a 500 when claim commits become malformed transactions', async () => {
      const mutate = (ops: readonly WriteOp[]) =>
        ops.length > 1 && isPutOf(ops[0]!, 'claim') ? [ops[0]!, ...ops] : [...ops];
      const violation = await broken(8, tableOnly({ name: 'malformed', mutate }));

      expect(violation?.invariant).toBe(Invariant.No5xx);
    });
  });
  // The RangeFull check over the commit log (ledger.ts FreeAddresses): a family is full when every position it hands
  // out has a lease item; a block pool's positions are its blocks, each leased at its first address.
  describe('Method: checkRangeFull', () => {
    const T0 = Date.UTC(2026, 0, 1);
    const answer = (pool: string, unit: RangeFullAnswer['unit']): RangeFullAnswer => ({
      pool,
      family: 'IPv4',
      unit,
      fromMs: T0 + 1000,
      toMs: T0 + 1200,
      what: 'create c1',
    });

    /** A tracker fed a pool (block size, exclusions), one Ready range and leases at the given addresses, at T0. */
    function tracker(options: { block?: number; cidr: string; exclude?: string[]; leases: string[] }): FreeAddresses {
      const free = new FreeAddresses();
      const block = options.block === undefined ? {} : { blockPrefixLength: options.block };
      free.commit(
        undefined,
        {
          entity: 'pool',
          name: 'p',
          exclude: options.exclude ?? [],
          ...(options.block === undefined ? {} : { blockPrefixLength: { IPv4: options.block } }),
        },
        T0,
      );
      free.commit(
        undefined,
        { entity: 'range', pool: 'p', name: 'r', cidr: options.cidr, state: 'Ready', ...block },
        T0,
      );
      for (const address of options.leases) free.commit(undefined, { entity: 'lease', pool: 'p', address }, T0);
      return free;
    }

    it('names the block no lease item held throughout the request of a block pool', () => {
      // Prepare: /26 blocks of a /24, three of the four leased at their first addresses
      const free = tracker({ block: 26, cidr: '10.0.0.0/24', leases: ['10.0.0.0', '10.0.0.64', '10.0.0.128'] });

      // Act
      const found = checkRangeFull(free, answer('p', 'block'));

      // Assess
      expect(found.map((v) => v.invariant)).toEqual([Invariant.RangeFullExact]);
      expect(found[0]!.detail).toContain('10.0.0.192/26 of pool p had no lease throughout the request');
    });

    it('takes a block pool with every block leased at its first address as full', () => {
      const free = tracker({
        block: 26,
        cidr: '10.0.0.0/24',
        leases: ['10.0.0.0', '10.0.0.64', '10.0.0.128', '10.0.0.192'],
      });

      expect(checkRangeFull(free, answer('p', 'block'))).toEqual([]);
    });

    it('counts no block holding an excluded address as free', () => {
      // Prepare: the unleased block holds the excluded 10.0.0.200, so it is never handed out
      const free = tracker({
        block: 26,
        cidr: '10.0.0.0/24',
        exclude: ['10.0.0.200/32'],
        leases: ['10.0.0.0', '10.0.0.64', '10.0.0.128'],
      });

      expect(checkRangeFull(free, answer('p', 'block'))).toEqual([]);
    });

    it('counts no excluded address of an address pool as free, and finds the one host left', () => {
      // Prepare: a /29's hosts .1-.6, .5 and .6 excluded, .1-.3 leased
      const leases = ['10.0.0.1', '10.0.0.2', '10.0.0.3'];
      const exclude = ['10.0.0.5/32', '10.0.0.6/32'];
      const full = tracker({ cidr: '10.0.0.0/29', exclude: [...exclude, '10.0.0.4/32'], leases });
      const oneLeft = tracker({ cidr: '10.0.0.0/29', exclude, leases });

      // Act
      const none = checkRangeFull(full, answer('p', 'address'));
      const found = checkRangeFull(oneLeft, answer('p', 'address'));

      // Assess
      expect(none).toEqual([]);
      expect(found[0]?.detail).toContain('10.0.0.4 of pool p had no lease throughout the request');
    });
  });
});
