import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { StreamEngine } from '../support/lease-stream.ts';
import { mirrorOf } from '../support/legacy.ts';
import { reconcilerHarness } from '../support/reconciler.ts';
import { FlakyZones } from '../support/dns.ts';
import { ownerText, reverseName } from '../../shared/core/dns/records.ts';

const ZONE = 'pods.example.internal.';
const rfc2136 = { server: '127.0.0.1', port: 53, keyName: 'ipam', secretFrom: 'env:IPAM_TSIG_SECRET' };
const NAMES = ['a', 'b', 'c', 'd'];
const ADDRESSES = ['10.0.0.10', '10.0.0.11', '10.0.0.12'];

type Op =
  | { kind: 'claim'; name: string; address: string; hostname: boolean }
  | { kind: 'release'; name: string }
  | { kind: 'deliver'; failures: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('claim' as const),
    name: fc.constantFrom(...NAMES),
    address: fc.constantFrom(...ADDRESSES),
    hostname: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('release' as const), name: fc.constantFrom(...NAMES) }),
  fc.record({ kind: fc.constant('deliver' as const), failures: fc.integer({ min: 0, max: 2 }) }),
);

/**
 * Random interleavings of claims, releases, re-claims of an address under another name and failed DNS calls, with
 * the stream delivered in between at random: once the stream is drained the zones hold exactly the live claims'
 * records (A, TXT, PTR) and nothing else.
 */
export function dnsPropertyCases(streams: StreamEngine, runs: number): void {
  describe('DNS convergence property', () => {
    it('ends with the zones holding exactly the live claims records', async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 14 }), async (ops) => {
          const zones = new FlakyZones();
          const h = await reconcilerHarness({ engine: streams.engine, overrides: { dnsTargets: () => zones } });
          const stream = streams.stream();
          try {
            await h.api.call('POST', '/v1/pools', {
              name: 'pods',
              dns: { zone: ZONE, reverse: true, target: { rfc2136 } },
            });
            await h.api.call('POST', '/v1/pools/pods/ranges', { cidr: '10.0.0.0/24' });
            const handler = mirrorOf(h.api.container);
            for (const o of ops) {
              if (o.kind === 'claim')
                await h.api.call('POST', '/v1/pools/pods/claims', {
                  name: o.name,
                  owner: { kind: 'Pod', name: o.name, uid: `u-${o.name}` },
                  addresses: [o.address],
                  ...(o.hostname ? { hostname: `h-${o.name}` } : {}),
                });
              else if (o.kind === 'release') await h.api.call('DELETE', `/v1/pools/pods/claims/${o.name}`);
              else {
                // A target that fails its next calls: the mapping's retries (more than the failures) get through.
                zones.failChanges = o.failures;
                expect((await stream.drain(handler, { retries: 5, batchSize: 3 })).failed).toEqual([]);
              }
            }
            zones.failChanges = 0;
            expect((await stream.drain(handler, { retries: 5 })).failed).toEqual([]);
            const expected = new Map<string, string[]>();
            const page = await h.api.call('GET', '/v1/pools/pods/claims');
            for (const c of page.body.items ?? []) {
              const label = (c.hostname as string | undefined) ?? (c.name as string);
              const addresses = (c.addresses as { address: string }[]).map((x) => x.address);
              const fqdn = `${label}.${ZONE}`;
              expected.set(`${fqdn} A`, addresses);
              expected.set(`${fqdn} TXT`, [ownerText({ pool: 'pods', claim: c.name as string, uid: c.uid as string })]);
              for (const address of addresses) expected.set(`${reverseName(address)} PTR`, [fqdn]);
            }
            const held = new Map<string, string[]>();
            for (const zone of zones.zones.zoneNames())
              for (const s of await zones.zones.list(zone))
                if (s.type !== 'TXT' || !s.name.endsWith('.in-addr.arpa.'))
                  held.set(`${s.name} ${s.type}`, [...s.values].sort());
            // A PTR name's TXT (its ownership record) is checked through the PTR's presence alone.
            expect(Object.fromEntries([...held].sort())).toEqual(
              Object.fromEntries([...expected].map(([k, v]) => [k, [...v].sort()] as const).sort()),
            );
          } finally {
            stream.close();
          }
        }),
        { numRuns: runs },
      );
    });
  });
}
