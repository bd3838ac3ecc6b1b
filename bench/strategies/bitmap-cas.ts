import { buildContainer } from '../../shared/adapters/composition.ts';
import { bitmapToItem } from '../../shared/adapters/dynamodb/codec.ts';
import { loadConfig } from '../../shared/config.ts';
import { Bitmap, bitOf } from '../../shared/core/bitmap/bitmap.ts';
import { legacyWindow } from '../../shared/core/bitmap/bitmap.ts';
import { NotReadyError, RangeFullError } from '../../shared/core/errors.ts';
import { parseAddress } from '../../shared/core/ip/address.ts';
import { parseCidr } from '../../shared/core/ip/cidr.ts';
import { createClaim } from '../../shared/core/use-cases/claims.ts';
import { createPool } from '../../shared/core/use-cases/pools.ts';
import { createRange } from '../../shared/core/use-cases/ranges.ts';
import { batchWrite, putRequest, scanEntities } from '../lib/storage.ts';
import { benchOwner, deleteLeases, inspectLeases, prefillLeases } from './lease-items.ts';
import type { Caller, Strategy, StrategyContext, StrategyRun } from './strategy.ts';

/**
 * The legacy allocator as shipped (MultiCIDRServiceAllocator=false): read the range's one bitmap item, pick a zero
 * bit, one transaction writes claim + lease + bitmap on `version`, a lost race reads again (Kubernetes' bitmap.go
 * over a RangeAllocation with resourceVersion).
 */
export const bitmapCasStrategy: Strategy = {
  name: 'bitmap-cas',
  description:
    "legacy allocator as shipped: read the range's bitmap item, pick a zero bit, one transaction (claim + lease + bitmap if version unchanged), retry on a lost race",
  unavailable: async () => undefined,
  async open(ctx: StrategyContext): Promise<StrategyRun> {
    const config = loadConfig({
      TABLE_NAME: ctx.tableName,
      LOCAL_STACK: 'true',
      LEASE_INDEX_SHARDS: '8',
      FEATURE_GATES: 'MultiCIDRServiceAllocator=false',
    });
    const setup = buildContainer(config, { client: ctx.setupClient });
    await createPool(setup.deps, { name: ctx.pool });
    const { range } = await createRange(setup.deps, { pool: ctx.pool, cidr: ctx.cidr, legacy: true });
    const cidr = parseCidr(ctx.cidr);
    const window = legacyWindow(cidr);
    const baseline = Bitmap.empty(window);
    // Restores write ever higher versions, so a caller holding an old read can never match a restored bitmap.
    let version = 1;
    const writeBitmap = async () => {
      version += 1000;
      await batchWrite(ctx.setupClient, ctx.tableName, [
        putRequest(
          bitmapToItem({
            pool: ctx.pool,
            rangeName: range.name,
            allocation: { range: ctx.cidr, data: baseline.encode(), version },
          }),
        ),
      ]);
    };
    await writeBitmap();
    let prefills = 0;
    return {
      async prefill(offsets) {
        prefills += 1;
        await prefillLeases(ctx, range.name, offsets, config.leaseIndexShards, String(prefills));
        for (const o of offsets) baseline.set(Number(o));
        await writeBitmap();
      },
      caller(index): Caller {
        const { deps } = buildContainer(config, { client: ctx.client });
        return {
          // The only cache a legacy container keeps is the pool view; the bitmap is read on every allocation.
          async warm() {
            await deps.views.get(ctx.pool, deps.clock.nowMs(), true);
          },
          async allocate(claimName) {
            try {
              const { claim } = await createClaim(deps, { pool: ctx.pool, name: claimName, owner: benchOwner(index) });
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
        await writeBitmap();
      },
      async inspect() {
        const leases = await inspectLeases(ctx);
        const [item] = await scanEntities(ctx.setupClient, ctx.tableName, 'bitmap');
        const problems = [...leases.problems];
        const bits = item ? Bitmap.decode(item.data as Uint8Array, window) : Bitmap.empty(window);
        for (const address of leases.leased) {
          const bit = bitOf(cidr, parseAddress(address).value);
          if (bit !== undefined && !bits.has(bit)) problems.push(`lease ${address} has no bit in the bitmap`);
        }
        if (bits.count() !== leases.leased.size)
          problems.push(`bitmap has ${bits.count()} bits set for ${leases.leased.size} leases`);
        return { held: leases.held, problems };
      },
    };
  },
};
