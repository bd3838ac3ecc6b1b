import { describe, expect, it } from 'vitest';
import { tableSnapshot } from '../support/items.ts';
import { httpEvent, testApi, type TestApi } from '../support/api.ts';

// Issue 15, defects 1-3: each case answered 500 (1, 2) or released the claim (3) on 49d17b2.

const owner = (uid: string) => ({ kind: 'Pod', name: `pod-${uid}`, uid });

/** A pool `p` with one IPv4 range and a claim `a` with a TTL (version 1, ETag "1"). */
async function withClaim(): Promise<TestApi> {
  const api = await testApi();
  expect((await api.call('POST', '/v1/pools', { name: 'p' })).status).toBe(201);
  expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.15.0.0/24' })).status).toBe(201);
  const claim = await api.call('POST', '/v1/pools/p/claims', { name: 'a', owner: owner('u1'), ttlSeconds: 600 });
  expect(claim.status).toBe(201);
  expect(claim.headers.etag).toBe('"1"');
  return api;
}

function expectProblem(
  response: { statusCode?: number; headers?: Record<string, unknown>; body?: string },
  status: number,
  code: string,
): Record<string, unknown> {
  expect(response.statusCode).toBe(status);
  expect(response.headers?.['content-type']).toBe('application/problem+json');
  const problem = JSON.parse(response.body ?? '') as Record<string, unknown>;
  expect(problem).toMatchObject({ status, code, type: `https://ipam.dev/problems/${code}` });
  expect(problem.detail).toEqual(expect.stringMatching(/^\S.{8,}\.$/));
  return problem;
}

describe('Robustness: a JSON body that does not arrive as text (defect 1)', () => {
  const routes = [
    ['POST', '/v1/pools'],
    ['POST', '/v1/pools/p/ranges'],
    ['POST', '/v1/pools/p/claims'],
    ['POST', '/v1/pools/p/claims/a/renew'],
  ] as const;
  const bodies: [string, unknown][] = [
    ['the number 0', 0],
    ['false', false],
    ['true', true],
    ['the number 42', 42],
    ['an object', { name: 'q' }],
    ['an array', ['x']],
  ];

  it.each(routes)(
    'answers %s %s with 400 and changes nothing, whatever non-text body it gets',
    async (method, path) => {
      // Prepare
      const api = await withClaim();
      const before = await tableSnapshot(api.container.table);

      for (const [what, body] of bodies) {
        // Act
        const response = await api.invoke({ ...httpEvent(method, path), body });

        // Assess
        const problem = expectProblem(response, 400, 'InvalidArgument');
        expect(problem.detail, what).toMatch(/^The request body must arrive as JSON text/);
      }
      expect(await tableSnapshot(api.container.table)).toEqual(before);
    },
  );

  it.each<[string, unknown]>([
    ['null', null],
    ['a number', 7],
    ['a string', 'GET /v1/pools'],
    ['an array', []],
    ['an empty object', {}],
    ['headers that are not a map', { ...httpEvent('GET', '/v1/pools'), headers: 'accept: */*' }],
    ['a header that is not a string', { ...httpEvent('DELETE', '/v1/pools/p/claims/a'), headers: { 'if-match': 1 } }],
    [
      'a query parameter that is not a string',
      { ...httpEvent('GET', '/v1/pools'), queryStringParameters: { limit: 5 } },
    ],
    [
      'path parameters that are not strings',
      { ...httpEvent('GET', '/v1/pools/p'), routeKey: 'GET /v1/pools/{pool}', pathParameters: { pool: ['p'] } },
    ],
    ['a routeKey that is not a string', { ...httpEvent('GET', '/v1/pools'), routeKey: 5 }],
    ['a method that is not a string', { ...httpEvent('GET', '/v1/pools'), requestContext: { http: { method: 1 } } }],
  ])('answers an event that is %s with a 4xx problem document, never a crash', async (_what, event) => {
    // Prepare
    const api = await withClaim();
    const before = await tableSnapshot(api.container.table);

    // Act
    const response = await api.invoke(event);

    // Assess: no route can be found for an event without a method or path (404); a part of the wrong type is a 400.
    expect([400, 404]).toContain(response.statusCode);
    expectProblem(response, response.statusCode!, response.statusCode === 400 ? 'InvalidArgument' : 'NotFound');
    expect(await tableSnapshot(api.container.table)).toEqual(before);
  });
});

