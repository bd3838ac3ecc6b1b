import { beforeAll, describe, expect, it } from 'vitest';
import { MemoryTable } from '../../shared/adapters/memory/memory-table.ts';
import { SdkTable } from '../../shared/adapters/dynamodb/sdk-table.ts';
import {
  attributeIs,
  hasLabels,
  belongsToClaim,
  isFreeAt,
  itemExists,
  itemIsAbsent,
  versionIs,
  type Condition,
} from '../../shared/adapters/dynamodb/conditions.ts';
import {
  BATCH_GET_LIMIT,
  ITEM_BYTES_LIMIT,
  queryAll,
  TRANSACTION_BYTES_LIMIT,
  TRANSACTION_LIMIT,
  type Query,
  type Table,
  type WriteOp,
} from '../../shared/adapters/dynamodb/table.ts';
import { plainItemSize } from '../../aws-emulation/item-size.ts';
import type { Item } from '../../shared/adapters/dynamodb/codec.ts';
import { freshTable } from '../support/dynamo.ts';
import { standaloneSimTable } from '../../sim/sim-table.ts';

/**
 * The contract of the Table port: the same cases on DynamoDB Local (SdkTable, the reference), on MemoryTable and on
 * the simulator's SimTable. A case that passes on one engine and fails on another is a difference in that model, to
 * be fixed there.
 */
const engines = [
  {
    engine: 'SdkTable on DynamoDB Local',
    make: async (): Promise<Table> => {
      const { client, tableName } = await freshTable('ipam-contract');
      return new SdkTable(client, tableName);
    },
    /** Where DynamoDB Local departs from DynamoDB itself (the cases below that use it cite the evidence). */
    local: true,
  },
  { engine: 'MemoryTable', make: async (): Promise<Table> => new MemoryTable(), local: false },
  // The simulator's engine (MemoryTable with latency, capacity and transactions in flight), in virtual time.
  { engine: 'SimTable', make: async (): Promise<Table> => standaloneSimTable(), local: false },
] as const;

/** The name of the error a call rejects with ('resolved' if it does not), so a case compares DynamoDB's names. */
const rejection = (call: Promise<unknown>): Promise<string> =>
  call.then(
    () => 'resolved',
    (error: unknown) => (error as Error).name,
  );

const put = (item: Item, condition?: Condition, returnOld?: boolean): WriteOp => ({
  kind: 'put',
  item,
  ...(condition ? { condition } : {}),
  ...(returnOld ? { returnOld } : {}),
});
const sks = (items: Item[]): unknown[] => items.map((i) => i.SK);

