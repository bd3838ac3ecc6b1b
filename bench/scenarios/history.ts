import { buildContainer } from '../../shared/adapters/composition.ts';
import { leaseToItem } from '../../shared/adapters/dynamodb/codec.ts';
import { holdingToItem } from '../../shared/adapters/dynamodb/history-store.ts';
import { chunkToItem } from '../../shared/adapters/dynamodb/occupancy-store.ts';
import { LeaseProjections } from '../../shared/core/mirror/projections.ts';
import type { OccupancyChunk } from '../../shared/core/occupancy/chunk.ts';
import type { OccupancyStore } from '../../shared/core/occupancy/ports.ts';
import { SummaryMirror } from '../../shared/core/occupancy/summary-mirror.ts';
import { systemClock } from '../../shared/adapters/system.ts';
import type { Principal } from '../../shared/core/access.ts';
import { holdingOfLease, type Holding } from '../../shared/core/history/holding.ts';
import type { Labels } from '../../shared/core/labels.ts';
import { LeaseItemPresence, type LeaseChange } from '../../shared/core/base/lease-change.ts';
import { leaseOfClaim, type Lease } from '../../shared/core/model.ts';
import { createClaim, deleteClaim } from '../../shared/core/use-cases/claims.ts';
import { createPool } from '../../shared/core/use-cases/pools.ts';
import { createRange } from '../../shared/core/use-cases/ranges.ts';
import { Meter } from '../lib/bench-client.ts';
import { Mode, openBench } from '../lib/harness.ts';
import { plainItemSize, writeUnits } from '../../aws-emulation/item-size.ts';
import { percentile, round, type RunContext, type Scenario, type ScenarioResult } from '../lib/results.ts';
import { benchConfig } from '../strategies/lease.ts';

const POOL = 'hist';
/** One batch per poll, as the event source mapping polls a shard about 4 times a second (bench/lib/stream-feed.ts). */
const POLL_MS = 250;
const BATCH = 100;

/** A CNI caller's labels and principal: what a claim typically carries (the container id is 64 hex characters). */
const cniLabels: Labels = {
  'cni.ipam/network': 'pods',
  'cni.ipam/ifname': 'eth0',
  'cni.ipam/container-id': 'c0ffee'.padEnd(64, '0'),
};
const nodeRole: Principal = { arn: 'arn:aws:iam::123456789012:role/eks-node-cni', session: 'i-0123456789abcdef0' };
/** The most a claim may carry: 32 labels, each key a 253-character prefix and a 63-character name, each value 128. */
const maxLabels: Labels = Object.fromEntries(
  Array.from({ length: 32 }, (_, i) => [
    `${'p'.repeat(240)}${String(i).padStart(13, '0')}/${'n'.repeat(63)}`,
    'v'.repeat(128),
  ]),
);

const sizeOf = (item: Record<string, unknown>) => plainItemSize(item);

/** Write units a chunk's `historyThrough` adds to its write (0 unless its bytes cross a KB boundary). */
function markUnits(chunk: OccupancyChunk): number {
  if (chunk.historyThrough === undefined) return 0;
  const { historyThrough: _mark, ...bare } = chunk;
  return writeUnits(sizeOf(chunkToItem(chunk))) - writeUnits(sizeOf(chunkToItem(bare)));
}

/**
 * The address history's cost and lag. Callers (Lambda containers) run allocate-and-release cycles through
 * the use cases, each claim with CNI-like labels and a principal; every lease change they made is fed, with its
 * before and after images as the stream carries them, to the stream function's lease projections (LeaseProjections),
 * one batch of up to 100 per 250 ms poll: the occupancy summary (the mirror) and the history, each on its own
 * metered client. Reported: history write units per cycle (holding item, its owner index entry, the completeness
 * mark: what its bytes add to the summary's chunk writes, and its own item's writes), item sizes and storage per million holdings, the lease item's growth from carrying labels and createdBy,
 * and both projections' lag (a change's report by its writer to the end of its projection's batch; the real stream's
 * own delay before a poll sees a record is not modelled). Afterwards every cycle's holding must be there exactly once.
 */