describe('Robustness: names are checked before they reach a key (defect 2)', () => {
  const long = 'a'.repeat(4000);

  const cases: [string, string, string, unknown?, Record<string, string>?][] = [
    ['GET', `/v1/pools/p/claims/${long}`, 'claim'],
    ['DELETE', `/v1/pools/p/claims/${long}`, 'claim'],
    ['POST', `/v1/pools/p/claims/${long}/renew`, 'claim', {}],
    ['DELETE', `/v1/pools/p/claims/${long}`, 'claim', undefined, { 'if-match': '"1"' }],
    ['GET', `/v1/pools/${long}`, 'pool'],
    ['DELETE', `/v1/pools/${long}`, 'pool'],
    ['GET', `/v1/pools/${long}/claims`, 'pool'],
    ['POST', `/v1/pools/${long}/ranges`, 'pool', { cidr: '10.16.0.0/24' }],
    ['POST', `/v1/pools/${long}/claims`, 'pool', { name: 'b', owner: owner('u2') }],
    ['GET', `/v1/pools/p/ranges/${long}`, 'range'],
    ['DELETE', `/v1/pools/p/ranges/${long}`, 'range'],
    ['GET', `/v1/pools/p/ranges/${long}/allocation`, 'range'],
    ['DELETE', `/v1/pools/p/owners/${'u'.repeat(4000)}`, 'uid'],
    ['DELETE', `/v1/pools/p/owners/${'u'.repeat(254)}`, 'uid'],
    ['GET', `/v1/pools/p/addresses/${'1'.repeat(4000)}`, 'address'],
    ['GET', `/v1/pools/p/claims?owner=${'u'.repeat(4000)}`, 'owner'],
    ['GET', `/v1/pools/p/addresses?range=${long}`, 'range'],
    ['GET', '/v1/pools/p/claims/Web', 'claim'],
    ['DELETE', '/v1/pools/p/claims/a_b', 'claim'],
    ['POST', '/v1/pools/p/claims', 'generateName', { generateName: `web${'-'.repeat(4000)}`, owner: owner('u3') }],
    ['POST', '/v1/pools/p/claims', 'owner.uid', { name: 'c', owner: { kind: 'Pod', name: 'n', uid: '\ud800' } }],
  ];
  const labelled = cases.map(([method, path, field, body, headers]) => ({
    label: `${method} ${path.length > 80 ? `${path.slice(0, 60)}... (${path.length} chars)` : path}`,
    method,
    path,
    field,
    body,
    headers,
  }));

  it.each(labelled)(
    'answers $label with 400 naming the $field, and changes nothing',
    async ({ method, path, field, body, headers }) => {
      // Prepare
      const api = await withClaim();
      const before = await tableSnapshot(api.container.table);

      // Act
      const response = await api.call(method, path, body, headers);

      // Assess
      expect(response.status).toBe(400);
      expect(response.headers['content-type']).toBe('application/problem+json');
      expect(response.body).toMatchObject({ code: 'InvalidArgument' });
      expect(response.body.detail).toMatch(new RegExp(`^${field.replace('.', '\\.')} `));
      expect(String(response.body.detail).length).toBeLessThan(300);
      expect(await tableSnapshot(api.container.table)).toEqual(before);
    },
  );

  it('still finds objects whose names are at the limits, and a range by its default IPv6 name', async () => {
    // Prepare
    const api = await withClaim();
    const claimName = `c${'x'.repeat(61)}9`;
    const uid = 'ü'.repeat(253); // 253 characters, 506 bytes
    expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '::/64' })).status).toBe(201);
    expect(
      (
        await api.call('POST', '/v1/pools/p/claims', {
          name: claimName,
          owner: { kind: 'VM', name: 'vm', uid },
          ipFamilies: ['IPv6'],
        })
      ).status,
    ).toBe(201);

    // Act
    const claim = await api.call('GET', `/v1/pools/p/claims/${claimName}`);
    const range = await api.call('GET', '/v1/pools/p/ranges/::-64');
    const byOwner = await api.call('GET', `/v1/pools/p/claims?owner=${encodeURIComponent(uid)}`);

    // Assess
    expect(claim.status).toBe(200);
    expect(range.status).toBe(200);
    expect(range.body).toMatchObject({ name: '::-64', cidr: '::/64' });
    expect(byOwner.body.items?.map((c) => c.name)).toEqual([claimName]);
  });
});

