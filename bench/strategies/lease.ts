import { buildContainer } from '../../shared/adapters/composition.ts';
import { loadConfig, type Config } from '../../shared/config.ts';
import { PickStrategy } from '../../shared/core/allocator/lease-allocator.ts';
import { HintSource } from '../../shared/core/allocator/hint.ts';
import { NotReadyError, RangeFullError } from '../../shared/core/errors.ts';
import { parseCidr } from '../../shared/core/ip/cidr.ts';
import { hostIntervals, rangesOf } from '../../shared/core/base/pool-geometry.ts';
import { createClaim } from '../../shared/core/use-cases/claims.ts';
import { createPool } from '../../shared/core/use-cases/pools.ts';
import { createRange } from '../../shared/core/use-cases/ranges.ts';
import { benchOwner, deleteLeases, inspectLeases, prefillLeases } from './lease-items.ts';
import { StreamFeed } from '../lib/stream-feed.ts';
import { Meter } from '../lib/bench-client.ts';
import type { Caller, Strategy, StrategyContext, StrategyRun } from './strategy.ts';

/** The configuration the handlers would read, for a benchmark table. */
export function benchConfig(tableName: string): Config {
  return loadConfig({ TABLE_NAME: tableName, LOCAL_STACK: 'true', LEASE_INDEX_SHARDS: '8' });
}

/**
 * Per-IP leases through the shipped code path: `createClaim` of the use cases on a container from `buildContainer`,
 * one container per caller (its own hint and pool-view caches), the adapter's DynamoStore on the metered client.
 */
export function leaseStrategy(strategy: PickStrategy): Strategy {
  const name = strategy === PickStrategy.Hinted ? 'lease' : 'lease-blind';
  return {
    name,
    description:
      strategy === PickStrategy.Hinted
        ? 'per-IP leases as shipped: the occupancy summary kept by the stream function, random free picks (upper band first), near full a batch read of the few free, one transaction (claim + lease + marker), the post-commit pool read'
        : 'per-IP leases without the hint: each candidate a uniform random pick',
    unavailable: async () => undefined,
    async open(ctx: StrategyContext): Promise<StrategyRun> {
      const config = benchConfig(ctx.tableName);
      const setup = buildContainer(config, { client: ctx.setupClient, strategy });
      await createPool(setup.deps, { name: ctx.pool });
      const { range } = await createRange(setup.deps, { pool: ctx.pool, cidr: ctx.cidr });
      const shards = config.leaseIndexShards;
      // The stream function keeps the occupancy summary the hint reads: fed every lease write of both clients, its
      // requests counted on a meter of its own (the scenarios show them per allocation next to the allocator's).
      const streamMeter = new Meter();
      const feed = new StreamFeed(buildContainer(config, { client: ctx.streamClient(streamMeter) }).mirror);
      ctx.tap.listener = (leases) => feed.push(leases);
      feed.start();
      let prefills = 0;
      return {
        async prefill(offsets) {
          prefills += 1;
          await prefillLeases(ctx, range.name, offsets, shards, String(prefills));
          await feed.drain();
        },
        settle: () => feed.drain(),
        async close() {
          ctx.tap.listener = undefined;
          await feed.stop();
        },
        streamLagMs: () => feed.stats.lagMs,
        streamUsage: () => streamMeter.snapshot(),
        caller(index): Caller {
          const { deps } = buildContainer(config, { client: ctx.client, strategy });
          return {
            async warm() {
              // lease-blind keeps no hint: nothing to refresh.
              if (strategy !== PickStrategy.Hinted) return;
              const view = await deps.views.get(ctx.pool, deps.clock.nowMs(), true);
              const family = parseCidr(ctx.cidr).family;
              // The same intervals the allocator asks the hint for, so its cache entry is the one refreshed.
              const source = view.pool.summarySince !== undefined ? HintSource.Summary : HintSource.Listing;
              await deps.hints.get({
                pool: ctx.pool,
                family,
                intervals: hostIntervals(rangesOf(view, family)),
                nowMs: deps.clock.nowMs(),
                force: true,
                source,
              });
            },
            async allocate(claimName) {
              try {
                const { claim } = await createClaim(deps, {
                  pool: ctx.pool,
                  name: claimName,
                  owner: benchOwner(index),
                });
                return { kind: 'allocated', address: claim.addresses[0]!.address };
              } catch (error) {
                if (error instanceof RangeFullError) return { kind: 'full' };
                if (error instanceof NotReadyError) return { kind: 'busy', reason: error.message };
                throw error;
              }
            },
          };
        },
        async undo(claims, unanswered) {
          await deleteLeases(ctx, claims, unanswered);
          await feed.drain();
        },
        inspect: () => inspectLeases(ctx),
      };
    },
  };
}
