import { describe, expect, it } from 'vitest';
import { NotReadyError } from '../../shared/core/errors.ts';
import { Prng } from '../../sim/prng.ts';
import { Scheduler } from '../../sim/scheduler.ts';
import { SimEngine } from '../../sim/sim-table.ts';

// The rest of SimTable's contract (items, conditions, transactions, queries) is the Table contract it shares with
// SdkTable and MemoryTable (tests/int/table-contract.int.test.ts); DynamoDB Local never holds an item in a
// transaction, so what a single write meets then is pinned here.
describe('Class: SimTable', () => {
  describe('Method: write', () => {
    it('answers a single write to an item held by a transaction in flight as SdkTable does: NotReadyError, nothing written', async () => {
      // Prepare: one item held by a transaction in flight
      const scheduler = new Scheduler();
      const engine = new SimEngine({ scheduler, rng: new Prng(1), requestTimeoutMs: 3000, unlimited: true });
      const table = engine.tableFor({ id: 't', role: 't', alive: true });
      const key = { PK: 'P', SK: 'S' };
      engine.lock([key]);

      // Act
      const held = table.write({ kind: 'put', item: { ...key, v: 1 } }).then(
        () => undefined,
        (error: unknown) => error,
      );
      await scheduler.runUntil(1000);
      const error = await held;
      engine.unlock([key]);
      const after = table.get(key);
      await scheduler.runUntil(2000);

      // Assess
      expect(error).toBeInstanceOf(NotReadyError);
      expect(((error as Error).cause as Error).name).toBe('TransactionConflictException');
      expect(await after).toBeUndefined();
    });
  });
});