describe('Robustness: If-Match compares entity tags (defect 3)', () => {
  it.each([
    ['"0x1"'],
    ['"1.0"'],
    ['"01"'],
    ['"+1"'],
    ['"0o1"'],
    ['"1e0"'],
    ['"é"'],
    ['W/"1"'],
    ['"2", W/"1"'],
    ['"0"'],
  ])('answers If-Match %s with 412 for a claim whose ETag is "1", and keeps the claim', async (value) => {
    // Prepare
    const api = await withClaim();
    const before = await tableSnapshot(api.container.table);

    // Act
    const response = await api.call('DELETE', '/v1/pools/p/claims/a', undefined, { 'If-Match': value });

    // Assess
    expect(response.status).toBe(412);
    expect(response.body).toMatchObject({
      code: 'PreconditionFailed',
      detail:
        'The object is at version 1; If-Match asked for ' +
        (value === '"0"' ? 'version 0.' : value === '"2", W/"1"' ? 'version 2.' : 'a version no claim can have.'),
    });
    expect(await tableSnapshot(api.container.table)).toEqual(before);
  });

  it.each([
    ['1'],
    ['0x1'],
    ['W/1'],
    ['w/"1"'],
    ['"1'],
    ['"1" "2"'],
    ['"1";"2"'],
    [''],
    [' , '],
    ['"1", *'],
    ['" 1"'],
    ['"€"'],
  ])('answers the malformed If-Match %j with 400, and keeps the claim', async (value) => {
    // Prepare
    const api = await withClaim();
    const before = await tableSnapshot(api.container.table);

    // Act
    const response = await api.call('DELETE', '/v1/pools/p/claims/a', undefined, { 'If-Match': value });

    // Assess
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 'InvalidArgument' });
    expect(response.body.detail).toMatch(/^If-Match must be "\*" or a comma-separated list of entity tags/);
    expect(await tableSnapshot(api.container.table)).toEqual(before);
  });

  it.each([['"1"'], ['*'], [' "1" '], ['"2", "1"'], ['W/"1", "1"'], ['"x,y", "1"'], [',"1",,']])(
    'releases the claim with If-Match %s',
    async (value) => {
      // Prepare
      const api = await withClaim();

      // Act
      const response = await api.call('DELETE', '/v1/pools/p/claims/a', undefined, { 'If-Match': value });

      // Assess
      expect(response.status).toBe(204);
      expect((await api.call('GET', '/v1/pools/p/claims/a')).status).toBe(404);
    },
  );

  it('answers If-Match * with 412 when the claim does not exist, and a renewed claim moves its ETag on', async () => {
    // Prepare
    const api = await withClaim();
    const renewed = await api.call('POST', '/v1/pools/p/claims/a/renew', {});
    expect(renewed.headers.etag).toBe('"2"');

    // Act
    const stale = await api.call('DELETE', '/v1/pools/p/claims/a', undefined, { 'If-Match': '"1"' });
    const current = await api.call('DELETE', '/v1/pools/p/claims/a', undefined, { 'If-Match': renewed.headers.etag! });
    const absent = await api.call('DELETE', '/v1/pools/p/claims/a', undefined, { 'If-Match': '*' });

    // Assess
    expect(stale.status).toBe(412);
    expect(current.status).toBe(204);
    expect(absent.status).toBe(412);
    expect(absent.body.detail).toBe('The object does not exist; If-Match asked for any version.');
  });
});
