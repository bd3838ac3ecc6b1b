import { afterEach, describe, expect, it } from 'vitest';
import dnsPacket, { type Packet } from 'dns-packet';
import { MemoryZones } from '../../shared/adapters/dns/memory-zone.ts';
import { dnsTargets } from '../../shared/adapters/dns/targets.ts';
import { startLocalDns, type LocalDns } from '../../scripts/local-dns-server.ts';
import { startZoneService, type ZoneService } from '../../scripts/local-zone-service.ts';
import { memoryStreamEngine, type LeaseStream } from '../support/lease-stream.ts';
import { mirrorOf } from '../support/legacy.ts';
import { reconcilerHarness } from '../support/reconciler.ts';
import { rcodeOf, tcpQueries, udpQuery } from '../support/dns-query.ts';

const ZONE = 'pods.example.internal.';
const owner = (name: string) => ({ kind: 'Pod', name, uid: `uid-${name}` });

const dataOf = (p: Packet, type: string) =>
  (p.answers ?? []).filter((a) => a.type === type).map((a) => (a as { data: unknown }).data);

describe('The local stack DNS server', () => {
  const opened: { close(): unknown }[] = [];
  afterEach(async () => {
    for (const o of opened.splice(0).reverse()) await o.close();
  });

  /** The stack's parts: zones in memory, the service the stream function writes through, the DNS server. */
  async function serve(): Promise<{ dns: LocalDns; service: ZoneService; zones: MemoryZones }> {
    const zones = new MemoryZones();
    const service = await startZoneService({ zones, token: 'test-token' });
    opened.push(service);
    const dns = await startLocalDns({ zones, port: 0 });
    opened.push(dns);
    return { dns, service, zones };
  }

  it('answers a claim published by the stream function through the local target, over UDP and TCP', async () => {
    // Prepare: a pool with dns and no target (the local stack's default) and a dual-stack claim.
    const { dns, service } = await serve();
    const streams = memoryStreamEngine();
    const targets = dnsTargets({ local: () => ({ endpoint: service.endpoint, token: 'test-token' }) });
    const h = await reconcilerHarness({ engine: streams.engine, overrides: { dnsTargets: targets } });
    const stream: LeaseStream = streams.stream();
    opened.push(stream);
    const drain = async () => (await stream.drain(mirrorOf(h.api.container, []), { retries: 1 })).failed;
    expect(
      (await h.api.call('POST', '/v1/pools', { name: 'pods', dns: { zone: ZONE, reverse: true } })).body.dns,
    ).toMatchObject({ target: { local: {} } });
    for (const cidr of ['10.0.0.0/24', 'fd00::/64'])
      expect((await h.api.call('POST', '/v1/pools/pods/ranges', { cidr })).status).toBe(201);
    await h.claim('pods', {
      name: 'web-0',
      owner: owner('web-0'),
      ipFamilyPolicy: 'RequireDualStack',
      addresses: ['10.0.0.10', 'fd00::a'],
    });
    // Act
    expect(await drain()).toEqual([]);
    const a = await udpQuery(dns.port, { name: 'web-0.pods.example.internal', type: 'A' });
    const [aaaa, ptr] = await tcpQueries(dns.port, [
      { name: 'web-0.pods.example.internal', type: 'AAAA' },
      { name: '10.0.0.10.in-addr.arpa', type: 'PTR' },
    ]);
    const txt = await udpQuery(dns.port, { name: 'web-0.pods.example.internal', type: 'TXT' });
    // Assess
    expect([rcodeOf(a), a.id, a.flags! & dnsPacket.AUTHORITATIVE_ANSWER]).toEqual([
      'NOERROR',
      7,
      dnsPacket.AUTHORITATIVE_ANSWER,
    ]);
    expect(dataOf(a, 'A')).toEqual(['10.0.0.10']);
    expect([aaaa!.id, ptr!.id]).toEqual([100, 101]);
    expect(dataOf(aaaa!, 'AAAA')).toEqual(['fd00::a']);
    expect(dataOf(ptr!, 'PTR')).toEqual(['web-0.pods.example.internal']);
    const uid = (await h.api.call('GET', '/v1/pools/pods/claims/web-0')).body.uid as string;
    expect(dataOf(txt, 'TXT').map((d) => (d as Buffer[]).join(''))).toEqual([
      `heritage=ipam,pool=pods,claim=web-0,uid=${uid}`,
    ]);

    // Act: the release removes the names.
    expect((await h.api.call('DELETE', '/v1/pools/pods/claims/web-0')).status).toBeLessThan(300);
    expect(await drain()).toEqual([]);
    const gone = await udpQuery(dns.port, { name: 'web-0.pods.example.internal', type: 'A' });
    // Assess: NXDOMAIN, with the zone's SOA saying so authoritatively.
    expect(rcodeOf(gone)).toBe('NXDOMAIN');
    expect(gone.authorities?.map((r) => [r.name, r.type])).toEqual([['pods.example.internal', 'SOA']]);
  });

  it('answers SOA and NS at the apex, NODATA for a missing type, REFUSED outside its zones', async () => {
    // Prepare
    const { dns, zones } = await serve();
    zones.put(ZONE, { name: `db.${ZONE}`, type: 'A', ttl: 60, values: ['10.0.0.5'] });
    // Act
    const [soa, ns] = await tcpQueries(dns.port, [
      { name: 'pods.example.internal', type: 'SOA' },
      { name: 'pods.example.internal', type: 'NS' },
    ]);
    const nodata = await udpQuery(dns.port, { name: 'db.pods.example.internal', type: 'AAAA' });
    const other = await udpQuery(dns.port, { name: 'example.com', type: 'A' });
    // Assess
    expect(rcodeOf(soa!)).toBe('NOERROR');
    expect(dataOf(soa!, 'SOA')).toEqual([expect.objectContaining({ mname: 'localhost', serial: 2 })]);
    expect(dataOf(ns!, 'NS')).toEqual(['localhost']);
    expect([rcodeOf(nodata), nodata.answers, nodata.authorities?.[0]?.type]).toEqual(['NOERROR', [], 'SOA']);
    expect([rcodeOf(other), other.flags! & dnsPacket.AUTHORITATIVE_ANSWER]).toEqual(['REFUSED', 0]);
  });

  it('refuses a write to the zones without the stack token', async () => {
    const { service, zones } = await serve();
    const wrong = dnsTargets({ local: () => ({ endpoint: service.endpoint, token: 'guessed' }) })({ kind: 'local' });
    await expect(wrong.list(ZONE)).rejects.toThrow(/401/);
    expect(zones.zoneNames()).toEqual([]);
  });
});
