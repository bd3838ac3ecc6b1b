import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { createHttpHandler } from '../../shared/adapters/http/api.ts';
import { httpEvent, testApi, type TestApi } from '../support/api.ts';
import type { TestEngine } from '../support/engines.ts';
import { owner, reconcilerHarness } from '../support/reconciler.ts';

// Issue 25: who may do what inside a pool (shared/core/access.ts), and who did it (createdBy, releasedBy, the audit
// line). On the local stack the caller comes from the x-ipam-principal header, as here.

const ACCOUNT = '123456789012';
const teamA = `arn:aws:iam::${ACCOUNT}:role/team-a-ci`;
const teamB = `arn:aws:iam::${ACCOUNT}:role/team-b-ci`;
const admin = `arn:aws:iam::${ACCOUNT}:role/netops`;
const stranger = `arn:aws:iam::${ACCOUNT}:user/mallory`;
/** What API Gateway's IAM authorizer reports for a session of team A's role. */
const teamASession = `arn:aws:sts::${ACCOUNT}:assumed-role/team-a-ci/build-7`;

const as = (arn: string) => ({ 'x-ipam-principal': arn });
const access = {
  administrators: [`arn:aws:iam::${ACCOUNT}:role/netops`],
  allocators: [`arn:aws:iam::${ACCOUNT}:role/team-?-ci`],
};

