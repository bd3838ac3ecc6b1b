import type { IpamEvent } from '../../core/events.ts';
import type { DnsNameStatus, DnsStatusStore } from '../../core/dns/status.ts';
import { eventToItem, newEventId, type Item } from './codec.ts';
import { itemIsAbsent } from './conditions.ts';
import { Entity, keys, SCHEMA_VERSION } from './keys.ts';
import { queryAll, type Table, type WriteOp } from './table.ts';

const statusOf = (item: Item): DnsNameStatus => ({
  name: item.name as string,
  kind: item.kind as DnsNameStatus['kind'],
  state: item.state as DnsNameStatus['state'],
  ...(typeof item.reason === 'string' ? { reason: item.reason } : {}),
});

/** The claims' DNS name statuses on the table: one item a name of a claim incarnation, in its events partition. */
export class TableDnsStatusStore implements DnsStatusStore {
  constructor(private readonly table: Table) {}

  async statuses(pool: string, claimUid: string): Promise<DnsNameStatus[]> {
    const { PK } = keys.dnsStatus(pool, claimUid, '');
    const items = await queryAll(this.table, {
      partition: PK,
      sort: { between: ['DNS#', 'DNS#\uffff'] },
      consistent: true,
    });
    return items.map(statusOf).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async putStatus(pool: string, claimUid: string, status: DnsNameStatus, event?: IpamEvent): Promise<void> {
    const put: WriteOp = {
      kind: 'put',
      item: {
        ...keys.dnsStatus(pool, claimUid, status.name),
        entity: Entity.DnsStatus,
        schema: SCHEMA_VERSION,
        pool,
        claimUid,
        ...status,
      },
    };
    if (!event) {
      await this.table.write(put);
      return;
    }
    const verdicts = await this.table.transact([
      put,
      { kind: 'put', item: eventToItem(event, newEventId()), condition: itemIsAbsent() },
    ]);
    if (verdicts) throw new Error(`DNS status of ${status.name} not written`);
  }
}
