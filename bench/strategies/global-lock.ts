import { randomUUID } from 'node:crypto';
import { SdkTable } from '../../shared/adapters/dynamodb/sdk-table.ts';
import { Bitmap } from '../../shared/core/bitmap/bitmap.ts';
import { capacity, parseCidr } from '../../shared/core/ip/cidr.ts';
import { addressOfBit, globalLockCaller, mapItem, mapKey } from '../../scripts/lib/designs.ts';
import { sleep } from '../lib/storage.ts';
import type { AllocationOutcome, Caller, Strategy, StrategyContext, StrategyRun } from './strategy.ts';

/**
 * The whereabouts design on DynamoDB (scripts/lib/designs.ts, the code the simulator's comparison runs): one lock item
 * per pool, taken with a conditional put ("absent or expired"), then a read-modify-write of the pool's one
 * allocation-map item, then the lock is released. A caller that finds the lock taken polls again after the retry
 * period, jittered as client-go's leader election does. The allocation map is stored as compactly as possible, one
 * bit per address (whereabouts keeps a map of pod references, which for a /16 would not fit DynamoDB's 400 KB item
 * limit), so the comparison favours this design. Like whereabouts, the first free address from the start of the range
 * is taken.
 *
 *   take lock   PutItem  LOCK  if absent or expired        (refused: wait retryPeriod x [1, 2.2], poll again)
 *   read map    GetItem  MAP   strongly consistent
 *   write map   PutItem  MAP   if version unchanged
 *   release     DeleteItem LOCK if still ours
 */
export function globalLockStrategy(retryPeriodMs: number): Strategy {
  return {
    name: `global-lock-${retryPeriodMs}ms`,
    description: `whereabouts design: one lock item, read-modify-write of the pool's allocation map, release; lock retry period ${retryPeriodMs} ms`,
    unavailable: async () => undefined,
    async open(ctx: StrategyContext): Promise<StrategyRun> {
      const cidr = parseCidr(ctx.cidr);
      const size = Number(capacity(cidr));
      const baseline = Bitmap.empty(size);
      const setup = new SdkTable(ctx.setupClient, ctx.tableName);
      const measured = new SdkTable(ctx.client, ctx.tableName);
      const writeBaseline = () => setup.write({ kind: 'put', item: mapItem(ctx.pool, baseline, 0) });
      await writeBaseline();
      const ports = { nowMs: () => Date.now(), unit: () => Math.random(), sleep };
      return {
        async prefill(offsets) {
          for (const o of offsets) baseline.set(Number(o));
          await writeBaseline();
        },
        caller(): Caller {
          const me = randomUUID();
          let signal: AbortSignal | undefined;
          const lock = globalLockCaller({
            table: measured,
            pool: ctx.pool,
            size,
            me,
            retryPeriodMs,
            ports,
            stopped: () => signal?.aborted ?? false,
          });
          return {
            async allocate(_claimName, abort): Promise<AllocationOutcome> {
              signal = abort;
              const out = await lock.allocate();
              if (out.kind === 'ok') return { kind: 'allocated', address: addressOfBit(cidr, out.value) };
              if (out.kind === 'full') return { kind: 'full' };
              return { kind: 'busy', reason: 'stopped waiting for the lock, throttled, or lost it during the update' };
            },
          };
        },
        async undo() {
          await writeBaseline();
        },
        async inspect() {
          const item = await setup.get(mapKey(ctx.pool));
          const bits = Bitmap.decode((item?.data as Uint8Array | undefined) ?? new Uint8Array(), size);
          const held: { address: string; holder: string }[] = [];
          bits.forEachSet((bit) => held.push({ address: addressOfBit(cidr, bit), holder: 'map' }));
          return { held, problems: [] };
        },
      };
    },
  };
}