describe.each(engines)('Table contract: $engine', ({ make, local }) => {
  let table: Table;
  let counter = 0;
  /** A partition of its own for each case, so cases never see each other's items. */
  const partition = (name: string): string => `${name}#${(counter += 1)}`;

  beforeAll(async () => {
    table = await make();
  });

  /** A partition of items with sort keys a..j and n = 0..9. */
  async function tenItems(name: string, extra: (i: number) => Item = () => ({})): Promise<string> {
    const pk = partition(name);
    for (let i = 0; i < 10; i += 1)
      await table.write(put({ PK: pk, SK: String.fromCharCode(97 + i), n: i, ...extra(i) }));
    return pk;
  }

  describe('Method: write', () => {
    it('puts only when absent, and returns the old item on failure only when asked', async () => {
      // Prepare
      const key = { PK: partition('put'), SK: 'A' };
      // Act
      const first = await table.write(put({ ...key, v: 1 }, itemIsAbsent()));
      const second = await table.write(put({ ...key, v: 2 }, itemIsAbsent()));
      const third = await table.write(put({ ...key, v: 3 }, itemIsAbsent(), true));
      // Assess
      expect(first).toEqual({ ok: true });
      expect(second).toEqual({ ok: false });
      expect(third).toEqual({ ok: false, old: { ...key, v: 1 } });
      expect(await table.get(key)).toEqual({ ...key, v: 1 });
    });

    it('does not return an old item when a put with returnOld fails on an absent item', async () => {
      const key = { PK: partition('put-absent'), SK: 'A' };
      expect(await table.write(put({ ...key, v: 1 }, itemExists(), true))).toEqual({ ok: false });
      expect(await table.get(key)).toBeUndefined();
    });

    it('takes an item that is absent or expired (isFreeAt), not one still held or without expiry', async () => {
      // Prepare
      const held = { PK: partition('free'), SK: 'held' };
      const forever = { PK: held.PK, SK: 'forever' };
      const absent = { PK: held.PK, SK: 'absent' };
      await table.write(put({ ...held, expiresAt: 1000 }));
      await table.write(put({ ...forever, owner: 'x' }));
      // Act / Assess
      expect(await table.write(put({ ...held, expiresAt: 2000 }, isFreeAt(999)))).toEqual({ ok: false });
      expect(await table.write(put({ ...held, expiresAt: 2000 }, isFreeAt(1000)))).toEqual({ ok: true });
      expect(await table.write(put({ ...forever, owner: 'y' }, isFreeAt(10_000)))).toEqual({ ok: false });
      expect(await table.write(put({ ...absent, expiresAt: 5 }, isFreeAt(0)))).toEqual({ ok: true });
      expect(await table.get(held)).toEqual({ ...held, expiresAt: 2000 });
    });

    it('deletes under a condition, and deletes an absent item without one', async () => {
      // Prepare
      const key = { PK: partition('delete'), SK: 'L' };
      await table.write(put({ ...key, claimUid: 'b' }));
      // Act / Assess
      expect(await table.write({ kind: 'delete', key, condition: belongsToClaim('a') })).toEqual({ ok: false });
      expect(await table.get(key)).toEqual({ ...key, claimUid: 'b' });
      expect(await table.write({ kind: 'delete', key, condition: belongsToClaim('b') })).toEqual({ ok: true });
      expect(await table.get(key)).toBeUndefined();
      expect(await table.write({ kind: 'delete', key })).toEqual({ ok: true });
      expect(await table.write({ kind: 'delete', key, condition: itemExists() })).toEqual({ ok: false });
    });

    it('updates with set, setIfAbsent and add, creating an absent item, and returns the new item', async () => {
      // Prepare
      const key = { PK: partition('update'), SK: 'U' };
      // Act
      const created = await table.write({
        kind: 'update',
        key,
        update: { set: { state: 'new' }, setIfAbsent: { createdAt: 't1' }, add: { count: 2 } },
      });
      const updated = await table.write({
        kind: 'update',
        key,
        update: { set: { state: 'old' }, setIfAbsent: { createdAt: 't2' }, add: { count: 3 } },
        condition: itemExists(),
      });
      const refused = await table.write({
        kind: 'update',
        key,
        update: { set: { state: 'x' } },
        condition: versionIs(7),
      });
      // Assess
      expect(created).toEqual({ ok: true, item: { ...key, state: 'new', createdAt: 't1', count: 2 } });
      expect(updated).toEqual({ ok: true, item: { ...key, state: 'old', createdAt: 't1', count: 5 } });
      expect(refused).toEqual({ ok: false });
      expect(await table.get(key)).toEqual({ ...key, state: 'old', createdAt: 't1', count: 5 });
    });

    it('removes attributes with remove, index keys included (the item leaves the index), and ignores absent ones', async () => {
      // Prepare
      const pk = partition('update-remove');
      const key = { PK: pk, SK: 'U' };
      await table.write(put({ ...key, GSI3PK: pk, GSI3SK: 'x', expiresAt: 5, ttl: 6, kept: 'yes' }));
      // Act
      const removed = await table.write({
        kind: 'update',
        key,
        update: { remove: ['expiresAt', 'ttl', 'GSI3PK', 'GSI3SK', 'neverThere'], add: { version: 1 } },
        condition: itemExists(),
      });
      // Assess
      expect(removed).toEqual({ ok: true, item: { ...key, kept: 'yes', version: 1 } });
      expect(await table.get(key)).toEqual({ ...key, kept: 'yes', version: 1 });
      expect((await table.query({ index: 'GSI3', partition: pk })).items).toEqual([]);
    });

    it('does not create an item when the update condition fails on an absent item', async () => {
      const key = { PK: partition('update-absent'), SK: 'U' };
      expect(
        await table.write({ kind: 'update', key, update: { add: { count: 1 } }, condition: itemExists() }),
      ).toEqual({ ok: false });
      expect(await table.get(key)).toBeUndefined();
    });

    it('refuses an update of a key attribute and an ADD to a string (ValidationException)', async () => {
      const key = { PK: partition('update-bad'), SK: 'U' };
      await table.write(put({ ...key, label: 'text' }));
      expect(await rejection(table.write({ kind: 'update', key, update: { set: { SK: 'V' } } }))).toBe(
        'ValidationException',
      );
      expect(await rejection(table.write({ kind: 'update', key, update: { add: { label: 1 } } }))).toBe(
        'ValidationException',
      );
      expect(await table.get(key)).toEqual({ ...key, label: 'text' });
    });

    it('keeps nested values, binary and drops undefined attributes', async () => {
      const key = { PK: partition('values'), SK: 'V' };
      const item = {
        ...key,
        bytes: new Uint8Array([0, 1, 255]),
        spec: { owner: { uid: 'u' }, list: [1, 'two', { three: true }] },
        none: null,
        gone: undefined,
      };
      await table.write(put(item));
      const { gone: _gone, ...stored } = item;
      expect(await table.get(key)).toEqual(stored);
    });

    it('throws on a condition check outside a transaction', async () => {
      const key = { PK: partition('check'), SK: 'C' };
      await expect(table.write({ kind: 'check', key, condition: itemExists() })).rejects.toThrow(
        'only valid inside a transaction',
      );
    });
  });

  describe('Method: transact', () => {
    it('writes nothing when one condition fails, with one verdict per op in order and old only for a put with returnOld', async () => {
      // Prepare
      const pk = partition('tx');
      await table.write(put({ PK: pk, SK: 'taken', v: 'old' }));
      await table.write(put({ PK: pk, SK: 'checked', version: 1 }));
      const ops: WriteOp[] = [
        put({ PK: pk, SK: 'new', v: 1 }, itemIsAbsent()),
        put({ PK: pk, SK: 'taken', v: 'new' }, itemIsAbsent(), true),
        { kind: 'update', key: { PK: pk, SK: 'counter' }, update: { add: { n: 1 } } },
        { kind: 'check', key: { PK: pk, SK: 'checked' }, condition: versionIs(2) },
        { kind: 'delete', key: { PK: pk, SK: 'taken-too' } },
      ];
      await table.write(put({ PK: pk, SK: 'taken-too' }));
      // Act
      const verdicts = await table.transact(ops);
      // Assess
      expect(verdicts).toEqual([
        { code: 'None' },
        { code: 'ConditionalCheckFailed', old: { PK: pk, SK: 'taken', v: 'old' } },
        { code: 'None' },
        { code: 'ConditionalCheckFailed' },
        { code: 'None' },
      ]);
      expect(sks((await table.query({ partition: pk, consistent: true })).items)).toEqual([
        'checked',
        'taken',
        'taken-too',
      ]);
    });

    it('commits every op when every condition holds, a passing condition check included', async () => {
      // Prepare
      const pk = partition('tx-ok');
      await table.write(put({ PK: pk, SK: 'checked', version: 2 }));
      // Act
      const verdicts = await table.transact([
        put({ PK: pk, SK: 'new', v: 1 }, itemIsAbsent()),
        { kind: 'update', key: { PK: pk, SK: 'counter' }, update: { add: { n: 4 } } },
        { kind: 'check', key: { PK: pk, SK: 'checked' }, condition: versionIs(2) },
      ]);
      // Assess
      expect(verdicts).toBeUndefined();
      expect((await table.query({ partition: pk, consistent: true })).items).toEqual([
        { PK: pk, SK: 'checked', version: 2 },
        { PK: pk, SK: 'counter', n: 4 },
        { PK: pk, SK: 'new', v: 1 },
      ]);
    });

    it('refuses two ops on one item, and more than 100 ops (ValidationException)', async () => {
      // Real DynamoDB refuses two ops on one item up front, whatever the conditions. DynamoDB Local refuses them only
      // when every condition holds: it evaluates the ops one after the other, each seeing the ones before (a put
      // then a check "absent" on the same key comes back [None, ConditionalCheckFailed]). The AWS API reference
      // ("no two actions can target the same item") is right; MemoryTable follows it, and this case, where every
      // condition holds, is one on which the two engines agree.
      const pk = partition('tx-bad');
      const twice: WriteOp[] = [put({ PK: pk, SK: 'same', v: 1 }), { kind: 'delete', key: { PK: pk, SK: 'same' } }];
      const many = Array.from({ length: 101 }, (_, i) => put({ PK: pk, SK: `k${i}` }));
      expect(await rejection(table.transact(twice))).toBe('ValidationException');
      expect(await rejection(table.transact(many))).toBe('ValidationException');
      expect(await rejection(table.transact([]))).toBe('ValidationException');
      expect((await table.query({ partition: pk, consistent: true })).count).toBe(0);
    });

    it('refuses two ops on one item whatever their conditions, where DynamoDB Local runs them one after the other', async () => {
      // The documented rule (see above) refuses the request; DynamoDB Local evaluates the check after the put.
      const key = { PK: partition('tx-twice'), SK: 'same' };
      const outcome = table.transact([put({ ...key, v: 1 }), { kind: 'check', key, condition: itemIsAbsent() }]);
      if (local) expect(await outcome).toEqual([{ code: 'None' }, { code: 'ConditionalCheckFailed' }]);
      else expect(await rejection(outcome)).toBe('ValidationException');
      expect(await table.get(key)).toBeUndefined();
    });

    it('cancels, rather than refuses, a transaction with an op DynamoDB refuses per item', async () => {
      // DynamoDB Local answers a key over its size limit, or an update of a key attribute, inside a transaction with
      // TransactionCanceledException and a ValidationError reason, which SdkTable passes on unchanged.
      const pk = partition('tx-item');
      const ok = put({ PK: pk, SK: 'fine' });
      expect(await rejection(table.transact([ok, put({ PK: 'P'.repeat(3000), SK: 'x' })]))).toBe(
        'TransactionCanceledException',
      );
      expect(
        await rejection(
          table.transact([ok, { kind: 'update', key: { PK: pk, SK: 'u' }, update: { set: { SK: 'v' } } }]),
        ),
      ).toBe('TransactionCanceledException');
      expect(await table.get({ PK: pk, SK: 'fine' })).toBeUndefined();
    });

    it('reads a failed condition before an ADD to a string, and refuses the ADD when the condition holds', async () => {
      const key = { PK: partition('tx-add'), SK: 'x' };
      await table.write(put({ ...key, label: 'text' }));
      expect(
        await table.transact([{ kind: 'update', key, update: { add: { label: 1 } }, condition: itemIsAbsent() }]),
      ).toEqual([{ code: 'ConditionalCheckFailed' }]);
      expect(
        await table.write({ kind: 'update', key, update: { add: { label: 1 } }, condition: itemIsAbsent() }),
      ).toEqual({ ok: false });
      expect(
        await rejection(
          table.transact([{ kind: 'update', key, update: { add: { label: 1 } }, condition: itemExists() }]),
        ),
      ).toBe('ValidationException');
    });
  });

  describe('Method: query', () => {
    it('selects sort keys between, after and before, ascending and descending', async () => {
      const pk = await tenItems('range');
      expect(
        sks((await table.query({ partition: pk, sort: { between: ['c', 'f'] }, consistent: true })).items),
      ).toEqual(['c', 'd', 'e', 'f']);
      expect(sks((await table.query({ partition: pk, sort: { after: 'h' }, consistent: true })).items)).toEqual([
        'i',
        'j',
      ]);
      expect(sks((await table.query({ partition: pk, sort: { before: 'c' }, consistent: true })).items)).toEqual([
        'a',
        'b',
      ]);
      expect(
        sks((await table.query({ partition: pk, sort: { before: 'c' }, descending: true, consistent: true })).items),
      ).toEqual(['b', 'a']);
      expect(sks((await table.query({ partition: pk, descending: true, consistent: true })).items)).toEqual([
        'j',
        'i',
        'h',
        'g',
        'f',
        'e',
        'd',
        'c',
        'b',
        'a',
      ]);
    });

    it('orders sort keys by UTF-8 bytes, not by UTF-16 code units', async () => {
      // U+FFFD is EF BF BD in UTF-8 and U+1F600 is F0 9F 98 80: bytes put U+FFFD first, UTF-16 (D83D DE00) the emoji.
      const pk = partition('utf8');
      await table.write(put({ PK: pk, SK: '\u{1F600}' }));
      await table.write(put({ PK: pk, SK: '\uFFFD' }));
      expect(sks((await table.query({ partition: pk, consistent: true })).items)).toEqual(['\uFFFD', '\u{1F600}']);
      expect(sks((await table.query({ partition: pk, sort: { after: '\uFFFD' }, consistent: true })).items)).toEqual([
        '\u{1F600}',
      ]);
    });

    it('pages by limit: every item once, in order, with lastKey only while the read stopped at the limit', async () => {
      // Prepare
      const pk = await tenItems('pages');
      // Act
      const pages: { sks: unknown[]; lastKey: Item | undefined }[] = [];
      let start: Item | undefined;
      do {
        const page = await table.query({ partition: pk, limit: 3, consistent: true, ...(start ? { start } : {}) });
        pages.push({ sks: sks(page.items), lastKey: page.lastKey });
        start = page.lastKey;
      } while (start);
      // Assess
      expect(pages).toEqual([
        { sks: ['a', 'b', 'c'], lastKey: { PK: pk, SK: 'c' } },
        { sks: ['d', 'e', 'f'], lastKey: { PK: pk, SK: 'f' } },
        { sks: ['g', 'h', 'i'], lastKey: { PK: pk, SK: 'i' } },
        { sks: ['j'], lastKey: undefined },
      ]);
    });

    it('returns a lastKey when the limit is reached exactly at the end of the partition, then an empty page', async () => {
      const pk = await tenItems('exact');
      const first = await table.query({ partition: pk, limit: 10, consistent: true });
      expect(first.lastKey).toEqual({ PK: pk, SK: 'j' });
      const second = await table.query({ partition: pk, limit: 10, consistent: true, start: first.lastKey! });
      expect(second).toEqual({ items: [], count: 0, scanned: 0 });
    });

    it('pages descending, and queryAll reads every page', async () => {
      const pk = await tenItems('desc');
      expect(sks(await queryAll(table, { partition: pk, limit: 4, descending: true, consistent: true }))).toEqual([
        'j',
        'i',
        'h',
        'g',
        'f',
        'e',
        'd',
        'c',
        'b',
        'a',
      ]);
    });

    it('filters after the limit: count is what passed, scanned what was read; countOnly returns no items', async () => {
      const pk = await tenItems('filter');
      const filter: Condition = { op: 'compare', attribute: 'n', comparison: '>=', value: 3 };
      const page = await table.query({ partition: pk, limit: 5, filter, consistent: true });
      expect({ sks: sks(page.items), count: page.count, scanned: page.scanned, lastKey: page.lastKey }).toEqual({
        sks: ['d', 'e'],
        count: 2,
        scanned: 5,
        lastKey: { PK: pk, SK: 'e' },
      });
      expect(await table.query({ partition: pk, filter, countOnly: true, consistent: true })).toEqual({
        items: [],
        count: 7,
        scanned: 10,
      });
    });

    it('filters on a document path into nested maps, whose steps may hold "/" and "."; a missing step or a non-map never matches', async () => {
      // Prepare: a: the pair; b: another value; c: an empty value; d: no labels map; e: spec not a map; f: no spec.
      const specs: Record<string, unknown>[] = [
        { spec: { labels: { 'cni.ipam/node': 'n1', app: '' } } },
        { spec: { labels: { 'cni.ipam/node': 'n2', app: '' } } },
        { spec: { labels: { 'cni.ipam/node': 'n1', app: 'x' } } },
        { spec: {} },
        { spec: 'n1' },
        {},
      ];
      const pk = await tenItems('path-filter', (i) => specs[i] ?? {});
      // Act
      const node = await table.query({ partition: pk, filter: hasLabels([['cni.ipam/node', 'n1']]), consistent: true });
      const both = await table.query({
        partition: pk,
        filter: hasLabels([
          ['cni.ipam/node', 'n1'],
          ['app', ''],
        ]),
        consistent: true,
      });
      // Assess
      expect(sks(node.items)).toEqual(['a', 'c']);
      expect(sks(both.items)).toEqual(['a']);
    });

    it('projects the attributes asked for (absent ones left out)', async () => {
      const pk = await tenItems('projection', (i) => ({ label: `L${i}` }));
      const page = await table.query({
        partition: pk,
        sort: { before: 'c' },
        attributes: ['SK', 'label', 'missing'],
        consistent: true,
      });
      expect(page.items).toEqual([
        { SK: 'a', label: 'L0' },
        { SK: 'b', label: 'L1' },
      ]);
    });

    it('queries GSI1 (ALL) and continues from a lastKey made of the table and index keys', async () => {
      // Prepare
      const listing = partition('GSI1');
      const pk = partition('gsi1-items');
      for (let i = 0; i < 5; i += 1)
        await table.write(put({ PK: `${pk}#${i}`, SK: 'ITEM', GSI1PK: listing, GSI1SK: `s${4 - i}`, n: i }));
      await table.write(put({ PK: `${pk}#none`, SK: 'ITEM', n: 99 }));
      // Act
      const first = await table.query({ index: 'GSI1', partition: listing, limit: 2 });
      const rest = await table.query({ index: 'GSI1', partition: listing, start: first.lastKey! });
      // Assess
      expect(first.items).toEqual([
        { PK: `${pk}#4`, SK: 'ITEM', GSI1PK: listing, GSI1SK: 's0', n: 4 },
        { PK: `${pk}#3`, SK: 'ITEM', GSI1PK: listing, GSI1SK: 's1', n: 3 },
      ]);
      expect(first.lastKey).toEqual({ PK: `${pk}#3`, SK: 'ITEM', GSI1PK: listing, GSI1SK: 's1' });
      expect(rest.items.map((i) => i.GSI1SK)).toEqual(['s2', 's3', 's4']);
      expect(rest.lastKey).toBeUndefined();
    });

    it('queries the sparse, keys-only GSI3: only items with both index keys, only their keys', async () => {
      // Prepare
      const bucket = partition('EXP');
      const pk = partition('gsi3-items');
      await table.write(put({ PK: `${pk}#1`, SK: 'LEASE', GSI3PK: bucket, GSI3SK: '002', expiresAt: 2, other: 'x' }));
      await table.write(put({ PK: `${pk}#2`, SK: 'CLAIM', GSI3PK: bucket, GSI3SK: '001', expiresAt: 1 }));
      await table.write(put({ PK: `${pk}#3`, SK: 'LEASE', GSI3PK: bucket, other: 'no sort key' }));
      await table.write(put({ PK: `${pk}#4`, SK: 'LEASE', other: 'no index keys' }));
      // Act
      const page = await table.query({ index: 'GSI3', partition: bucket, sort: { before: '003' } });
      // Assess
      expect(page.items).toEqual([
        { PK: `${pk}#2`, SK: 'CLAIM', GSI3PK: bucket, GSI3SK: '001' },
        { PK: `${pk}#1`, SK: 'LEASE', GSI3PK: bucket, GSI3SK: '002' },
      ]);
    });

    it('refuses a start key outside the partition or the sort condition, and one without the index keys', async () => {
      const pk = await tenItems('bad-start');
      expect(await rejection(table.query({ partition: pk, start: { PK: `${pk}-other`, SK: 'b' } }))).toBe(
        'ValidationException',
      );
      expect(await rejection(table.query({ partition: pk, sort: { after: 'm' }, start: { PK: pk, SK: 'b' } }))).toBe(
        'ValidationException',
      );
      expect(await rejection(table.query({ index: 'GSI1', partition: pk, start: { PK: pk, SK: 'b' } }))).toBe(
        'ValidationException',
      );
    });

    it('refuses to project or filter the keys-only GSI3 on other attributes', async () => {
      const bucket = partition('EXP-bad');
      expect(await rejection(table.query({ index: 'GSI3', partition: bucket, attributes: ['PK', 'expiresAt'] }))).toBe(
        'ValidationException',
      );
      expect(await rejection(table.query({ index: 'GSI3', partition: bucket, filter: itemExists() }))).toBe('resolved');
      expect(
        await rejection(table.query({ index: 'GSI3', partition: bucket, filter: attributeIs('expiresAt', 1) })),
      ).toBe('ValidationException');
    });

    it('refuses a consistent read of an index, BETWEEN bounds out of order, a sort bound over 1024 bytes and a limit of 0 (ValidationException)', async () => {
      const pk = partition('bad-query');
      expect(await rejection(table.query({ partition: pk, sort: { after: 's'.repeat(1025) } }))).toBe(
        'ValidationException',
      );
      expect(await rejection(table.query({ index: 'GSI1', partition: pk, consistent: true }))).toBe(
        'ValidationException',
      );
      expect(await rejection(table.query({ partition: pk, sort: { between: ['b', 'a'] } }))).toBe(
        'ValidationException',
      );
      expect(await rejection(table.query({ partition: pk, limit: 0 } as Query))).toBe('ValidationException');
    });
  });

  describe('Method: batchGet', () => {
    it('returns present items once, leaves absent ones out, and projects', async () => {
      const pk = await tenItems('batch', (i) => ({ label: `L${i}` }));
      const got = await table.batchGet(
        [
          { PK: pk, SK: 'a' },
          { PK: pk, SK: 'zz' },
          { PK: pk, SK: 'c' },
          { PK: pk, SK: 'a' },
        ],
        ['SK', 'label'],
      );
      expect(got.sort((x, y) => String(x.SK).localeCompare(String(y.SK)))).toEqual([
        { SK: 'a', label: 'L0' },
        { SK: 'c', label: 'L2' },
      ]);
      expect(await table.batchGet([])).toEqual([]);
    });
  });

  describe('Validation of keys', () => {
    const long = 'P'.repeat(3000);

    it('refuses a partition key over 2048 bytes on every call (ValidationException)', async () => {
      expect(await rejection(table.get({ PK: long, SK: 'x' }))).toBe('ValidationException');
      expect(await rejection(table.batchGet([{ PK: long, SK: 'x' }]))).toBe('ValidationException');
      expect(await rejection(table.write(put({ PK: long, SK: 'x' })))).toBe('ValidationException');
      expect(
        await rejection(table.write({ kind: 'update', key: { PK: long, SK: 'x' }, update: { set: { a: 1 } } })),
      ).toBe('ValidationException');
      expect(await rejection(table.write({ kind: 'delete', key: { PK: long, SK: 'x' } }))).toBe('ValidationException');
      // Inside a transaction DynamoDB Local cancels instead, with a ValidationError reason (see Method: transact).
      expect(await rejection(table.transact([put({ PK: long, SK: 'x' })]))).toBe('TransactionCanceledException');
    });

    it('refuses a query whose partition value is over 2048 bytes, where DynamoDB Local answers an empty page', async () => {
      // DynamoDB refuses it ("ValidationException when calling the Query operation: One or more parameter values were
      // invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes", facebook/ThreatExchange#1324);
      // DynamoDB Local does not check the size of a query's partition value (it does check its sort bounds). The
      // memory engine follows DynamoDB.
      const outcome = table.query({ partition: long });
      if (local) expect(await outcome).toEqual({ items: [], count: 0, scanned: 0 });
      else expect(await rejection(outcome)).toBe('ValidationException');
    });

    it('accepts a partition key of exactly 2048 bytes and a sort key of 1024, not a sort key of 1025', async () => {
      const pk = partition('size').padEnd(2048, 'p');
      expect(await table.write(put({ PK: pk, SK: 's'.repeat(1024) }))).toEqual({ ok: true });
      expect(await rejection(table.write(put({ PK: pk, SK: 's'.repeat(1025) })))).toBe('ValidationException');
      // 683 three-byte characters: 2049 bytes though only 683 UTF-16 units.
      expect(await rejection(table.get({ PK: '\u20AC'.repeat(683), SK: 'x' }))).toBe('ValidationException');
    });

    it('refuses empty key attributes, on the table and on an index, and index keys of another type or too long (ValidationException)', async () => {
      const pk = partition('empty');
      expect(await rejection(table.get({ PK: '', SK: 'x' }))).toBe('ValidationException');
      expect(await rejection(table.write(put({ PK: pk, SK: '' })))).toBe('ValidationException');
      expect(await rejection(table.write(put({ PK: pk, SK: 'x', GSI1PK: '', GSI1SK: 'y' })))).toBe(
        'ValidationException',
      );
      expect(await rejection(table.write(put({ PK: pk, SK: 'x', GSI1PK: 7, GSI1SK: 'y' })))).toBe(
        'ValidationException',
      );
      expect(await rejection(table.write(put({ PK: pk, SK: 'x', GSI1PK: 'P'.repeat(2049), GSI1SK: 'y' })))).toBe(
        'ValidationException',
      );
      expect(
        await rejection(table.write({ kind: 'update', key: { PK: pk, SK: 'x' }, update: { set: { GSI2SK: '' } } })),
      ).toBe('ValidationException');
      expect(await rejection(table.query({ partition: '' }))).toBe('ValidationException');
    });
  });

  describe('DynamoDB limits (issue 33)', () => {
    /** An item of `bytes` bytes by DynamoDB's rules (item-size.ts): `extra` attributes, then a string filling the rest. */
    const sized = (key: { PK: string; SK: string }, bytes: number, extra: Item = {}): Item => {
      const item: Item = { ...key, ...extra, fill: '' };
      return { ...item, fill: 'f'.repeat(bytes - plainItemSize(item)) };
    };
    // Nested values and a long attribute name: sizes count names, a byte per list element and map entry, and numbers
    // by digit pairs aligned on the decimal point, a byte more when negative (item-size.ts).
    const nested = {
      ['n'.repeat(300)]: { a: [1, 'yy', { b: true }], c: null },
      bin: new Uint8Array(10),
      num: [12345.678, 120, 1.5, -120, 0],
    };

    it('takes an item of exactly 400 KB and refuses one byte more (ValidationException), nested values and names counted', async () => {
      const pk = partition('item-size');
      expect(await table.write(put(sized({ PK: pk, SK: 'a' }, ITEM_BYTES_LIMIT, nested)))).toEqual({ ok: true });
      expect(await rejection(table.write(put(sized({ PK: pk, SK: 'b' }, ITEM_BYTES_LIMIT + 1, nested))))).toBe(
        'ValidationException',
      );
      expect(await rejection(table.write(put(sized({ PK: pk, SK: 'c' }, ITEM_BYTES_LIMIT + 1))))).toBe(
        'ValidationException',
      );
      expect(sks((await table.query({ partition: pk, consistent: true, attributes: ['SK'] })).items)).toEqual(['a']);
    });

    it('refuses an update that takes an item past 400 KB, alone (ValidationException) and in a transaction (cancelled)', async () => {
      const key = { PK: partition('update-size'), SK: 'u' };
      await table.write(put(sized(key, 400_000)));
      const grow = (bytes: number): WriteOp => ({
        kind: 'update',
        key,
        update: { set: { more: 'm'.repeat(bytes - 4) } },
      });
      expect(await rejection(table.write(grow(ITEM_BYTES_LIMIT - 400_000 + 1)))).toBe('ValidationException');
      expect(
        await rejection(table.transact([grow(ITEM_BYTES_LIMIT - 400_000 + 1), put({ PK: key.PK, SK: 'other' })])),
      ).toBe('TransactionCanceledException');
      expect((await table.query({ partition: key.PK, consistent: true, attributes: ['SK'] })).items).toEqual([
        { SK: 'u' },
      ]);
      expect(await table.write(grow(ITEM_BYTES_LIMIT - 400_000))).toMatchObject({ ok: true });
    });

    it('refuses a transaction putting an item over 400 KB, and one whose items pass 4 MB (ValidationException), and takes 4 MB exactly', async () => {
      // DynamoDB Local answers "Transaction payload size cannot exceed 4MB. Payload Size: N", N the items' sizes.
      const pk = partition('tx-size');
      const eleven = (total: number, at: string): WriteOp[] => [
        ...Array.from({ length: 10 }, (_, i) => put(sized({ PK: pk, SK: `${at}${i}` }, 400_000))),
        put(sized({ PK: pk, SK: `${at}x` }, total - 4_000_000)),
      ];
      expect(
        await rejection(
          table.transact([put({ PK: pk, SK: 'small' }), put(sized({ PK: pk, SK: 'big' }, ITEM_BYTES_LIMIT + 1))]),
        ),
      ).toBe('ValidationException');
      expect(await rejection(table.transact(eleven(TRANSACTION_BYTES_LIMIT + 1, 'over')))).toBe('ValidationException');
      // Read by key: a query would stop at DynamoDB's 1 MB page, which MemoryTable does not model.
      const written = async () =>
        (
          await table.batchGet(
            [
              'small',
              'big',
              ...['over', 'at'].flatMap((at) => [...Array.from({ length: 10 }, (_, i) => `${at}${i}`), `${at}x`]),
            ].map((sk) => ({ PK: pk, SK: sk })),
            ['SK'],
          )
        ).length;
      expect(await written()).toBe(0);
      expect(await table.transact(eleven(TRANSACTION_BYTES_LIMIT, 'at'))).toBeUndefined();
      expect(await written()).toBe(11);
    });

    it('takes 100 operations in a transaction', async () => {
      const pk = partition('tx-100');
      expect(
        await table.transact(Array.from({ length: TRANSACTION_LIMIT }, (_, i) => put({ PK: pk, SK: `k${i}` }))),
      ).toBeUndefined();
      expect((await table.query({ partition: pk, consistent: true, countOnly: true })).count).toBe(TRANSACTION_LIMIT);
    });

    it('answers a batchGet of more keys than one BatchGetItem takes (DynamoDB refuses 101 a request; the port sends 100 a request)', async () => {
      const pk = partition('batch-wide');
      const keys = Array.from({ length: 2 * BATCH_GET_LIMIT + 50 }, (_, i) => ({
        PK: pk,
        SK: `k${String(i).padStart(3, '0')}`,
      }));
      for (const key of keys.filter((_, i) => i % 10 === 0)) await table.write(put(key));
      const got = await table.batchGet(keys, ['SK']);
      expect(got.map((i) => i.SK).sort()).toEqual(keys.filter((_, i) => i % 10 === 0).map((k) => k.SK));
    });
  });

  describe('Method: describe', () => {
    it('says the table is ACTIVE', async () => {
      expect(await table.describe()).toBe('ACTIVE');
    });
  });

  it('answers a query with attribute conditions the same way (attributeIs on a number vs a string)', async () => {
    const pk = partition('types');
    await table.write(put({ PK: pk, SK: 'a', v: 1 }));
    await table.write(put({ PK: pk, SK: 'b', v: '1' }));
    const page = await table.query({ partition: pk, filter: attributeIs('v', 1), consistent: true });
    expect(sks(page.items)).toEqual(['a']);
  });
});
