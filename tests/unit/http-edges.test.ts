import { describe, expect, it } from 'vitest';
import { testApi, httpEvent } from '../support/api.ts';
import { memoryEngine } from '../support/engines.ts';

describe("The API's edges: unknown paths, wrong methods, the answer's last byte", () => {
  it('answers an unknown path 404 and a wrong method on a known path 405 with Allow, both problem documents, JSON ending in a newline', async () => {
    // Prepare
    const api = await testApi({}, {}, undefined, memoryEngine);
    expect((await api.call('POST', '/v1/pools', { name: 'x' })).status).toBe(201);
    const routed = (method: string, path: string) => ({ ...httpEvent(method, path), routeKey: '$default' });

    // Act
    const nothing = await api.invoke(routed('GET', '/v1/nothing'));
    const put = await api.invoke(routed('PUT', '/v1/pools/x'));
    const read = await api.invoke(routed('GET', '/v1/pools/x'));

    // Assess
    expect([nothing.statusCode, nothing.headers?.['content-type']]).toEqual([404, 'application/problem+json']);
    expect(JSON.parse(nothing.body!)).toMatchObject({ code: 'NotFound', detail: 'No route GET /v1/nothing.' });
    expect([put.statusCode, put.headers?.allow]).toEqual([405, 'GET, DELETE']);
    expect(JSON.parse(put.body!)).toMatchObject({
      code: 'MethodNotAllowed',
      status: 405,
      detail: '/v1/pools/x takes GET, DELETE, not PUT.',
    });
    for (const res of [nothing, put, read]) expect(res.body!.endsWith('}\n')).toBe(true);
    expect(JSON.parse(read.body!)).toMatchObject({ name: 'x' });
  });
});
