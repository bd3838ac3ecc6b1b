import type { IpFamily } from '../../core/ip/address.ts';
import {
  crossingMessage,
  type Crossing,
  type ExhaustionState,
  type ExhaustionStore,
} from '../../core/occupancy/exhaustion.ts';
import { EventReason } from '../../core/use-cases/reconcile-ports.ts';
import { eventToItem, newEventId, type Item } from './codec.ts';
import { both, itemExists, itemIsAbsent, versionIs } from './conditions.ts';
import { Entity, keys, SCHEMA_VERSION } from './keys.ts';
import type { Table, WriteOp } from './table.ts';

const stateOf = (item: Item): ExhaustionState => ({
  level: item.level as number,
  version: item.version as number,
  since: item.since as string,
});

/** The exhaustion levels on the table: one item a pool family, each change of level written with its crossings' events. */
export class TableExhaustionStore implements ExhaustionStore {
  constructor(private readonly table: Table) {}

  async getState(pool: string, family: IpFamily): Promise<ExhaustionState | undefined> {
    const item = await this.table.get(keys.warning(pool, family));
    return item ? stateOf(item) : undefined;
  }

  /** Every family's level of a pool (one query). */
  async states(pool: string): Promise<ReadonlyMap<IpFamily, ExhaustionState>> {
    const page = await this.table.query({ partition: keys.warnings(pool), consistent: true });
    return new Map(page.items.map((item) => [item.SK as IpFamily, stateOf(item)]));
  }

  async putState(
    pool: string,
    family: IpFamily,
    write: {
      readonly state: ExhaustionState;
      readonly expected: number | 'absent';
      readonly crossings: readonly Crossing[];
    },
  ): Promise<'written' | 'changed'> {
    const { state, expected, crossings } = write;
    const condition = expected === 'absent' ? itemIsAbsent() : both(itemExists(), versionIs(expected));
    const put: WriteOp = {
      kind: 'put',
      item: {
        ...keys.warning(pool, family),
        entity: Entity.Exhaustion,
        schema: SCHEMA_VERSION,
        pool,
        family,
        ...state,
      },
      condition,
    };
    const events: WriteOp[] = crossings.map((c) => ({
      kind: 'put',
      item: eventToItem(
        {
          pool,
          time: c.time,
          reason: c.direction === 'below' ? EventReason.PoolFreeBelowThreshold : EventReason.PoolFreeRecovered,
          object: `pool/${pool}`,
          message: crossingMessage(c),
        },
        newEventId(),
      ),
      condition: itemIsAbsent(),
    }));
    if (events.length === 0) return (await this.table.write(put)).ok ? 'written' : 'changed';
    return (await this.table.transact([put, ...events])) === undefined ? 'written' : 'changed';
  }
}
