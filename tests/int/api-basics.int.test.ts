import { describe, expect, it } from 'vitest';
import { RecordedMetrics, testApi } from '../support/api.ts';

const owner = (uid: string) => ({ kind: 'Pod', name: `pod-${uid}`, uid });

describe('HTTP API: pools, ranges and claims', () => {
  it('allocates a claim from a range and reads it back', async () => {
    // Prepare
    const api = await testApi();
    expect((await api.call('POST', '/v1/pools', { name: 'demo' })).status).toBe(201);
    const range = await api.call('POST', '/v1/pools/demo/ranges', { cidr: '10.96.0.0/24' });
    expect(range.status).toBe(201);
    expect(range.body).toMatchObject({
      name: '10.96.0.0-24',
      cidr: '10.96.0.0/24',
      family: 'IPv4',
      state: 'Ready',
      size: 254,
      used: 0,
      free: 254,
    });
    // Act
    const claim = await api.call('POST', '/v1/pools/demo/claims', { name: 'web', owner: owner('u1') });
    // Assess
    expect(claim.status).toBe(201);
    const [address] = claim.body.addresses as { address: string; family: string; range: string }[];
    expect(address).toMatchObject({ family: 'IPv4', range: '10.96.0.0-24' });
    expect((await api.call('GET', `/v1/pools/demo/addresses/${address!.address}`)).body).toMatchObject({
      claim: 'web',
      owner: owner('u1'),
    });
    expect((await api.call('GET', '/v1/pools/demo')).body.utilization).toEqual({
      IPv4: { size: 254, used: 1, releasing: 0, free: 253 },
    });
  });

  it('answers an idempotent repeat of a claim with 200 and the same document, field for field in the same order', async () => {
    // Prepare
    const api = await testApi();
    await api.call('POST', '/v1/pools', { name: 'demo' });
    await api.call('POST', '/v1/pools/demo/ranges', { cidr: '10.96.0.0/24' });
    const spec = { name: 'web', owner: owner('u1') };
    const first = await api.call('POST', '/v1/pools/demo/claims', spec);
    // Act
    const repeat = await api.call('POST', '/v1/pools/demo/claims', spec);
    // Assess: the same text, not only equal objects (the repeat is read back from the table).
    expect([first.status, repeat.status]).toEqual([201, 200]);
    expect(JSON.stringify(repeat.body)).toBe(JSON.stringify(first.body));
  });

  it('health answers its status only: no table name, runtime or code version', async () => {
    const api = await testApi();
    const res = await api.call('GET', '/v1/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('counts allocations and refusals by scope for the metrics', async () => {
    // Prepare
    const metrics = new RecordedMetrics();
    const api = await testApi({}, {}, metrics);
    // .2 is excluded, so the dynamic claims can only get .1; the explicit ones ask for .2.
    await api.call('POST', '/v1/pools', { name: 'm', exclude: ['10.0.0.2'] });
    await api.call('POST', '/v1/pools/m/ranges', { cidr: '10.0.0.0/30' });
    // Act
    await api.call('POST', '/v1/pools/m/claims', { name: 'a', owner: owner('a') });
    await api.call('POST', '/v1/pools/m/claims', { name: 'b', owner: owner('b'), addresses: ['10.0.0.2'] });
    await api.call('POST', '/v1/pools/m/claims', { name: 'c', owner: owner('c'), addresses: ['10.0.0.2'] });
    await api.call('POST', '/v1/pools/m/claims', { name: 'd', owner: owner('d') });
    // Assess: the second dynamic claim finds the one dynamic address taken.
    expect(metrics.lines.filter((l) => !l.startsWith('Collisions'))).toEqual([
      'Allocations dynamic',
      'Allocations static',
      'AllocationErrors static AlreadyAllocated',
      'AllocationErrors dynamic RangeFull',
    ]);
  });
});
