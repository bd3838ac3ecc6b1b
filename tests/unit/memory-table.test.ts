import { describe, expect, it } from 'vitest';
import { MemoryTable, type Fault, type TableCall } from '../../shared/adapters/memory/memory-table.ts';
import { itemIsAbsent } from '../../shared/adapters/dynamodb/conditions.ts';
import type { Item } from '../../shared/adapters/dynamodb/codec.ts';
import type { Query, WriteOp } from '../../shared/adapters/dynamodb/table.ts';
import { NotReadyError } from '../../shared/core/errors.ts';

// What only the memory engine has: injectable index lag and faults, TTL deletion on demand, a bounded history.
// The rules it shares with DynamoDB are in tests/int/table-contract.int.test.ts.

const listed = (n: number): Item => ({ PK: `ITEM#${n}`, SK: 'ITEM', GSI1PK: 'LIST', GSI1SK: `s${n}`, n });
const put = (item: Item): WriteOp => ({ kind: 'put', item });
const listing: Query = { index: 'GSI1', partition: 'LIST' };

describe('Class: MemoryTable', () => {
  describe('Option: indexLag', () => {
    it('hides the latest write from an index query with lag 1 and shows it with lag 0', async () => {
      // Prepare
      let lag = 1;
      const table = new MemoryTable({ indexLag: () => lag });
      await table.write(put(listed(1)));
      await table.write(put(listed(2)));
      // Act
      const stale = await table.query(listing);
      lag = 0;
      const fresh = await table.query(listing);
      // Assess
      expect(stale.items.map((i) => i.n)).toEqual([1]);
      expect(fresh.items.map((i) => i.n)).toEqual([1, 2]);
    });

    it('shows a deleted item to a lagging index, and the state before an update', async () => {
      const table = new MemoryTable({ indexLag: () => 2 });
      await table.write(put(listed(1)));
      await table.write({ kind: 'update', key: { PK: 'ITEM#1', SK: 'ITEM' }, update: { set: { n: 10 } } });
      await table.write({ kind: 'delete', key: { PK: 'ITEM#1', SK: 'ITEM' } });
      expect((await table.query(listing)).items).toEqual([listed(1)]);
      expect(await table.get({ PK: 'ITEM#1', SK: 'ITEM' })).toBeUndefined();
    });

    it('keeps consistent table queries, get and batchGet fresh, and lets eventually consistent table queries lag', async () => {
      // Prepare
      const asked: Query[] = [];
      const table = new MemoryTable({ indexLag: (q) => (asked.push(q), 1) });
      await table.write(put({ PK: 'P', SK: 'a' }));
      await table.write(put({ PK: 'P', SK: 'b' }));
      // Act
      const consistent = await table.query({ partition: 'P', consistent: true });
      const eventual = await table.query({ partition: 'P' });
      // Assess
      expect(consistent.items.map((i) => i.SK)).toEqual(['a', 'b']);
      expect(eventual.items.map((i) => i.SK)).toEqual(['a']);
      expect(await table.get({ PK: 'P', SK: 'b' })).toEqual({ PK: 'P', SK: 'b' });
      expect(await table.batchGet([{ PK: 'P', SK: 'b' }])).toEqual([{ PK: 'P', SK: 'b' }]);
      expect(asked).toEqual([{ partition: 'P' }]);
    });

    it('counts each item of a transaction as one write, so a lagging index may see part of a transaction', async () => {
      const table = new MemoryTable({ indexLag: () => 1 });
      expect(await table.transact([put(listed(1)), put(listed(2))])).toBeUndefined();
      expect((await table.query(listing)).items.map((i) => i.n)).toEqual([1]);
    });
  });

  describe('Option: faults', () => {
    it('throttles without applying, and says which call it was', async () => {
      // Prepare
      const calls: TableCall[] = [];
      const table = new MemoryTable({ faults: (call) => (calls.push(call), { kind: 'throttle' }) });
      // Act / Assess
      await expect(table.write(put({ PK: 'P', SK: 'a' }))).rejects.toThrow(NotReadyError);
      await expect(table.get({ PK: 'P', SK: 'a' })).rejects.toThrow('throttling');
      expect(calls.map((c) => [c.method, c.keys])).toEqual([
        ['write', [{ PK: 'P', SK: 'a' }]],
        ['get', [{ PK: 'P', SK: 'a' }]],
      ]);
      expect(table.items()).toEqual([]);
      expect(table.calls()).toEqual({ get: 1, batchGet: 0, write: 1, transact: 0, query: 0, describe: 0 });
    });

    it('times out after committing, or without committing, as the fault says', async () => {
      // Prepare
      let fault: Fault | undefined = { kind: 'timeout', committed: true };
      const table = new MemoryTable({ faults: () => fault });
      // Act
      await expect(table.transact([put({ PK: 'P', SK: 'a' }), put({ PK: 'P', SK: 'b' })])).rejects.toThrow(
        'did not answer in time',
      );
      fault = { kind: 'timeout', committed: false };
      await expect(table.write(put({ PK: 'P', SK: 'c' }))).rejects.toThrow(NotReadyError);
      fault = undefined;
      // Assess
      expect(table.items().map((i) => i.SK)).toEqual(['a', 'b']);
    });

    it("cancels a transaction with TransactionConflict on the conflicting ops, and refuses a write with NotReadyError (SdkTable's TransactionConflictException)", async () => {
      // Prepare
      let fault: Fault | undefined = { kind: 'conflict', ops: [1] };
      const table = new MemoryTable({ faults: () => fault });
      // Act
      const verdicts = await table.transact([put({ PK: 'P', SK: 'a' }), put({ PK: 'P', SK: 'b' })]);
      fault = { kind: 'conflict' };
      const all = await table.transact([put({ PK: 'P', SK: 'a' })]);
      const single = table.write(put({ PK: 'P', SK: 'a' }));
      // Assess
      expect(verdicts).toEqual([{ code: 'None' }, { code: 'TransactionConflict' }]);
      expect(all).toEqual([{ code: 'TransactionConflict' }]);
      await expect(single).rejects.toBeInstanceOf(NotReadyError);
      expect(table.items()).toEqual([]);
    });
  });

  describe('Method: expireTtl', () => {
    it('deletes items whose ttl is at or before now, and no others', async () => {
      // Prepare
      const table = new MemoryTable();
      await table.write(put({ PK: 'P', SK: 'past', ttl: 99 }));
      await table.write(put({ PK: 'P', SK: 'now', ttl: 100 }));
      await table.write(put({ PK: 'P', SK: 'future', ttl: 101 }));
      await table.write(put({ PK: 'P', SK: 'none' }));
      await table.write(put({ PK: 'P', SK: 'text', ttl: '50' }));
      // Act
      const deleted = table.expireTtl(100);
      // Assess
      expect(deleted).toEqual([
        { PK: 'P', SK: 'now' },
        { PK: 'P', SK: 'past' },
      ]);
      expect(table.items().map((i) => i.SK)).toEqual(['future', 'none', 'text']);
    });

    it('leaves items expired more than five years ago, as DynamoDB TTL does', async () => {
      const table = new MemoryTable();
      await table.write(put({ PK: 'P', SK: 'ancient', ttl: 1 }));
      expect(table.expireTtl(6 * 365 * 24 * 3600)).toEqual([]);
    });
  });

  describe('Option: history', () => {
    it('keeps no more than the live items plus the history window, however many writes', async () => {
      // Prepare
      const table = new MemoryTable({ history: 10 });
      // Act
      for (let i = 0; i < 5000; i += 1) {
        await table.write(put({ PK: 'HOT', SK: 'x', i }));
        await table.write(put({ PK: `COLD#${i}`, SK: 'x' }));
        await table.write({ kind: 'delete', key: { PK: `COLD#${i}`, SK: 'x' } });
      }
      // Assess
      expect(table.items()).toEqual([{ PK: 'HOT', SK: 'x', i: 4999 }]);
      expect(table.retainedVersions()).toBeLessThanOrEqual(1 + 10 + 1);
    });

    it('keeps index memberships only for keys with a kept version in that index partition', async () => {
      // Prepare: keys that come and go in one index partition, and one that moves between two.
      const table = new MemoryTable({ history: 10 });
      // Act
      for (let i = 0; i < 2000; i += 1) {
        await table.write(put({ PK: `GONE#${i}`, SK: 'x', GSI1PK: 'LIST', GSI1SK: `k${i}` }));
        await table.write({ kind: 'delete', key: { PK: `GONE#${i}`, SK: 'x' } });
        await table.write(put({ PK: 'MOVER', SK: 'x', GSI1PK: `LIST#${i % 2}`, GSI1SK: 'm' }));
      }
      await table.write(put({ PK: 'STAYS', SK: 'x', GSI1PK: 'LIST', GSI1SK: 'zz' }));
      // Assess: what the listing shows is unchanged, and the memberships are bounded by the window, not the writes.
      expect((await table.query({ index: 'GSI1', partition: 'LIST' })).items.map((i) => i.PK)).toEqual(['STAYS']);
      expect((await table.query({ index: 'GSI1', partition: 'LIST#1' })).items.map((i) => i.PK)).toEqual(['MOVER']);
      expect(table.retainedIndexMembers()).toBeLessThanOrEqual(10 + 2 + 2);
    });

    it('answers a lag beyond the window as the window', async () => {
      const table = new MemoryTable({ history: 2, indexLag: () => 50 });
      for (let n = 1; n <= 5; n += 1) await table.write(put(listed(n)));
      expect((await table.query(listing)).items.map((i) => i.n)).toEqual([1, 2, 3]);
    });
  });

  describe('Values', () => {
    it('copies items in and out, binary included', async () => {
      // Prepare
      const table = new MemoryTable();
      const item = { PK: 'P', SK: 'a', bytes: new Uint8Array([1, 2]), nested: { list: [1] } };
      await table.write({ kind: 'put', item, condition: itemIsAbsent() });
      // Act
      item.nested.list.push(2);
      const got = await table.get({ PK: 'P', SK: 'a' });
      (got!.nested as { list: number[] }).list.push(3);
      // Assess
      expect(await table.get({ PK: 'P', SK: 'a' })).toEqual({
        PK: 'P',
        SK: 'a',
        bytes: new Uint8Array([1, 2]),
        nested: { list: [1] },
      });
      expect((await table.get({ PK: 'P', SK: 'a' }))!.bytes).toBeInstanceOf(Uint8Array);
    });

    it('lists items in PK then SK byte order and is named by its options', async () => {
      const table = new MemoryTable({ name: 'sim' });
      await table.write(put({ PK: 'B', SK: 'a' }));
      await table.write(put({ PK: 'A', SK: '\u{1F600}' }));
      await table.write(put({ PK: 'A', SK: '\uFFFD' }));
      expect(table.items().map((i) => `${i.PK}/${i.SK}`)).toEqual(['A/\uFFFD', 'A/\u{1F600}', 'B/a']);
      expect(table.name).toBe('sim');
      expect(await table.describe()).toBe('ACTIVE');
    });
  });
});
