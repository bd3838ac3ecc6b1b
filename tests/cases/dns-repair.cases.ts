import { describe, expect, it } from 'vitest';
import type { TestEngine } from '../support/engines.ts';
import { reconcilerHarness, type ReconcilerHarness } from '../support/reconciler.ts';
import { FlakyZones } from '../support/dns.ts';
import { ownerText, reverseName } from '../../shared/core/dns/records.ts';
import { runReconciler } from '../../shared/adapters/reconcile-runner.ts';

const ZONE = 'pods.example.internal.';
const REVERSE = '0.0.10.in-addr.arpa.';
const rfc2136 = { server: '127.0.0.1', port: 53, keyName: 'ipam', secretFrom: 'env:IPAM_TSIG_SECRET' };
const fqdn = (label: string) => `${label}.${ZONE}`;
/** Past the orphan grace of the test settings (60 s): the reconciler leaves younger claims to the stream function. */
const PAST_GRACE = 61_000;
const sorted = (o: Record<string, string[]>) =>
  Object.fromEntries(Object.entries(o).sort(([a], [b]) => (a < b ? -1 : 1)));

/**
 * The reconciler's repair of zone drift, both ways, with no stream function running at all (it is down, or lost
 * records): what the live claims should publish is added or fixed, the service's own records of gone claims are
 * removed, records it did not make are left alone, and a run's target calls stay within its budget.
 */
