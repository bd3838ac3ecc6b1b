import { describe, expect, it } from 'vitest';
import { dnsRepairCases } from '../cases/dns-repair.cases.ts';
import { memoryEngine } from '../support/engines.ts';
import { reconcilerHarness } from '../support/reconciler.ts';
import { FlakyZones } from '../support/dns.ts';

// In memory; tests/int/dns-repair.int.test.ts runs the same cases on DynamoDB Local.
dnsRepairCases(memoryEngine);

const ZONE = 'pods.example.internal.';
const REVERSE = '0.0.10.in-addr.arpa.';
const rfc2136 = { server: '127.0.0.1', port: 53, keyName: 'ipam', secretFrom: 'env:IPAM_TSIG_SECRET' };

// The target's failures are the same on either engine: in memory only.
describe('DNS drift repair when the target fails', () => {
  it('reports a failed listing or change as one error line, changes nothing it did not read, and repairs on a later run', async () => {
    const zones = new FlakyZones();
    const h = await reconcilerHarness({ engine: memoryEngine, overrides: { dnsTargets: () => zones } });
    await h.api.call('POST', '/v1/pools', { name: 'pods', dns: { zone: ZONE, reverse: true, target: { rfc2136 } } });
    await h.api.call('POST', '/v1/pools/pods/ranges', { cidr: '10.0.0.0/24' });
    for (const name of ['web-0', 'web-1', 'web-2'])
      await h.claim('pods', { name, owner: { kind: 'Pod', name, uid: `u-${name}` } });
    h.clock.advance(61_000);
    zones.failLists = 2;
    const down = await h.run();
    expect(down.dns).toEqual([expect.objectContaining({ pool: 'pods', published: 0, removed: 0 })]);
    expect(down.errors.filter((e) => e.includes('list dns zone'))).toHaveLength(2);
    expect(zones.calls.change).toBe(0);
    // The first change call (the reverse zone's) fails, its 3 names in one line; the forward zone's goes through.
    zones.failChanges = 1;
    const failing = await h.run();
    expect(failing.dns[0]).toMatchObject({ failed: 3, published: 3 });
    expect(failing.errors.filter((e) => e.startsWith('dns change'))).toEqual([
      expect.stringContaining('3 names failed'),
    ]);
    expect(zones.values(`web-1.${ZONE}`, 'A')).toHaveLength(1);
    expect(await zones.zones.list(REVERSE)).toEqual([]);
    const up = await h.run();
    expect(up.errors).toEqual([]);
    expect(up.dns[0]).toMatchObject({ published: 3, failed: 0 });
    expect((await zones.zones.list(REVERSE)).filter((s) => s.type === 'PTR')).toHaveLength(3);
  });
});