export const historyScenario: Scenario = {
  name: 'history',
  title: 'Address history cost and lag',
  async run(ctx: RunContext): Promise<ScenarioResult> {
    const t0 = performance.now();
    const callers = ctx.quick ? 2 : 8;
    const windowMs = ctx.quick ? 3_000 : 30_000;
    const cidr = '10.0.0.0/20';
    const failures: string[] = [];
    const bench = await openBench(ctx.engine, 'history', Mode.Raw);
    try {
      const config = benchConfig(bench.tableName);
      const setup = buildContainer(config, { client: bench.setupClient });
      await createPool(setup.deps, { name: POOL });
      await createRange(setup.deps, { pool: POOL, cidr });
      const historyMeter = new Meter();
      const summaryMeter = new Meter();
      const allocationMeter = new Meter();
      const historyContainer = buildContainer(config, { client: bench.extraClient(historyMeter, 3) });
      const recorder = historyContainer.mirror.history!;
      // The summary's chunk writes carry the history's mark: counted apart, what its bytes add to each write.
      const chunkMarks = { writes: 0, units: 0 };
      const occupancy = buildContainer(config, { client: bench.extraClient(summaryMeter, 3) }).deps.occupancy;
      const store: Pick<OccupancyStore, 'getChunk' | 'putChunk' | 'leaseStates'> = {
        getChunk: (pool, family, index) => occupancy.getChunk(pool, family, index),
        leaseStates: (pool, addresses) => occupancy.leaseStates(pool, addresses),
        putChunk: async (chunk, expected) => {
          const outcome = await occupancy.putChunk(chunk, expected);
          if (outcome === 'written' && chunk.historyThrough !== undefined) {
            chunkMarks.writes += 1;
            chunkMarks.units += markUnits(chunk);
          }
          return outcome;
        },
      };
      const summary = new SummaryMirror({ store, clock: systemClock });

      // The stand-in stream: changes in commit order as their writers saw them, with DynamoDB's second-rounded time.
      const queue: { change: LeaseChange; at: number }[] = [];
      let sequence = 0;
      const push = (before: Lease | undefined, after: Lease | undefined) => {
        const lease = (after ?? before)!;
        const id = String((sequence += 1)).padStart(21, '0');
        const atMs = Math.floor(Date.now() / 1000) * 1000;
        queue.push({
          change: {
            id,
            pool: lease.pool,
            address: lease.address,
            state: after ? LeaseItemPresence.Held : LeaseItemPresence.Gone,
            transition: { ...(before ? { before } : {}), ...(after ? { after } : {}), atMs, byTtl: false },
          },
          at: performance.now(),
        });
      };
      const lag = { history: [] as number[], summary: [] as number[] };
      let batches = 0;
      // The stream function's projections as deployed (the history first, its mark on the summary's chunk writes),
      // each part timed as it finishes; no legacy ranges here. One instance for the run, as one warm container.
      let timing: (target: number[]) => <R extends { failed: readonly string[] }>(result: R) => R = () => (r) => r;
      const projections = new LeaseProjections({
        summary: { apply: (c, marks) => summary.apply(c, marks).then(timing(lag.summary)) },
        legacy: { apply: async () => ({ failed: [], ranges: [], active: false }) },
        history: { apply: (c) => recorder.apply(c).then(timing(lag.history)) },
        marks: historyContainer.stores.history,
      });
      const deliver = async () => {
        const batch = queue.splice(0, BATCH);
        if (!batch.length) return;
        batches += 1;
        const changes = batch.map((b) => b.change);
        timing =
          (target: number[]) =>
          <R extends { failed: readonly string[] }>(result: R): R => {
            const failed = new Set(result.failed);
            const now = performance.now();
            for (const b of batch) if (!failed.has(b.change.id)) target.push(now - b.at);
            return result;
          };
        const result = await projections.apply(changes);
        const failedIds = new Set(result.failed);
        const again = batch.filter((x) => failedIds.has(x.change.id));
        if (again.length) queue.unshift(...again);
      };
      let running = true;
      const poller = (async () => {
        while (running || queue.length) {
          const started = performance.now();
          await deliver();
          await new Promise((r) => setTimeout(r, Math.max(0, POLL_MS - (performance.now() - started))));
        }
      })();

      const cycles: { address: string; claimUid: string }[] = [];
      const deadline = performance.now() + windowMs;
      await Promise.all(
        Array.from({ length: callers }, async (_, w) => {
          const container = buildContainer(config, { client: bench.extraClient(allocationMeter, 5) });
          for (let n = 0; performance.now() < deadline; n += 1) {
            const name = `c-${w}-${n}`;
            const { claim } = await createClaim(container.deps, {
              pool: POOL,
              name,
              owner: { kind: 'Pod', name: `pod-${w}-${n}`, uid: `uid-${w}-${n}` },
              labels: cniLabels,
              createdBy: nodeRole,
            });
            const lease = leaseOfClaim(claim, claim.addresses[0]!);
            push(undefined, lease);
            await deleteClaim(container.deps, POOL, name, { caller: nodeRole });
            push(lease, undefined);
            cycles.push({ address: lease.address, claimUid: claim.uid });
          }
        }),
      );
      running = false;
      await poller;

      // Every cycle's holding is there, once, with the claim's labels and creator.
      const byAddress = new Map<string, string[]>();
      for (const c of cycles) byAddress.set(c.address, [...(byAddress.get(c.address) ?? []), c.claimUid]);
      let missing = 0;
      let duplicated = 0;
      let unlabelled = 0;
      for (const [address, uids] of byAddress) {
        const held: Holding[] = [];
        let before: string | undefined;
        do {
          const page = await setup.deps.history.addressHoldings(
            POOL,
            address,
            100,
            before === undefined ? {} : { before },
          );
          held.push(...page.items);
          before = page.next;
        } while (before !== undefined);
        for (const uid of uids) {
          const found = held.filter((h) => h.claimUid === uid);
          if (found.length === 0) missing += 1;
          if (found.length > 1) duplicated += 1;
          if (
            found[0] &&
            (found[0].labels?.['cni.ipam/network'] !== 'pods' || found[0].createdBy?.arn !== nodeRole.arn)
          )
            unlabelled += 1;
        }
      }
      if (missing) failures.push(`history: ${missing} of ${cycles.length} cycles have no holding`);
      if (duplicated) failures.push(`history: ${duplicated} cycles have more than one holding`);
      if (unlabelled) failures.push(`history: ${unlabelled} holdings lack the claim's labels or creator`);

      const usage = historyMeter.snapshot();
      const mirror = summaryMeter.snapshot();
      const perCycle = (n: number) => round(n / Math.max(1, cycles.length), 3);
      // Item sizes: a holding and a lease as the codec writes them, without and with what the claim carries.
      const lease = (labels?: Labels, createdBy?: Principal): Lease => ({
        pool: POOL,
        address: '10.0.12.34',
        family: 'IPv4',
        range: '10.0.0.0-20',
        claim: 'c-3-1234',
        claimUid: '7f0c2e52-8d4b-4c1e-9a57-3b1f0c2d9e11',
        owner: { kind: 'Pod', name: 'pod-3-1234', uid: '2f6b1c9e-5a3d-4e7f-8b21-6c0d9a4e3f12' },
        createdAt: '2026-11-26T20:00:00.000Z',
        ...(labels ? { labels } : {}),
        ...(createdBy ? { createdBy } : {}),
      });
      const holding = (l: Lease): Holding => ({
        ...holdingOfLease(l),
        to: '2026-11-26T20:00:05.000Z',
        toExact: false,
        endReason: 'released',
      });
      const cases = [
        { carries: 'nothing (no labels, unsigned)', labels: undefined, createdBy: undefined },
        { carries: '3 CNI labels + an assumed-role principal', labels: cniLabels, createdBy: nodeRole },
        { carries: '32 labels of the longest form + principal', labels: maxLabels, createdBy: nodeRole },
      ];
      const sizes = cases.map((c) => {
        const l = lease(c.labels, c.createdBy);
        const holdingBytes = sizeOf(holdingToItem(holding(l), 1_900_000_000));
        const leaseBytes = sizeOf(leaseToItem(l, 8));
        return {
          carries: c.carries,
          holdingBytes,
          holdingWriteUnits: writeUnits(holdingBytes),
          leaseBytes,
          leaseWriteUnits: writeUnits(leaseBytes),
        };
      });
      const bare = sizes[0]!;
      const rows: Record<string, unknown>[] = [
        {
          row: 'cycles',
          callers,
          seconds: round(windowMs / 1000, 0),
          cycles: cycles.length,
          batches,
          historyWriteUnitsPerCycle: perCycle(usage.writeUnits + usage.indexWriteUnits + chunkMarks.units),
          historyTableWriteUnitsPerCycle: perCycle(usage.writeUnits),
          historyIndexWriteUnitsPerCycle: perCycle(usage.indexWriteUnits),
          historyReadUnitsPerCycle: perCycle(usage.readUnits),
          historyRequestsPerCycle: perCycle(usage.requests),
          markItemWrites: usage.operations.UpdateItem ?? 0,
          chunkWritesCarryingMark: chunkMarks.writes,
          markWriteUnitsOnChunks: chunkMarks.units,
          mirrorWriteUnitsPerCycle: perCycle(mirror.writeUnits + mirror.indexWriteUnits),
          historyLagP50Ms: round(percentile(lag.history, 50), 0),
          historyLagP99Ms: round(percentile(lag.history, 99), 0),
          mirrorLagP50Ms: round(percentile(lag.summary, 50), 0),
          mirrorLagP99Ms: round(percentile(lag.summary, 99), 0),
          operations: usage.operations,
        },
        ...sizes.map((s) => ({
          row: 'item sizes',
          carries: s.carries,
          holdingBytes: s.holdingBytes,
          holdingWriteUnits: s.holdingWriteUnits,
          // Stored twice (the item and its owner index entry, projection ALL), each with DynamoDB's 100 bytes of overhead.
          storageGBPerMillionHoldings: round((2 * (s.holdingBytes + 100) * 1e6) / 1e9, 2),
          leaseBytes: s.leaseBytes,
          leaseBytesAdded: s.leaseBytes - bare.leaseBytes,
          // In the claim transaction a lease is written at 2 units per started KB, and again (1 per KB) in the listing index.
          allocateWriteUnitsAddedPerAddress: 3 * (s.leaseWriteUnits - bare.leaseWriteUnits),
        })),
      ];
      const cycle = rows[0]!;
      ctx.log(
        `history: ${cycles.length} cycles, ${String(cycle.historyWriteUnitsPerCycle)} WCU/cycle, lag p50/p99 ${String(cycle.historyLagP50Ms)}/${String(cycle.historyLagP99Ms)} ms (mirror ${String(cycle.mirrorLagP50Ms)}/${String(cycle.mirrorLagP99Ms)} ms)`,
      );
      const notes = [
        `Pool ${POOL} with range ${cidr}, history kept 90 days (the default); ${callers} callers (one container each) ran allocate-and-release cycles for ${round(windowMs / 1000, 0)} s; the stream stand-in delivered batches of up to ${BATCH} per ${POLL_MS} ms poll to the stream function's projections (LeaseProjections as deployed, one warm container: the history and the occupancy summary side by side, each chunk put once the history has recorded the batch, carrying its mark).`,
        "A cycle ends one holding: one conditional PutItem of its item (1 write unit while it is under 1 KB) plus its owner index entry (GSI2, 1 unit). The pool's completeness mark rides on the summary chunk writes the same batch makes anyway (chunkWritesCarryingMark; markWriteUnitsOnChunks is what its bytes add to them, counted in the history's units: a unit only where they cross a KB boundary), and goes to the pool's mark item (an UpdateItem, markItemWrites) only in a batch that writes no chunk of the pool while the newest mark the container put or read on a chunk is more than 10 s of stream time older (MARK_ITEM_SLACK_MS). Its reads: a batch with a deletion queries the pool's repair events of the last 15 minutes (one Query per pool per batch), and the pool item once a minute.",
        "Lag is from the writer's report of a change to the end of the batch that recorded it in each projection, under this run's load (the callers, both projections and DynamoDB Local on 2 shared cores); in production add DynamoDB Streams' own delay before a poll sees the record.",
        "Storage per million holdings: (item bytes + 100) x 2 (table and owner index) x 1e6. The lease item carries copies of the claim's labels and createdBy so the history can be made from lease images alone; leaseBytesAdded is that copy, and allocateWriteUnitsAddedPerAddress what it adds to an allocation (0 while the lease stays under 1 KB).",
      ];
      return {
        name: 'history',
        title: 'Address history cost and lag',
        status: failures.length ? 'failed' : 'ok',
        failures,
        notes,
        parameters: { cidr, callers, windowMs, batch: BATCH, pollMs: POLL_MS },
        rows,
        seconds: round((performance.now() - t0) / 1000, 1),
        charts: [],
      };
    } finally {
      await bench.close();
    }
  },
};
