import { describe, expect, it } from 'vitest';
import { marshall } from '@aws-sdk/util-dynamodb';
import { itemSize, numberSize, plainItemSize, readUnits, writeUnits } from '../../aws-emulation/item-size.ts';
import { SizeLedger } from '../../bench/lib/ledger.ts';
import { PartitionLimiter } from '../../bench/lib/limiter.ts';
import { Pricer } from '../../bench/lib/meter.ts';
import { tableSchema } from '../../bench/lib/schema.ts';

const TABLE = 'bench-t';
const pricer = () => {
  const ledger = new SizeLedger(tableSchema);
  return { ledger, pricer: new Pricer(tableSchema, ledger) };
};
/** An item of about `bytes` bytes under key `pk`. */
const itemOf = (pk: string, bytes: number) => ({
  PK: { S: pk },
  SK: { S: 'X' },
  pad: { S: 'x'.repeat(Math.max(0, bytes - 8 - pk.length)) },
});

describe('Module: aws-emulation/item-size', () => {
  describe('Function: itemSize', () => {
    it('adds attribute names and values by DynamoDB rules', () => {
      // Prepare: "PK"(2) + "ab"(2), "n"(1) + 12345 (3 digit pairs + 1), "m"(1) + map(3 + 1 + "k"(1) + true(1))
      const item = { PK: { S: 'ab' }, n: { N: '12345' }, m: { M: { k: { BOOL: true } } } };
      // Act / Assess
      expect(itemSize(item)).toBe(4 + 1 + 4 + 1 + 6);
    });

    it("sizes a plain item (the simulator's form) as its wire form (the bench's), absent attributes left out", () => {
      // Prepare: strings (one not ASCII), numbers, a boolean, a null, bytes, a list and a nested map
      const plain = {
        PK: 'LEASE#p#10.0.0.1',
        n: 1_700_000_000_123,
        b: true,
        z: null,
        bin: new Uint8Array(7),
        l: ['a', 2],
        m: { k: 'é', deep: { x: 1 } },
        gone: undefined,
      };
      // Act / Assess
      expect(plainItemSize(plain)).toBe(itemSize(marshall(plain, { removeUndefinedValues: true })));
      // PK 2+16, n 1+8 (13 digits), b 1+1, z 1+1, bin 3+7, l 1+3+(1+1)+(1+2), m 1+3+(1+1+2)+(1+4+(3+1+1+2))
      expect(plainItemSize(plain)).toBe(18 + 9 + 2 + 2 + 10 + 9 + 20);
    });

    it('trims leading and trailing zeros of numbers', () => {
      expect(numberSize('1000')).toBe(2);
      expect(numberSize('0.00123')).toBe(3);
    });

    it('counts digit pairs aligned on the decimal point, and a byte more for a negative number (as DynamoDB Local at the 400 KB limit)', () => {
      // Measured on DynamoDB Local 3.3.0 (issue 33): the largest item it takes holding each number.
      const measured: [string, number][] = [
        ['120', 3],
        ['12', 2],
        ['1200', 2],
        ['12000', 3],
        ['120000', 2],
        ['1234567', 5],
        ['12345.678', 6],
        ['0.0012', 2],
        ['0.00123', 3],
        ['1.5', 3],
        ['15.25', 3],
        ['-120', 4],
        ['-0.5', 3],
        ['-7', 3],
        ['0', 1],
        ['7', 2],
        ['1762300000123', 8],
      ];
      expect(measured.map(([n]) => [n, numberSize(n)])).toEqual(measured);
    });
  });

  describe('Function: writeUnits / readUnits', () => {
    it('rounds up per started KB (writes) and 4 KB (reads), halving eventually consistent reads', () => {
      expect([writeUnits(0), writeUnits(1024), writeUnits(1025)]).toEqual([1, 1, 2]);
      expect([readUnits(4096, true), readUnits(4097, true), readUnits(100, false)]).toEqual([1, 2, 0.5]);
    });
  });
});

describe('Class: Pricer', () => {
  describe('Method: assess', () => {
    it('bills a put on the larger of the item before and after', () => {
      // Prepare
      const { pricer: p } = pricer();
      p.assess('PutItem', { TableName: TABLE, Item: itemOf('a', 3000) }, {}, undefined);
      // Act
      const { usage } = p.assess('PutItem', { TableName: TABLE, Item: itemOf('a', 100) }, {}, undefined);
      // Assess
      expect(usage).toMatchObject({ requests: 1, writeUnits: 3, failedConditions: 0 });
    });

    it('bills a failed conditional write on the item it found', () => {
      // Prepare
      const { pricer: p } = pricer();
      p.assess('PutItem', { TableName: TABLE, Item: itemOf('a', 2500) }, {}, undefined);
      // Act
      const { usage } = p.assess('PutItem', { TableName: TABLE, Item: itemOf('a', 10) }, undefined, {
        name: 'ConditionalCheckFailedException',
      });
      // Assess
      expect(usage).toMatchObject({ writeUnits: 3, failedConditions: 1 });
    });

    it('doubles transactional writes, cancelled ones included', () => {
      // Prepare
      const { pricer: p } = pricer();
      const input = {
        TransactItems: [
          { Put: { TableName: TABLE, Item: itemOf('a', 1500) } },
          { Put: { TableName: TABLE, Item: itemOf('b', 10) } },
        ],
      };
      // Act
      const committed = p.assess('TransactWriteItems', input, {}, undefined).usage;
      const cancelled = p.assess('TransactWriteItems', input, undefined, {
        name: 'TransactionCanceledException',
        CancellationReasons: [{ Code: 'None' }, { Code: 'ConditionalCheckFailed' }],
      }).usage;
      // Assess
      expect(committed.writeUnits).toBe(2 * (2 + 1));
      expect(cancelled).toMatchObject({ writeUnits: 2 * (2 + 1), failedConditions: 1 });
    });

    it('counts a write to a global index on the index, once per entry changed', () => {
      // Prepare
      const { pricer: p } = pricer();
      const item = { ...itemOf('a', 10), GSI1PK: { S: 'L' }, GSI1SK: { S: '1' } };
      // Act
      const { usage, charges } = p.assess('PutItem', { TableName: TABLE, Item: item }, {}, undefined);
      // Assess
      expect(usage).toMatchObject({ writeUnits: 1, indexWriteUnits: 1 });
      expect(charges.map((c) => c.partition)).toEqual([`${TABLE}||a`, `${TABLE}|GSI1|L`]);
    });
  });
});

describe('Class: PartitionLimiter', () => {
  describe('Method: admit', () => {
    it('refuses a partition over its write units per second and leaves others alone', () => {
      // Prepare: a frozen clock, so nothing refills.
      const limiter = new PartitionLimiter({ writeUnitsPerSecond: 10, readUnitsPerSecond: 30 }, () => 0);
      const hot = { partition: 't||hot', kind: 'write' as const, units: 4 };
      // Act
      const answers = [
        limiter.admit([hot]),
        limiter.admit([hot]),
        limiter.admit([hot]),
        limiter.admit([{ ...hot, partition: 't||cold' }]),
      ];
      // Assess
      expect(answers).toEqual([[], [], ['t||hot'], []]);
    });
  });
});
