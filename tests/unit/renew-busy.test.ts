import { describe, expect, it } from 'vitest';
import { MemoryTable } from '../../shared/adapters/memory/memory-table.ts';
import { FollowedTable } from '../support/stream-follower.ts';
import { testApi } from '../support/api.ts';
import { memoryEngine } from '../support/engines.ts';
import { owner } from '../support/fakes.ts';

/**
 * A renewal cancelled by other transactions (DynamoDB's TransactionConflict) is tried again from a fresh read; one
 * still cancelled after its tries is the engine busy on its items (a freed-counter shard hot with other claims'
 * releases), a retryable 503, not a 409 about the claim. MemoryTable's faults stand in for the conflict, which a real
 * engine does not produce on demand.
 */
describe('Renewal on a hot freed counter', () => {
  it('answers 503 NotReady after its tries when every transaction bumping the counter conflicts, and 200 once one goes through', async () => {
    // Prepare: conflicts on the first `failing` transactions that bump a FREED# counter shard
    let failing = 0;
    const memory = new MemoryTable({
      name: 'renew-busy',
      faults: (call) => {
        if (failing === 0 || call.method !== 'transact') return undefined;
        const i = call.keys.findIndex((k) => k.PK.startsWith('FREED#'));
        if (i < 0) return undefined;
        failing -= 1;
        return { kind: 'conflict', ops: [i] };
      },
    });
    const api = await testApi({ table: new FollowedTable(memory) }, {}, undefined, memoryEngine);
    expect((await api.call('POST', '/v1/pools', { name: 'p' })).status).toBe(201);
    expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.0.0.0/24' })).status).toBe(201);
    expect(
      (await api.call('POST', '/v1/pools/p/claims', { name: 'c', owner: owner('u'), ttlSeconds: 3600 })).status,
    ).toBe(201);
    // Act: renewals to an earlier expiry (each bumps a counter shard, writes/renew.ts)
    failing = Number.POSITIVE_INFINITY;
    const refused = await api.call('POST', '/v1/pools/p/claims/c/renew', { ttlSeconds: 60 });
    failing = 2;
    const renewed = await api.call('POST', '/v1/pools/p/claims/c/renew', { ttlSeconds: 30 });
    // Assess
    expect([refused.status, refused.body.code]).toEqual([503, 'NotReady']);
    expect([renewed.status, renewed.body.version]).toEqual([200, 2]);
  });
});