export function accessCases(engine: TestEngine): void {
  /** A pool `shared` (with `access` unless told) with one /24, and a claim of team A and one of team B for the same owner uid. */
  async function twoTeams(options: { access?: boolean; reuseDelaySeconds?: number } = {}) {
    const h = await reconcilerHarness({ engine });
    const api = h.api;
    const spec = {
      name: 'shared',
      ...(options.access === false ? {} : { access }),
      ...(options.reuseDelaySeconds ? { reuseDelaySeconds: options.reuseDelaySeconds } : {}),
    };
    expect((await api.call('POST', '/v1/pools', spec, as(admin))).status).toBe(201);
    expect((await api.call('POST', '/v1/pools/shared/ranges', { cidr: '10.0.3.0/24' }, as(admin))).status).toBe(201);
    const a = await api.call(
      'POST',
      '/v1/pools/shared/claims',
      { name: 'a-web', owner: owner('vm-1'), addresses: ['10.0.3.7'] },
      as(teamASession),
    );
    const b = await api.call(
      'POST',
      '/v1/pools/shared/claims',
      { name: 'b-web', owner: owner('vm-1'), addresses: ['10.0.3.8'] },
      as(teamB),
    );
    expect([a.status, b.status]).toEqual([201, 201]);
    return { h, api, a, b };
  }

  const claimNames = async (api: TestApi) =>
    ((await api.call('GET', '/v1/pools/shared/claims', undefined, as(admin))).body.items ?? [])
      .map((c) => c.name)
      .sort();

  describe(`Caller identity: createdBy and releasedBy (${engine.name})`, () => {
    it('records the creator of a claim, an assumed role as its role with the session apart, and returns it', async () => {
      // Prepare
      const { api, a } = await twoTeams();

      // Act
      const read = await api.call('GET', '/v1/pools/shared/claims/a-web', undefined, as(teamA));

      // Assess
      expect(a.body.createdBy).toEqual({ arn: teamA, session: 'build-7' });
      expect(read.body.createdBy).toEqual({ arn: teamA, session: 'build-7' });
    });

    it('records who released an address held for its owner (reuse delay), on the Released lease and in the owner release answer', async () => {
      // Prepare
      const { api } = await twoTeams({ reuseDelaySeconds: 600 });

      // Act
      const deleted = await api.call('DELETE', '/v1/pools/shared/claims/a-web', undefined, as(teamASession));
      const owners = await api.call('DELETE', '/v1/pools/shared/owners/vm-1', undefined, as(admin));

      // Assess
      expect(deleted.status).toBe(204);
      const held = await api.call('GET', '/v1/pools/shared/addresses?range=10.0.3.0-24', undefined, as(admin));
      const byAddress = Object.fromEntries((held.body.items ?? []).map((l) => [l.address, l]));
      expect(byAddress['10.0.3.7']).toMatchObject({
        state: 'Released',
        previousClaim: 'a-web',
        releasedBy: { arn: teamA, session: 'build-7' },
      });
      expect(byAddress['10.0.3.8']).toMatchObject({
        state: 'Released',
        previousClaim: 'b-web',
        releasedBy: { arn: admin },
      });
      expect(owners.body).toEqual({ owner: { uid: 'vm-1' }, released: ['b-web'], releasedBy: { arn: admin } });
    });

    it('writes one audit line per write, with the principal, the route, the names and what it did', async () => {
      // Prepare
      const api = await testApi({}, {}, undefined, engine);
      const lines: Record<string, unknown>[] = [];
      const handler = createHttpHandler(
        () => api.container.deps,
        { version: 'test', health: () => api.container.deps.health.health(), localStack: true },
        (entry) => lines.push(entry),
      );
      const call = async (method: string, path: string, body?: unknown) =>
        (await handler(
          httpEvent(method, path, body, as(teamASession)),
          {} as Context,
        )) as APIGatewayProxyStructuredResultV2;
      await call('POST', '/v1/pools', { name: 'p' });
      await call('POST', '/v1/pools/p/ranges', { cidr: '10.0.3.0/24' });
      lines.length = 0;

      // Act
      await call('POST', '/v1/pools/p/claims', { name: 'web', owner: owner('vm-1'), addresses: ['10.0.3.7'] });
      await call('GET', '/v1/pools/p/claims/web');
      await call('DELETE', '/v1/pools/p/claims/web');
      await call('DELETE', '/v1/pools/p/claims/Web');
      await call('DELETE', '/v1/pools/p/claims/%77eb');

      // Assess: the GET leaves none; a refused write leaves one with its status and code (a percent-encoded name too)
      const principal = { principal: teamA, session: 'build-7' };
      expect(lines).toEqual([
        expect.objectContaining({
          level: 'info',
          message: 'write',
          route: 'POST /v1/pools/{pool}/claims',
          pool: 'p',
          ...principal,
          status: 201,
          claim: 'web',
          created: true,
          addresses: ['10.0.3.7'],
        }),
        expect.objectContaining({
          level: 'info',
          message: 'write',
          route: 'DELETE /v1/pools/{pool}/claims/{claim}',
          pool: 'p',
          claim: 'web',
          ...principal,
          status: 204,
          released: ['10.0.3.7'],
          createdBy: teamA,
        }),
        expect.objectContaining({
          level: 'info',
          message: 'write',
          route: 'DELETE /v1/pools/{pool}/claims/{claim}',
          claim: 'Web',
          ...principal,
          status: 400,
          code: 'InvalidArgument',
        }),
        expect.objectContaining({
          level: 'info',
          message: 'write',
          route: 'DELETE /v1/pools/{pool}/claims/{claim}',
          claim: '%77eb',
          ...principal,
          status: 400,
          code: 'InvalidArgument',
        }),
      ]);
    });
  });

  describe(`Authority inside a pool with access (${engine.name})`, () => {
    it("refuses (403, own-claims-only) another allocator's release and renewal of a claim, and changes nothing", async () => {
      // Prepare
      const { api } = await twoTeams();

      // Act
      const release = await api.call('DELETE', '/v1/pools/shared/claims/a-web', undefined, as(teamB));
      const renew = await api.call('POST', '/v1/pools/shared/claims/a-web/renew', { ttlSeconds: null }, as(teamB));

      // Assess
      for (const answer of [release, renew]) {
        expect(answer.status).toBe(403);
        expect(answer.headers['content-type']).toBe('application/problem+json');
        expect(answer.body).toMatchObject({
          status: 403,
          code: 'Forbidden',
          rule: 'own-claims-only',
          title: 'Forbidden',
        });
        expect(answer.body.detail).toContain(teamA);
      }
      expect(await claimNames(api)).toEqual(['a-web', 'b-web']);
      expect((await api.call('GET', '/v1/pools/shared/addresses/10.0.3.7', undefined, as(admin))).body).toMatchObject({
        claim: 'a-web',
      });
    });

    it('lets the creator (another session of its role) and an administrator release a claim', async () => {
      // Prepare
      const { api } = await twoTeams();

      // Act
      const own = await api.call(
        'DELETE',
        '/v1/pools/shared/claims/a-web',
        undefined,
        as(`arn:aws:sts::${ACCOUNT}:assumed-role/team-a-ci/build-8`),
      );
      const byAdmin = await api.call('DELETE', '/v1/pools/shared/claims/b-web', undefined, as(admin));

      // Assess
      expect([own.status, byAdmin.status]).toEqual([204, 204]);
      expect(await claimNames(api)).toEqual([]);
    });

    it("makes an allocator's owner release release only its own claims, and leaves no tombstone that would release the others later", async () => {
      // Prepare
      const { h, api } = await twoTeams();

      // Act
      const byB = await api.call('DELETE', '/v1/pools/shared/owners/vm-1', undefined, as(teamB));
      // A later claim of the same owner uid by team A, and reconciler runs within the tombstone window.
      expect(
        (
          await api.call(
            'POST',
            '/v1/pools/shared/claims',
            { name: 'a-db', owner: owner('vm-1'), addresses: ['10.0.3.9'] },
            as(teamA),
          )
        ).status,
      ).toBe(201);
      h.clock.advance(60_000);
      await h.run();

      // Assess
      expect(byB.status).toBe(200);
      expect(byB.body).toMatchObject({ released: ['b-web'] });
      expect(await claimNames(api)).toEqual(['a-db', 'a-web']);
    });

    it("lets an administrator's owner release release every claim of the owner, whoever created it", async () => {
      // Prepare
      const { api } = await twoTeams();

      // Act
      const byAdmin = await api.call('DELETE', '/v1/pools/shared/owners/vm-1', undefined, as(admin));

      // Assess
      expect(byAdmin.status).toBe(200);
      expect((byAdmin.body.released as string[]).sort()).toEqual(['a-web', 'b-web']);
      expect(await claimNames(api)).toEqual([]);
    });

    it('lets only administrators change ranges or delete the pool (403, administrators-only)', async () => {
      // Prepare
      const { api } = await twoTeams();

      // Act
      const answers = [
        await api.call('POST', '/v1/pools/shared/ranges', { cidr: '10.0.4.0/24' }, as(teamA)),
        await api.call('DELETE', '/v1/pools/shared/ranges/10.0.3.0-24', undefined, as(teamA)),
        await api.call('DELETE', '/v1/pools/shared', undefined, as(teamB)),
      ];

      // Assess
      for (const answer of answers)
        expect(answer.body).toMatchObject({ status: 403, code: 'Forbidden', rule: 'administrators-only' });
      expect(
        (await api.call('GET', '/v1/pools/shared/ranges', undefined, as(admin))).body.items?.map((r) => r.name),
      ).toEqual(['10.0.3.0-24']);
      expect((await api.call('POST', '/v1/pools/shared/ranges', { cidr: '10.0.4.0/24' }, as(admin))).status).toBe(201);
    });

    it('refuses everything in the pool to a principal it does not name, and leaves the pool out of its pool listing', async () => {
      // Prepare
      const { api } = await twoTeams();
      expect((await api.call('POST', '/v1/pools', { name: 'open' }, as(stranger))).status).toBe(201);

      // Act
      const answers = [
        await api.call('GET', '/v1/pools/shared/claims', undefined, as(stranger)),
        await api.call('POST', '/v1/pools/shared/claims', { name: 'm', owner: owner('m') }, as(stranger)),
        await api.call('DELETE', '/v1/pools/shared/owners/vm-1', undefined, as(stranger)),
        await api.call('DELETE', '/v1/pools/shared/claims/a-web'),
      ];
      const listed = await api.call('GET', '/v1/pools', undefined, as(stranger));
      const listedByB = await api.call('GET', '/v1/pools', undefined, as(teamB));

      // Assess
      for (const answer of answers)
        expect(answer.body).toMatchObject({ status: 403, code: 'Forbidden', rule: 'members-only' });
      expect(listed.body.items?.map((p) => p.name)).toEqual(['open']);
      expect(listedByB.body.items?.map((p) => p.name)).toEqual(['open', 'shared']);
      expect(await claimNames(api)).toEqual(['a-web', 'b-web']);
    });

    it("keeps today's behaviour in a pool without access: any caller releases any claim, and the creator is still recorded", async () => {
      // Prepare
      const { api, a } = await twoTeams({ access: false });

      // Act
      const release = await api.call('DELETE', '/v1/pools/shared/claims/a-web', undefined, as(teamB));

      // Assess
      expect(a.body.createdBy).toEqual({ arn: teamA, session: 'build-7' });
      expect(release.status).toBe(204);
    });

    it.each([
      ['no administrators', { allocators: [teamA] }],
      ['a pattern that is not an ARN', { administrators: ['team-a'] }],
      [
        'too many patterns',
        { administrators: Array.from({ length: 33 }, (_, i) => `arn:aws:iam::${ACCOUNT}:role/r${i}`) },
      ],
      ['an unknown field', { administrators: [admin], readers: [teamA] }],
    ])('refuses a pool whose access has %s (400)', async (_why, bad) => {
      // Prepare
      const api = await testApi({}, {}, undefined, engine);

      // Act
      const res = await api.call('POST', '/v1/pools', { name: 'p', access: bad }, as(admin));

      // Assess
      expect(res.body).toMatchObject({ status: 400, code: 'InvalidArgument' });
      expect((await api.call('GET', '/v1/pools/p')).status).toBe(404);
    });
  });

  describe(`Where the caller comes from (${engine.name})`, () => {
    const deployed = { LOCAL_STACK: 'false', CURSOR_SECRET: 'a-deployed-stage-secret-0123456789' };

    it("refuses the local stack's principal header on a deployed stage (400), before anything is written", async () => {
      // Prepare
      const api = await testApi({}, deployed, undefined, engine);

      // Act
      const res = await api.call('POST', '/v1/pools', { name: 'p' }, as(admin));

      // Assess
      expect(res.body).toMatchObject({ status: 400, code: 'InvalidArgument' });
      expect(res.body.detail).toContain('x-ipam-principal');
      expect((await api.call('GET', '/v1/pools/p')).status).toBe(404);
    });

    it("takes the caller from API Gateway's IAM authorizer on a deployed stage", async () => {
      // Prepare
      const api = await testApi({}, deployed, undefined, engine);
      const signed = (method: string, path: string, body?: unknown): APIGatewayProxyEventV2 => {
        const event = httpEvent(method, path, body);
        return {
          ...event,
          requestContext: {
            ...event.requestContext,
            authorizer: { iam: { accountId: ACCOUNT, userArn: teamASession } },
          },
        } as unknown as APIGatewayProxyEventV2;
      };
      await api.invoke(signed('POST', '/v1/pools', { name: 'q', access: { administrators: [teamA] } }));
      await api.invoke(signed('POST', '/v1/pools/q/ranges', { cidr: '10.0.3.0/24' }));

      // Act
      const made = await api.invoke(signed('POST', '/v1/pools/q/claims', { name: 'web', owner: owner('vm-1') }));
      const unsigned = await api.call('GET', '/v1/pools/q/claims');

      // Assess: the signed session administers the pool and created the claim; an unsigned call is nobody
      expect(made.statusCode).toBe(201);
      expect(unsigned.body).toMatchObject({ status: 403, rule: 'members-only' });
      expect(JSON.parse(made.body!)).toMatchObject({ createdBy: { arn: teamA, session: 'build-7' } });
    });
  });

  describe(`Addresses held for an owner after a release (${engine.name}; issue 33, item 4)`, () => {
    it('gives an address held for an owner back to a request of the principal that held it, never to another allocator naming the same owner', async () => {
      // Prepare: team A's claim for vm-1 released in a pool with a reuse delay: 10.0.3.7 is held for vm-1
      const { api } = await twoTeams({ reuseDelaySeconds: 600 });
      expect((await api.call('DELETE', '/v1/pools/shared/claims/a-web', undefined, as(teamASession))).status).toBe(204);

      // Act: team B names the same owner, asking for the held address and then for any address
      const explicit = await api.call(
        'POST',
        '/v1/pools/shared/claims',
        { name: 'b-steal', owner: owner('vm-1'), addresses: ['10.0.3.7'] },
        as(teamB),
      );
      const dynamic = await api.call(
        'POST',
        '/v1/pools/shared/claims',
        { name: 'b-any', owner: owner('vm-1') },
        as(teamB),
      );
      // another session of team A's role takes it back
      const back = await api.call(
        'POST',
        '/v1/pools/shared/claims',
        { name: 'a-back', owner: owner('vm-1') },
        as(`arn:aws:sts::${ACCOUNT}:assumed-role/team-a-ci/build-8`),
      );

      // Assess
      expect(explicit.status).toBe(409);
      expect(explicit.body.code).toBe('AddressReleasing');
      expect(dynamic.status).toBe(201);
      expect((dynamic.body.addresses as { address: string }[])[0]!.address).not.toBe('10.0.3.7');
      expect(back.status).toBe(201);
      expect((back.body.addresses as { address: string }[])[0]!.address).toBe('10.0.3.7');
    });
  });

  describe(`A pool created while a request is under way (${engine.name}; issue 33, item 8)`, () => {
    it('answers 404 to a request that found no pool when authorized, and does not act on the pool created meanwhile', async () => {
      // Prepare: a container whose first read of pool 'late' (the authorization's) returns, and then an administrator
      // creates 'late' with access naming only the administrators and adds a range
      const h = await reconcilerHarness({ engine });
      const table = h.api.container.table;
      let created: number[] | undefined;
      const racing = h.api.sibling({
        table: {
          ...table,
          name: table.name,
          get: (key) => table.get(key),
          batchGet: (keys, attributes) => table.batchGet(keys, attributes),
          write: (op) => table.write(op),
          transact: (ops) => table.transact(ops),
          describe: () => table.describe(),
          async query(query) {
            const out = await table.query(query);
            if (created === undefined && query.partition === 'POOL#late') {
              created = [];
              created.push(
                (
                  await h.api.call(
                    'POST',
                    '/v1/pools',
                    { name: 'late', access: { administrators: access.administrators, allocators: [] } },
                    as(admin),
                  )
                ).status,
              );
              created.push(
                (await h.api.call('POST', '/v1/pools/late/ranges', { cidr: '10.0.9.0/24' }, as(admin))).status,
              );
            }
            return out;
          },
        },
      });

      // Act
      const res = await racing.call(
        'POST',
        '/v1/pools/late/claims',
        { name: 'mine', owner: owner('vm-9') },
        as(stranger),
      );

      // Assess: the pool was created between the authorization and the use case; nothing was written for the stranger
      expect(created).toEqual([201, 201]);
      expect(res.status).toBe(404);
      expect((await h.api.call('GET', '/v1/pools/late/claims/mine', undefined, as(admin))).status).toBe(404);
    });

    it('does not delete a pool created after a DELETE found no pool to check the access of', async () => {
      // Prepare: as above, the pool appears right after the authorization's read
      const h = await reconcilerHarness({ engine });
      const table = h.api.container.table;
      let created: number | undefined;
      const racing = h.api.sibling({
        table: {
          ...table,
          name: table.name,
          get: (key) => table.get(key),
          batchGet: (keys, attributes) => table.batchGet(keys, attributes),
          write: (op) => table.write(op),
          transact: (ops) => table.transact(ops),
          describe: () => table.describe(),
          async query(query) {
            const out = await table.query(query);
            if (created === undefined && query.partition === 'POOL#late')
              created = (
                await h.api.call(
                  'POST',
                  '/v1/pools',
                  { name: 'late', access: { administrators: access.administrators, allocators: [] } },
                  as(admin),
                )
              ).status;
            return out;
          },
        },
      });
      // Act
      const res = await racing.call('DELETE', '/v1/pools/late', undefined, as(stranger));
      // Assess
      expect(created).toBe(201);
      expect(res.status).toBe(404);
      expect((await h.api.call('GET', '/v1/pools/late', undefined, as(admin))).status).toBe(200);
    });
  });
}
