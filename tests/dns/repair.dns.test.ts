import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Rfc2136Target } from '../../shared/adapters/dns/rfc2136-target.ts';
import { rfc2136TargetOf, startBind, type Bind } from '../support/bind.ts';
import { reconcilerHarness } from '../support/reconciler.ts';
import { memoryEngine } from '../support/engines.ts';

const ZONE = 'pods.example.internal.';
const REVERSE = '0.0.10.in-addr.arpa.';

describe("The reconciler's DNS repair against a real BIND 9", () => {
  let bind: Bind;
  let target: Rfc2136Target;
  beforeAll(async () => {
    bind = await startBind([ZONE, REVERSE]);
    target = rfc2136TargetOf(bind);
  });
  afterAll(() => bind?.stop());

  it('restores a record deleted by hand, removes a released claim, and leaves a hand-made record alone (AXFR, UPDATE)', async () => {
    const h = await reconcilerHarness({ engine: memoryEngine, overrides: { dnsTargets: () => target } });
    const rfc2136 = { server: '127.0.0.1', port: bind.port, keyName: bind.keyName, secretFrom: 'env:UNUSED' };
    await h.api.call('POST', '/v1/pools', { name: 'pods', dns: { zone: ZONE, reverse: true, target: { rfc2136 } } });
    await h.api.call('POST', '/v1/pools/pods/ranges', { cidr: '10.0.0.0/24' });
    for (const [name, address] of [
      ['web-0', '10.0.0.5'],
      ['web-1', '10.0.0.6'],
    ] as const)
      await h.claim('pods', { name, owner: { kind: 'Pod', name, uid: `p-${name}` }, addresses: [address] });
    bind.nsupdate(`zone ${ZONE}\nupdate add hand.${ZONE} 300 A 192.0.2.7`);
    h.clock.advance(61_000);
    // No stream function ran: the reconciler publishes what the zone lacks.
    await h.run();
    expect(bind.dig(`web-0.${ZONE}`, 'A')).toEqual(['10.0.0.5']);
    expect(bind.dig(`6.${REVERSE}`, 'PTR')).toEqual([`web-1.${ZONE}`]);
    bind.nsupdate(`zone ${ZONE}\nupdate delete web-0.${ZONE}`);
    expect(bind.dig(`web-0.${ZONE}`, 'A')).toEqual([]);
    await h.api.call('DELETE', '/v1/pools/pods/claims/web-1');
    const report = await h.run();
    expect(report.dns).toEqual([expect.objectContaining({ pool: 'pods', published: 1, removed: 2, failed: 0 })]);
    expect(bind.dig(`web-0.${ZONE}`, 'A')).toEqual(['10.0.0.5']);
    expect(bind.dig(`web-1.${ZONE}`, 'A')).toEqual([]);
    expect(bind.dig(`6.${REVERSE}`, 'PTR')).toEqual([]);
    expect(bind.dig(`hand.${ZONE}`, 'A')).toEqual(['192.0.2.7']);
  });
});
