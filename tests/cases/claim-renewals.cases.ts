import { describe, expect, it } from 'vitest';
import { testApi as testApiOn, type TestApi } from '../support/api.ts';
import type { TestEngine } from '../support/engines.ts';
import type { ContainerOverrides } from '../../shared/adapters/composition.ts';
import { ManualClock, owner } from '../support/fakes.ts';
import { tableSnapshot } from '../support/items.ts';
import { RequestMeter } from '../support/request-meter.ts';

const ACCOUNT = '123456789012';
const admin = `arn:aws:iam::${ACCOUNT}:role/netops`;
const teamA = `arn:aws:iam::${ACCOUNT}:role/team-a-ci`;
const teamB = `arn:aws:iam::${ACCOUNT}:role/team-b-ci`;
const as = (arn: string) => ({ 'x-ipam-principal': arn });

/**
 * The batch renewal (POST /v1/pools/{pool}/renewals): many claims of a pool renewed in one request, each by its own
 * conditional write, with a result per claim; bad input is a 400 that writes nothing.
 */
export function claimRenewalsCases(engine: TestEngine): void {
  const testApi = (overrides: ContainerOverrides = {}): Promise<TestApi> => testApiOn(overrides, {}, undefined, engine);

  async function poolWith(api: TestApi, pool: string, cidr: string, headers?: Record<string, string>): Promise<void> {
    expect((await api.call('POST', '/v1/pools', { name: pool }, headers)).status).toBe(201);
    expect((await api.call('POST', `/v1/pools/${pool}/ranges`, { cidr }, headers)).status).toBe(201);
  }

  async function claim(api: TestApi, pool: string, name: string, extra: Record<string, unknown> = {}): Promise<void> {
    const made = await api.call('POST', `/v1/pools/${pool}/claims`, { name, owner: owner(name), ...extra });
    expect(made.status).toBe(201);
  }

  describe(`Batch renewal: POST /v1/pools/{pool}/renewals (${engine.name})`, () => {
    it("renews the pool's live leased claims and reports each other one, in the order asked, with one batch read", async () => {
      // Prepare: a and b leased, c permanent, d released, x leased in another pool
      const clock = new ManualClock();
      const api = await testApi({ clock });
      await poolWith(api, 'p', '10.71.0.0/24');
      await poolWith(api, 'q', '10.72.0.0/24');
      for (const name of ['a', 'b', 'd']) await claim(api, 'p', name, { ttlSeconds: 60 });
      await claim(api, 'p', 'c');
      await claim(api, 'q', 'x', { ttlSeconds: 60 });
      expect((await api.call('DELETE', '/v1/pools/p/claims/d')).status).toBe(204);
      const madeAt = clock.nowMs();
      clock.advance(50_000);
      const meter = new RequestMeter(api.container.table);
      const metered = api.sibling({ clock, table: meter });
      await metered.call('GET', '/v1/pools/p');
      meter.take();
      // Act
      const res = await metered.call('POST', '/v1/pools/p/renewals', {
        claims: ['a', 'x', 'b', 'nope', 'c', 'd'],
        ttlSeconds: 120,
      });
      const cost = meter.take();
      // Assess
      const until = new Date(clock.nowMs() + 120_000).toISOString();
      expect(res.status).toBe(200);
      expect(res.body.renewed).toBe(2);
      expect(res.body.items).toEqual([
        { name: 'a', result: 'Renewed', expiresAt: until, version: 2 },
        { name: 'x', result: 'NotFound', detail: 'claim "x" was not found.' },
        { name: 'b', result: 'Renewed', expiresAt: until, version: 2 },
        { name: 'nope', result: 'NotFound', detail: 'claim "nope" was not found.' },
        { name: 'c', result: 'NotLeased', detail: expect.stringMatching(/has no expiry/) },
        { name: 'd', result: 'NotFound', detail: 'claim "d" was not found.' },
      ]);
      expect((await api.call('GET', '/v1/pools/p/claims/a')).body.expiresAt).toBe(until);
      expect((await api.call('GET', '/v1/pools/p/claims/c')).body.expiresAt).toBeUndefined();
      expect((await api.call('GET', '/v1/pools/q/claims/x')).body.expiresAt).toBe(
        new Date(madeAt + 60_000).toISOString(),
      );
      // One BatchGetItem for the six names, one transaction for each claim renewed, nothing for the others.
      expect(cost.operations).toEqual({ BatchGetItem: 1, TransactWriteItems: 2 });
      // Past the old expiry the renewed claims still hold their addresses.
      clock.advance(60_000);
      expect((await api.call('GET', '/v1/pools/p/claims/b')).status).toBe(200);
    });

    it('reports a claim whose lease expired and went to another claim as Expired, and renews the rest', async () => {
      // Prepare
      const clock = new ManualClock();
      const api = await testApi({ clock });
      await poolWith(api, 'p', '10.73.0.0/30');
      await claim(api, 'p', 'e', { ttlSeconds: 60, addresses: ['10.73.0.2'] });
      await claim(api, 'p', 'f', { ttlSeconds: 600, addresses: ['10.73.0.1'] });
      clock.advance(70_000);
      await claim(api, 'p', 'taker', { addresses: ['10.73.0.2'] });
      // Act
      const res = await api.call('POST', '/v1/pools/p/renewals', { claims: ['e', 'f'] });
      // Assess: without ttlSeconds each claim takes its own TTL again
      expect(res.status).toBe(200);
      expect(res.body.items).toEqual([
        { name: 'e', result: 'Expired', detail: expect.stringMatching(/taken by another claim/) },
        { name: 'f', result: 'Renewed', expiresAt: new Date(clock.nowMs() + 600_000).toISOString(), version: 2 },
      ]);
      expect(res.body.renewed).toBe(1);
      expect((await api.call('GET', '/v1/pools/p/addresses/10.73.0.2')).body.claim).toBe('taker');
    });

    it("reports another principal's claim as Forbidden in a pool with access, and renews the caller's own", async () => {
      // Prepare
      const clock = new ManualClock();
      const api = await testApi({ clock });
      const access = { administrators: [admin], allocators: [`arn:aws:iam::${ACCOUNT}:role/team-?-ci`] };
      expect((await api.call('POST', '/v1/pools', { name: 's', access }, as(admin))).status).toBe(201);
      expect((await api.call('POST', '/v1/pools/s/ranges', { cidr: '10.74.0.0/24' }, as(admin))).status).toBe(201);
      for (const [name, who] of [
        ['mine', teamA],
        ['theirs', teamB],
      ] as const) {
        const made = await api.call(
          'POST',
          '/v1/pools/s/claims',
          { name, owner: owner(name), ttlSeconds: 60 },
          as(who),
        );
        expect(made.status).toBe(201);
      }
      // Act
      const res = await api.call('POST', '/v1/pools/s/renewals', { claims: ['mine', 'theirs'] }, as(teamA));
      // Assess
      expect(res.status).toBe(200);
      expect(res.body.items?.map((i) => i.result)).toEqual(['Renewed', 'Forbidden']);
      expect(res.body.items?.[1]?.detail).toEqual(expect.any(String));
      const theirs = await api.call('GET', '/v1/pools/s/claims/theirs', undefined, as(admin));
      expect(theirs.body.version).toBe(1);
    });

    it('refuses bad input with 400 InvalidArgument and a sentence, and writes nothing', async () => {
      // Prepare
      const api = await testApi({ clock: new ManualClock() });
      await poolWith(api, 'p', '10.75.0.0/24');
      await claim(api, 'p', 'a', { ttlSeconds: 60 });
      const before = await tableSnapshot(api.container.table);
      const bodies: [string, unknown][] = [
        ['no body', undefined],
        ['no claims field', { ttlSeconds: 60 }],
        ['an empty list', { claims: [] }],
        ['101 names', { claims: Array.from({ length: 101 }, (_, i) => `c${i}`) }],
        ['a name twice', { claims: ['a', 'b', 'a'] }],
        ['a name that is no claim name', { claims: ['a', 'Not_A_Name'] }],
        ['a list that is a string', { claims: 'a' }],
        ['ttlSeconds 0', { claims: ['a'], ttlSeconds: 0 }],
        ['an unknown field', { claims: ['a'], labelSelector: 'x=y' }],
      ];
      // Act
      const answers = [];
      for (const [why, body] of bodies) {
        const res = await api.call('POST', '/v1/pools/p/renewals', body);
        answers.push([why, res.status, res.body.code, /\w+ .*\./.test(String(res.body.detail))]);
      }
      // Assess
      expect(answers).toEqual(bodies.map(([why]) => [why, 400, 'InvalidArgument', true]));
      expect(await tableSnapshot(api.container.table)).toEqual(before);
    });

    it('answers 404 for a pool that does not exist', async () => {
      // Prepare
      const api = await testApi();
      // Act
      const res = await api.call('POST', '/v1/pools/ghost/renewals', { claims: ['a'] });
      // Assess
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('NotFound');
      expect(res.body.detail).toMatch(/pool "ghost"/);
    });
  });
}
