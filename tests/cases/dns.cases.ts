import { afterEach, describe, expect, it } from 'vitest';
import type { LeaseStream, StreamEngine } from '../support/lease-stream.ts';
import { mirrorOf } from '../support/legacy.ts';
import { reconcilerHarness, EXPIRED_PAST_GRACE, type ReconcilerHarness } from '../support/reconciler.ts';
import { FlakyZones } from '../support/dns.ts';

const ZONE = 'pods.example.internal.';
const rfc2136 = { server: '127.0.0.1', port: 53, keyName: 'ipam', secretFrom: 'env:IPAM_TSIG_SECRET' };
const owner = (name: string) => ({ kind: 'Pod', name, uid: `uid-${name}` });
const fqdn = (label: string) => `${label}.${ZONE}`;

/**
 * The stream function's DNS upkeep through the real HTTP handler and the table's own stream records, into memory
 * zones: what a claim publishes, what each kind of release removes, and what it leaves alone.
 */
export function dnsCases(streams: StreamEngine, options: { readonly everyReleaseKind: boolean }): void {
  // Each case costs DynamoDB Local's stream about 10 s on a loaded machine: the int tier runs the release kinds the
  // memory tier covers once (the claim release) and every other case.
  const releaseKind = (options.everyReleaseKind ? it : () => undefined) as typeof it;
  const opened: LeaseStream[] = [];
  afterEach(() => {
    for (const s of opened.splice(0)) s.close();
  });

  async function stack(dns: Record<string, unknown> = {}) {
    const zones = new FlakyZones();
    const h = await reconcilerHarness({ engine: streams.engine, overrides: { dnsTargets: () => zones } });
    const stream = streams.stream();
    opened.push(stream);
    const logged: Record<string, unknown>[] = [];
    const created = await h.api.call('POST', '/v1/pools', {
      name: 'pods',
      dns: { zone: ZONE, reverse: true, target: { rfc2136 }, ...dns },
    });
    expect(created.status).toBe(201);
    for (const cidr of ['10.0.0.0/24', 'fd00::/64'])
      expect((await h.api.call('POST', '/v1/pools/pods/ranges', { cidr })).status).toBe(201);
    const drainAll = (retries = 3) => stream.drain(mirrorOf(h.api.container, logged), { retries });
    const drain = async (retries = 3) => (await drainAll(retries)).failed;
    return { h, zones, drain, drainAll, logged };
  }

  const claim = (h: ReconcilerHarness, name: string, body: Record<string, unknown> = {}) =>
    h.claim('pods', { name, owner: owner(name), ...body });

  describe('publishing', () => {
    it('publishes A, AAAA, the ownership TXT and a PTR per address on a claim', async () => {
      const { h, zones, drain } = await stack();
      await claim(h, 'web-0', { ipFamilyPolicy: 'RequireDualStack', addresses: ['10.0.0.10', 'fd00::a'] });
      expect(await drain()).toEqual([]);
      expect(zones.values(fqdn('web-0'), 'A')).toEqual(['10.0.0.10']);
      expect(zones.values(fqdn('web-0'), 'AAAA')).toEqual(['fd00::a']);
      const uid = (await h.api.call('GET', '/v1/pools/pods/claims/web-0')).body.uid as string;
      expect(zones.values(fqdn('web-0'), 'TXT')).toEqual([`heritage=ipam,pool=pods,claim=web-0,uid=${uid}`]);
      expect(zones.values('10.0.0.10.in-addr.arpa.', 'PTR')).toEqual([fqdn('web-0')]);
      const nibbles = `${[...'fd00000000000000000000000000000a'].reverse().join('.')}.ip6.arpa.`;
      expect(zones.values(nibbles, 'PTR')).toEqual([fqdn('web-0')]);
      expect(await zones.zones.read('0.0.10.in-addr.arpa.', ['10.0.0.10.in-addr.arpa.'])).toHaveProperty('size', 1);
      expect(zones.zones.zoneNames().sort()).toEqual(
        [ZONE, '0.0.10.in-addr.arpa.', `${[...'fd00000000000000'].reverse().join('.')}.ip6.arpa.`].sort(),
      );
    });

    releaseKind('publishes a claim hostname instead of its name, and no PTR without reverse', async () => {
      const { h, zones, drain } = await stack({ reverse: false });
      await claim(h, 'web-0', { hostname: 'www', addresses: ['10.0.0.11'] });
      expect(await drain()).toEqual([]);
      expect(zones.values(fqdn('www'), 'A')).toEqual(['10.0.0.11']);
      expect(zones.values(fqdn('web-0'), 'A')).toEqual([]);
      expect(zones.values('11.0.0.10.in-addr.arpa.', 'PTR')).toEqual([]);
    });
  });

  describe('removal on every kind of release', () => {
    const gone = async (zones: FlakyZones, address: string) => {
      expect(zones.values(fqdn('web-0'), 'A')).toEqual([]);
      expect(zones.values(fqdn('web-0'), 'TXT')).toEqual([]);
      expect(zones.values(`${address.split('.').reverse().join('.')}.in-addr.arpa.`, 'PTR')).toEqual([]);
    };

    it('removes them on the claim release', async () => {
      const { h, zones, drain } = await stack();
      await claim(h, 'web-0', { addresses: ['10.0.0.20'] });
      await drain();
      expect(zones.values(fqdn('web-0'), 'A')).toEqual(['10.0.0.20']);
      expect((await h.api.call('DELETE', '/v1/pools/pods/claims/web-0')).status).toBe(204);
      expect(await drain()).toEqual([]);
      await gone(zones, '10.0.0.20');
    });

    releaseKind('removes them on an owner release', async () => {
      const { h, zones, drain } = await stack();
      await claim(h, 'web-0', { addresses: ['10.0.0.21'] });
      await drain();
      expect(zones.values(fqdn('web-0'), 'A')).toEqual(['10.0.0.21']);
      expect((await h.api.call('DELETE', '/v1/pools/pods/owners/uid-web-0')).status).toBe(200);
      expect(await drain()).toEqual([]);
      await gone(zones, '10.0.0.21');
    });

    releaseKind("removes them when the claim's last consumer leaves", async () => {
      const { h, zones, drain } = await stack();
      await claim(h, 'web-0', { addresses: ['10.0.0.22'] });
      const consumer = { kind: 'Pod', name: 'c', uid: 'c-1' };
      expect((await h.api.call('POST', '/v1/pools/pods/claims/web-0/consumers', consumer)).status).toBe(201);
      await drain();
      expect(zones.values(fqdn('web-0'), 'A')).toEqual(['10.0.0.22']);
      expect((await h.api.call('DELETE', '/v1/pools/pods/claims/web-0/consumers/c-1')).status).toBe(200);
      expect(await drain()).toEqual([]);
      await gone(zones, '10.0.0.22');
    });

    releaseKind('removes them when the claim expires and the reconciler releases it', async () => {
      const { h, zones, drain } = await stack();
      await claim(h, 'web-0', { addresses: ['10.0.0.23'], ttlSeconds: 60 });
      await drain();
      expect(zones.values(fqdn('web-0'), 'A')).toEqual(['10.0.0.23']);
      h.clock.advance(EXPIRED_PAST_GRACE);
      await h.run();
      expect(await drain()).toEqual([]);
      await gone(zones, '10.0.0.23');
    });
  });

  it('moves the PTR when the address is claimed again under another name, and removes the old name', async () => {
    const { h, zones, drain } = await stack();
    await claim(h, 'web-0', { addresses: ['10.0.0.30'] });
    await h.api.call('DELETE', '/v1/pools/pods/claims/web-0');
    await claim(h, 'web-1', { addresses: ['10.0.0.30'] });
    // The three writes' records in one batch, and then the whole batch delivered again (at-least-once).
    expect(await drain()).toEqual([]);
    expect(zones.values('30.0.0.10.in-addr.arpa.', 'PTR')).toEqual([fqdn('web-1')]);
    expect(zones.values(fqdn('web-1'), 'A')).toEqual(['10.0.0.30']);
    expect(zones.values(fqdn('web-0'), 'A')).toEqual([]);
    const writes = zones.applied.length;
    await drain();
    expect(zones.applied.length).toBe(writes);
  });

  it('leaves a hand-made record alone and reports the name as taken', async () => {
    const { h, zones, drain, logged } = await stack();
    zones.zones.put(ZONE, { name: fqdn('web-0'), type: 'A', ttl: 300, values: ['192.0.2.1'] });
    await claim(h, 'web-0', { addresses: ['10.0.0.40'] });
    expect(await drain()).toEqual([]);
    expect(zones.values(fqdn('web-0'), 'A')).toEqual(['192.0.2.1']);
    expect(zones.values(fqdn('web-0'), 'TXT')).toEqual([]);
    expect(logged).toContainEqual(
      expect.objectContaining({ message: 'dns name taken', pool: 'pods', claim: 'web-0', name: fqdn('web-0') }),
    );
    // Its release touches the hand-made record no more than its claim did.
    await h.api.call('DELETE', '/v1/pools/pods/claims/web-0');
    expect(await drain()).toEqual([]);
    expect(zones.values(fqdn('web-0'), 'A')).toEqual(['192.0.2.1']);
  });

  // The int tier runs the taken case (status items and the event's transaction on DynamoDB Local); the other two in memory.
  describe("the claim's dns status", () => {
    releaseKind('shows each name of the claim published once the stream function wrote it', async () => {
      const { h, zones, drain, drainAll } = await stack();
      await claim(h, 'web-0', { addresses: ['10.0.0.60'] });
      expect(await drain()).toEqual([]);
      // The status items' own stream records are no lease changes: they start no DNS work (not even a read).
      const reads = zones.calls.read;
      const again = await drainAll();
      expect(again.records.some((r) => r.dynamodb?.NewImage?.entity?.S === 'dnsStatus')).toBe(true);
      expect(again.failed).toEqual([]);
      expect(zones.calls.read).toBe(reads);
      const got = await h.api.call('GET', '/v1/pools/pods/claims/web-0');
      expect(got.body.dns).toEqual([
        { name: '60.0.0.10.in-addr.arpa.', kind: 'reverse', state: 'published' },
        { name: fqdn('web-0'), kind: 'forward', state: 'published' },
      ]);
    });

    it('says taken, and why, for a name a hand-made record holds, with one pool event however often it is seen', async () => {
      const { h, zones, drain } = await stack();
      zones.zones.put(ZONE, { name: fqdn('web-0'), type: 'A', ttl: 300, values: ['192.0.2.1'] });
      await claim(h, 'web-0', { addresses: ['10.0.0.61'], ttlSeconds: 600 });
      expect(await drain()).toEqual([]);
      // Seen again: a renewal is a lease change of each address
      expect((await h.api.call('POST', '/v1/pools/pods/claims/web-0/renew', {})).status).toBe(200);
      expect(await drain()).toEqual([]);
      const got = await h.api.call('GET', '/v1/pools/pods/claims/web-0');
      expect(got.body.dns).toEqual([
        { name: '61.0.0.10.in-addr.arpa.', kind: 'reverse', state: 'published' },
        {
          name: fqdn('web-0'),
          kind: 'forward',
          state: 'taken',
          reason: 'held by records the service did not make (no ownership TXT of this pool)',
        },
      ]);
      const events = (await h.api.call('GET', '/v1/pools/pods/events')).body.items as Record<string, unknown>[];
      expect(events.filter((e) => e.reason === 'DnsNameTaken')).toEqual([
        expect.objectContaining({ object: 'claim/web-0', message: expect.stringContaining(fqdn('web-0')) }),
      ]);
      expect(zones.values(fqdn('web-0'), 'A')).toEqual(['192.0.2.1']);
    });

    releaseKind('says pending, with the error, while the target fails the name', async () => {
      const { h, zones, drain } = await stack({ reverse: false });
      zones.failChanges = 1_000;
      await claim(h, 'web-0', { addresses: ['10.0.0.62'] });
      expect(await drain(1)).not.toEqual([]);
      const got = await h.api.call('GET', '/v1/pools/pods/claims/web-0');
      expect(got.body.dns).toEqual([{ name: fqdn('web-0'), kind: 'forward', state: 'pending', reason: 'Throttling' }]);
    });
  });

  releaseKind(
    "writes one stream batch's names in one change call a zone (the target batches them within its limits)",
    async () => {
      const { h, zones, drain } = await stack();
      for (const [i, name] of ['web-0', 'web-1', 'web-2'].entries())
        await claim(h, name, { addresses: [`10.0.0.7${i}`] });
      expect(await drain()).toEqual([]);
      expect(zones.changeCalls.map((c) => [c.zone, c.names.length]).sort()).toEqual([
        ['0.0.10.in-addr.arpa.', 3],
        [ZONE, 3],
      ]);
      expect(zones.values(fqdn('web-2'), 'A')).toEqual(['10.0.0.72']);
    },
  );

  it('retries a failed DNS call through the stream and converges', async () => {
    const { h, zones, drain } = await stack();
    zones.failChanges = 2;
    zones.failReads = 1;
    await claim(h, 'web-0', { addresses: ['10.0.0.50'] });
    // The first deliveries fail the records of the failed names; the mapping's retries bring them back.
    expect(await drain(5)).toEqual([]);
    expect(zones.failChanges).toBe(0);
    expect(zones.values(fqdn('web-0'), 'A')).toEqual(['10.0.0.50']);
    expect(zones.values('50.0.0.10.in-addr.arpa.', 'PTR')).toEqual([fqdn('web-0')]);
  });
}