export function dnsRepairCases(engine: TestEngine): void {
  async function stack() {
    const zones = new FlakyZones();
    const h = await reconcilerHarness({ engine, overrides: { dnsTargets: () => zones } });
    const created = await h.api.call('POST', '/v1/pools', {
      name: 'pods',
      dns: { zone: ZONE, reverse: true, target: { rfc2136 } },
    });
    expect(created.status).toBe(201);
    expect((await h.api.call('POST', '/v1/pools/pods/ranges', { cidr: '10.0.0.0/24' })).status).toBe(201);
    return { h, zones };
  }

  const claim = (h: ReconcilerHarness, name: string, address: string) =>
    h.claim('pods', { name, owner: { kind: 'Pod', name, uid: `uid-${name}` }, addresses: [address] });

  /** Every record set of every zone, as "name type" -> sorted values. */
  async function held(zones: FlakyZones): Promise<Record<string, string[]>> {
    const out: Record<string, string[]> = {};
    for (const zone of zones.zones.zoneNames())
      for (const s of await zones.zones.list(zone)) out[`${s.name} ${s.type}`] = [...s.values].sort();
    return sorted(out);
  }

  /** What the live claims of the pool should publish, in the same shape, plus the records given. */
  async function expected(h: ReconcilerHarness, others: Record<string, string[]> = {}) {
    const out: Record<string, string[]> = { ...others };
    for (const c of (await h.api.call('GET', '/v1/pools/pods/claims')).body.items ?? []) {
      const name = fqdn(c.name as string);
      const addresses = (c.addresses as { address: string }[]).map((a) => a.address);
      const txt = [ownerText({ pool: 'pods', claim: c.name as string, uid: c.uid as string })];
      out[`${name} A`] = addresses.sort();
      out[`${name} TXT`] = txt;
      for (const a of addresses) {
        out[`${reverseName(a)} PTR`] = [name];
        out[`${reverseName(a)} TXT`] = txt;
      }
    }
    return sorted(out);
  }

  const dnsOf = (report: Awaited<ReturnType<ReconcilerHarness['run']>>) => report.dns.find((d) => d.pool === 'pods');

  describe('DNS drift repair by the reconciler', () => {
    it("publishes a live claim's missing names, and restores a record deleted by hand", async () => {
      const { h, zones } = await stack();
      await claim(h, 'web-0', '10.0.0.10');
      // A claim younger than the grace is the stream function's to publish: the run leaves it alone.
      await h.run();
      expect(zones.values(fqdn('web-0'), 'A')).toEqual([]);
      h.clock.advance(PAST_GRACE);
      const first = dnsOf(await h.run());
      expect(first).toMatchObject({ published: 2, removed: 0 });
      expect(await held(zones)).toEqual(await expected(h));
      await zones.dropByHand(ZONE, fqdn('web-0'));
      await zones.dropByHand(REVERSE, reverseName('10.0.0.10'));
      expect(zones.values(fqdn('web-0'), 'A')).toEqual([]);
      expect(dnsOf(await h.run())).toMatchObject({ published: 2, removed: 0 });
      expect(zones.values(fqdn('web-0'), 'A')).toEqual(['10.0.0.10']);
      expect(zones.values(reverseName('10.0.0.10'), 'PTR')).toEqual([fqdn('web-0')]);
      expect(await held(zones)).toEqual(await expected(h));
      // Nothing drifted: a run lists the zones and changes nothing.
      const calls = zones.calls.change;
      expect(dnsOf(await h.run())).toMatchObject({ published: 0, removed: 0 });
      expect(zones.calls.change).toBe(calls);
    });

    it('removes its own records of a claim released while the stream function was down, and moves a moved address', async () => {
      const { h, zones } = await stack();
      await claim(h, 'web-0', '10.0.0.20');
      await claim(h, 'web-1', '10.0.0.21');
      h.clock.advance(PAST_GRACE);
      await h.run();
      expect(zones.values(fqdn('web-1'), 'A')).toEqual(['10.0.0.21']);
      // No stream function: the zone still holds what the claims published before.
      expect((await h.api.call('DELETE', '/v1/pools/pods/claims/web-0')).status).toBe(204);
      expect((await h.api.call('DELETE', '/v1/pools/pods/claims/web-1')).status).toBe(204);
      await claim(h, 'web-1', '10.0.0.22');
      h.clock.advance(PAST_GRACE);
      const report = dnsOf(await h.run());
      expect(report).toMatchObject({ removed: 3 });
      expect(zones.values(fqdn('web-0'), 'A')).toEqual([]);
      expect(zones.values(fqdn('web-0'), 'TXT')).toEqual([]);
      expect(zones.values(reverseName('10.0.0.20'), 'PTR')).toEqual([]);
      expect(zones.values(reverseName('10.0.0.21'), 'PTR')).toEqual([]);
      expect(zones.values(fqdn('web-1'), 'A')).toEqual(['10.0.0.22']);
      expect(zones.values(reverseName('10.0.0.22'), 'PTR')).toEqual([fqdn('web-1')]);
      expect(await held(zones)).toEqual(await expected(h));
    });

    it('leaves records it did not make alone, and reports a name they take from a live claim', async () => {
      const { h, zones } = await stack();
      const hand = { name: fqdn('web-0'), type: 'A', ttl: 300, values: ['192.0.2.1'] };
      const printer = { name: fqdn('printer'), type: 'A', ttl: 300, values: ['192.0.2.2'] };
      // Another pool's record (its own ownership TXT) for a claim this pool never had.
      const theirs = [
        { name: fqdn('db-0'), type: 'A', ttl: 60, values: ['10.0.0.99'] },
        { name: fqdn('db-0'), type: 'TXT', ttl: 60, values: [ownerText({ pool: 'other', claim: 'db-0', uid: 'x' })] },
      ];
      for (const s of [hand, printer, ...theirs]) zones.zones.put(ZONE, s);
      await claim(h, 'web-0', '10.0.0.30');
      h.clock.advance(PAST_GRACE);
      const report = dnsOf(await h.run());
      expect(report?.taken).toEqual([{ name: fqdn('web-0'), claim: 'web-0' }]);
      expect(report?.removed).toBe(0);
      expect(zones.values(fqdn('web-0'), 'A')).toEqual(['192.0.2.1']);
      expect(zones.values(fqdn('web-0'), 'TXT')).toEqual([]);
      expect(zones.values(fqdn('printer'), 'A')).toEqual(['192.0.2.2']);
      expect(zones.values(fqdn('db-0'), 'A')).toEqual(['10.0.0.99']);
      // The PTR name is free: it is published, pointing at the name the claim would have.
      expect(zones.values(reverseName('10.0.0.30'), 'PTR')).toEqual([fqdn('web-0')]);
      // The scheduled function's runner logs the taken name, every run that sees it.
      const logged: Record<string, unknown>[] = [];
      const { deps, config } = h.api.container;
      const summary = await runReconciler(deps, config.reconciler, 60_000, { log: (e) => logged.push(e) });
      expect(summary.dns).toEqual({ published: 0, removed: 0, taken: 1 });
      expect(logged).toContainEqual(
        expect.objectContaining({ message: 'dns name taken', pool: 'pods', claim: 'web-0', name: fqdn('web-0') }),
      );
      // Released, the claim's PTR goes; the hand-made A it never owned stays.
      await h.api.call('DELETE', '/v1/pools/pods/claims/web-0');
      expect(dnsOf(await h.run())).toMatchObject({ removed: 1, taken: [] });
      expect(zones.values(fqdn('web-0'), 'A')).toEqual(['192.0.2.1']);
      expect(zones.values(reverseName('10.0.0.30'), 'PTR')).toEqual([]);
      expect(zones.values(fqdn('db-0'), 'TXT')).toHaveLength(1);
    });

    it('converges over runs on more drift than one run may repair, each run within its call budget', async () => {
      const { h, zones } = await stack();
      for (let i = 0; i < 6; i++) await claim(h, `web-${i}`, `10.0.0.${40 + i}`);
      h.clock.advance(PAST_GRACE);
      await h.run();
      expect(await held(zones)).toEqual(await expected(h));
      // Drift: four names deleted by hand, two claims released with nobody removing their names (8 names in all).
      for (const i of [0, 1, 2, 3]) await zones.dropByHand(ZONE, fqdn(`web-${i}`));
      for (const i of [4, 5]) await h.api.call('DELETE', `/v1/pools/pods/claims/web-${i}`);
      const budget = { calls: 3, changes: 2, names: 3, claims: 2 };
      const perRun: number[] = [];
      for (let run = 0; run < 12; run++) {
        const before = zones.totalCalls();
        const report = dnsOf(await h.run({ settings: { dns: budget } }));
        perRun.push(zones.totalCalls() - before);
        expect(report!.calls).toBe(perRun.at(-1));
        expect(report!.published + report!.removed).toBeLessThanOrEqual(budget.changes);
        if (JSON.stringify(await held(zones)) === JSON.stringify(await expected(h))) break;
      }
      expect(await held(zones)).toEqual(await expected(h));
      expect(perRun.length).toBeGreaterThanOrEqual(4);
      expect(Math.max(...perRun)).toBeLessThanOrEqual(budget.calls);
    });
  });
}
