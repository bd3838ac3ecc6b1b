import { DeleteItemCommand, GetItemCommand, PutItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { randomUUID } from 'node:crypto';
import { Bitmap } from '../../shared/core/bitmap/bitmap.ts';
import { formatAddress } from '../../shared/core/ip/address.ts';
import { capacity, hostAt, parseCidr, type Cidr } from '../../shared/core/ip/cidr.ts';
import { sleep } from '../lib/storage.ts';
import type { AllocationOutcome, Caller, Strategy, StrategyContext, StrategyRun } from './strategy.ts';

/** How long a taken lock stays valid if its holder dies (whereabouts' leader-election LeaseDuration). */
const LOCK_LEASE_MS = 1500;
/** client-go's JitterUntil factor: a retry waits between `period` and `period * 2.2`. */
const JITTER = 1.2;

const THROTTLES = new Set(['ProvisionedThroughputExceededException', 'ThrottlingException']);

function isThrottle(error: unknown): boolean {
  return THROTTLES.has((error as { name?: string }).name ?? '');
}

/**
 * The whereabouts design on DynamoDB (benchmark-only code): one lock item per pool, taken with a conditional put
 * ("absent or expired"), then a read-modify-write of the pool's one allocation-map item, then the lock is released.
 * A caller that finds the lock taken polls again after the retry period, jittered as client-go's leader election
 * does. The allocation map is stored as compactly as possible, one bit per address (whereabouts keeps a map of pod
 * references, which for a /16 would not fit DynamoDB's 400 KB item limit), so the comparison favours this design.
 * Like whereabouts, the first free address from the start of the range is taken.
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
      const lockKey = { PK: { S: `BENCHLOCK#${ctx.pool}` }, SK: { S: 'LOCK' } };
      const mapKey = { PK: { S: `BENCHMAP#${ctx.pool}` }, SK: { S: 'MAP' } };
      const baseline = Bitmap.empty(size);

      const writeMap = (client: DynamoDBClient, bits: Bitmap, version: number, expected?: number) => {
        const data = bits.encode();
        return client.send(
          new PutItemCommand({
            TableName: ctx.tableName,
            Item: {
              ...mapKey,
              entity: { S: 'bench-map' },
              version: { N: String(version) },
              ...(data.length ? { data: { B: data } } : {}),
            },
            ...(expected === undefined
              ? {}
              : {
                  ConditionExpression: '#v = :v',
                  ExpressionAttributeNames: { '#v': 'version' },
                  ExpressionAttributeValues: { ':v': { N: String(expected) } },
                }),
          }),
        );
      };
      const readMap = async (client: DynamoDBClient): Promise<{ bits: Bitmap; version: number }> => {
        const out = await client.send(
          new GetItemCommand({ TableName: ctx.tableName, Key: mapKey, ConsistentRead: true }),
        );
        const data = out.Item?.data?.B ?? new Uint8Array();
        return { bits: Bitmap.decode(data, size), version: Number(out.Item?.version?.N ?? '0') };
      };
      await writeMap(ctx.setupClient, baseline, 0);

      return {
        async prefill(offsets) {
          for (const o of offsets) baseline.set(Number(o));
          await writeMap(ctx.setupClient, baseline, 0);
        },
        caller(): Caller {
          const me = randomUUID();
          const takeLock = async (): Promise<boolean> => {
            const now = Date.now();
            try {
              await ctx.client.send(
                new PutItemCommand({
                  TableName: ctx.tableName,
                  Item: {
                    ...lockKey,
                    entity: { S: 'bench-lock' },
                    owner: { S: me },
                    expiresAt: { N: String(now + LOCK_LEASE_MS) },
                  },
                  ConditionExpression: 'attribute_not_exists(PK) OR expiresAt < :now',
                  ExpressionAttributeValues: { ':now': { N: String(now) } },
                }),
              );
              return true;
            } catch (error) {
              if ((error as Error).name === 'ConditionalCheckFailedException' || isThrottle(error)) return false;
              throw error;
            }
          };
          const releaseLock = async (): Promise<void> => {
            for (let attempt = 0; attempt < 5; attempt += 1) {
              try {
                await ctx.client.send(
                  new DeleteItemCommand({
                    TableName: ctx.tableName,
                    Key: lockKey,
                    ConditionExpression: '#o = :me',
                    ExpressionAttributeNames: { '#o': 'owner' },
                    ExpressionAttributeValues: { ':me': { S: me } },
                  }),
                );
                return;
              } catch (error) {
                if ((error as Error).name === 'ConditionalCheckFailedException') return;
                if (!isThrottle(error)) throw error;
                await sleep(retryPeriodMs);
              }
            }
            // Left to expire after LOCK_LEASE_MS, as a crashed holder's lock would.
          };
          return {
            async allocate(_claimName, signal): Promise<AllocationOutcome> {
              while (!(await takeLock())) {
                if (signal?.aborted) return { kind: 'busy', reason: 'stopped while waiting for the lock' };
                await sleep(retryPeriodMs * (1 + JITTER * Math.random()));
              }
              try {
                const { bits, version } = await readMap(ctx.client);
                const bit = bits.firstClear(0);
                if (bit === undefined) return { kind: 'full' };
                bits.set(bit);
                await writeMap(ctx.client, bits, version + 1, version);
                return {
                  kind: 'allocated',
                  address: formatAddress({ family: cidr.family, value: hostAt(cidr, BigInt(bit)) }),
                };
              } catch (error) {
                if (isThrottle(error)) return { kind: 'busy', reason: 'throttled under the lock' };
                // The lock's lease ran out while this caller held it (a slow engine, a long pause) and another caller
                // took it: the map's version catches the second writer, as whereabouts relies on the IPPool's
                // resourceVersion. Without that check this would be a duplicate.
                if ((error as Error).name === 'ConditionalCheckFailedException')
                  return { kind: 'busy', reason: 'lost the lock: its lease expired during the update' };
                throw error;
              } finally {
                await releaseLock();
              }
            },
          };
        },
        async undo() {
          await writeMap(ctx.setupClient, baseline, 0);
        },
        async inspect() {
          const { bits } = await readMap(ctx.setupClient);
          const held: { address: string; holder: string }[] = [];
          bits.forEachSet((bit) => held.push({ address: addressOf(cidr, bit), holder: 'map' }));
          return { held, problems: [] };
        },
      };
    },
  };
}

function addressOf(cidr: Cidr, bit: number): string {
  return formatAddress({ family: cidr.family, value: hostAt(cidr, BigInt(bit)) });
}
