import { describe, expect, it } from 'vitest';
import { memoryEngine } from '../support/engines.ts';
import { testApi } from '../support/api.ts';

const owner = { kind: 'Pod', name: 'web-0', uid: 'u-1' };
const rfc2136 = { server: '127.0.0.1', port: 5353, keyName: 'ipam-key', secretFrom: 'env:IPAM_TSIG_SECRET' };

describe('Pool dns settings and claim hostname', () => {
  it('creates a pool with dns, answers it normalized, and copies a claim hostname onto its leases', async () => {
    // Prepare
    const api = await testApi({}, {}, undefined, memoryEngine);
    // Act
    const created = await api.call('POST', '/v1/pools', {
      name: 'pods',
      dns: { zone: 'Pods.Example.Internal', reverse: true, target: { rfc2136 } },
    });
    await api.call('POST', '/v1/pools/pods/ranges', { cidr: '10.0.0.0/24' });
    const claim = await api.call('POST', '/v1/pools/pods/claims', { name: 'web-0', owner, hostname: 'www' });
    // Assess
    expect(created.status).toBe(201);
    expect(created.body.dns).toEqual({
      zone: 'pods.example.internal.',
      ttlSeconds: 60,
      reverse: true,
      target: { rfc2136: { ...rfc2136, keyName: 'ipam-key.', keyAlgorithm: 'hmac-sha256' } },
    });
    expect((await api.call('GET', '/v1/pools/pods')).body.dns).toEqual(created.body.dns);
    expect(claim.status).toBe(201);
    expect(claim.body.hostname).toBe('www');
    const address = (claim.body.addresses as { address: string }[])[0]!.address;
    expect((await api.container.deps.leases.getLease('pods', address))?.dnsLabel).toBe('www');
  });

  it.each<[string, unknown, string]>([
    ['a zone with a bad label', { zone: 'pods..internal', target: { rfc2136 } }, 'dns.zone'],
    [
      'a secret in the table',
      { zone: 'a.', target: { rfc2136: { ...rfc2136, secret: 'c2VjcmV0' } } },
      'dns.target.rfc2136.secret',
    ],
    [
      'no secret source',
      { zone: 'a.', target: { rfc2136: { ...rfc2136, secretFrom: 'c2VjcmV0' } } },
      'dns.target.rfc2136.secretFrom',
    ],
    ['two targets', { zone: 'a.', target: { rfc2136, route53: { hostedZoneId: 'Z1' } } }, 'dns.target'],
    [
      'a bad hosted zone id',
      { zone: 'a.', target: { route53: { hostedZoneId: 'z/1' } } },
      'dns.target.route53.hostedZoneId',
    ],
    ['a negative ttl', { zone: 'a.', ttlSeconds: -1, target: { rfc2136 } }, 'dns.ttlSeconds'],
    ['a forward reverse zone', { zone: 'a.', reverseZones: ['a.'], target: { rfc2136 } }, 'dns.reverseZones'],
  ])('refuses %s with 400 naming the field, and writes no pool', async (_what, dns, field) => {
    const api = await testApi({}, {}, undefined, memoryEngine);
    const r = await api.call('POST', '/v1/pools', { name: 'pods', dns });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('InvalidArgument');
    expect(r.body.detail).toContain(field);
    expect((await api.call('GET', '/v1/pools/pods')).status).toBe(404);
  });

  it('refuses dns on a block pool, and a hostname that is not one label', async () => {
    const api = await testApi({}, {}, undefined, memoryEngine);
    const block = await api.call('POST', '/v1/pools', {
      name: 'blocks',
      blockPrefixLength: { IPv4: 26 },
      dns: { zone: 'a.', target: { rfc2136 } },
    });
    expect(block.status).toBe(400);
    expect(block.body.detail).toContain('block pool publishes no DNS names');
    await api.call('POST', '/v1/pools', { name: 'pods', dns: { zone: 'a.', target: { rfc2136 } } });
    await api.call('POST', '/v1/pools/pods/ranges', { cidr: '10.0.0.0/24' });
    const bad = await api.call('POST', '/v1/pools/pods/claims', { name: 'web-0', owner, hostname: 'a.b' });
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toContain('hostname');
    expect((await api.call('GET', '/v1/pools/pods/claims/web-0')).status).toBe(404);
  });

  it('defaults the target to the embedded server on the local stack, and takes {"local": {}} there', async () => {
    const api = await testApi({}, { LOCAL_STACK: 'true' }, undefined, memoryEngine);
    const bare = await api.call('POST', '/v1/pools', { name: 'pods', dns: { zone: 'pods.example.internal' } });
    const named = await api.call('POST', '/v1/pools', { name: 'more', dns: { zone: 'b.', target: { local: {} } } });
    expect(bare.status).toBe(201);
    expect(bare.body.dns).toEqual({
      zone: 'pods.example.internal.',
      ttlSeconds: 60,
      reverse: false,
      target: { local: {} },
    });
    expect(named.status).toBe(201);
    expect((named.body.dns as { target: unknown }).target).toEqual({ local: {} });
  });

  it.each<[string, unknown, string]>([
    ['the local target', { zone: 'a.', target: { local: {} } }, "dns.target.local is the local stack's"],
    ['no target', { zone: 'a.' }, 'dns.target must be'],
  ])('refuses %s outside the local stack with 400, and writes no pool', async (_what, dns, sentence) => {
    const deployed = { LOCAL_STACK: 'false', CURSOR_SECRET: 'a-deployed-stage-secret' };
    const api = await testApi({}, deployed, undefined, memoryEngine);
    const r = await api.call('POST', '/v1/pools', { name: 'pods', dns });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('InvalidArgument');
    expect(r.body.detail).toContain(sentence);
    expect((await api.call('GET', '/v1/pools/pods')).status).toBe(404);
  });
});
