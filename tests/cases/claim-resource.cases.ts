import { afterEach, describe, expect, it } from 'vitest';
import { testApi, type TestApi } from '../support/api.ts';
import type { TestEngine } from '../support/engines.ts';
import { allItems } from '../support/items.ts';
import { PassThroughTable } from '../support/pass-through-table.ts';
import { responseServer, type ResponseServer } from '../support/response-server.ts';
import { asIntFunction } from '../support/int-functions.ts';
import { createClaimResourceHandler, type ProviderOptions } from '../../shared/adapters/custom-resource.ts';
import { principalFromArn } from '../../shared/core/access.ts';
import type { Key } from '../../shared/adapters/dynamodb/keys.ts';
import type { Item } from '../../shared/adapters/dynamodb/codec.ts';
import type { Query, QueryPage } from '../../shared/adapters/dynamodb/table.ts';

const STACK = 'arn:aws:cloudformation:us-east-1:123456789012:stack/net/5b9e0a10-0c56-11ef-9d8e-0a1b2c3d4e5f';
const OTHER_STACK = 'arn:aws:cloudformation:us-east-1:123456789012:stack/other/6c0f1b20-0c56-11ef-9d8e-0a1b2c3d4e5f';
const PROVIDER_ROLE = 'arn:aws:iam::123456789012:role/ipam-dev-claim-resource';

/** A Table whose reads wait while the gate is shut: a use case held before it can commit anything. */
class GatedTable extends PassThroughTable {
  private open: Promise<void> = Promise.resolve();
  private release: () => void = () => {};
  shut(): void {
    this.open = new Promise((resolve) => (this.release = resolve));
  }
  lift(): void {
    this.release();
  }
  override async get(key: Key): Promise<Item | undefined> {
    await this.open;
    return super.get(key);
  }
  override async query(query: Query): Promise<QueryPage> {
    await this.open;
    return super.query(query);
  }
}

/**
 * The Custom::IpamClaim provider through its real handler and the real claim use cases, on one table engine, answering
 * to a local server that stands in for the pre-signed ResponseURL: Create, repeated Create, Update (replacement and
 * Labels only), Delete, refused properties with nothing written, a Delete after a failed Create, a Delete that races a
 * Create cut short by the function's limit, and a claim with a child range.
 */
export function claimResourceCases(engine: TestEngine): void {
  const servers: ResponseServer[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await s.close();
  });

  async function setup(poolBody: Record<string, unknown> = {}) {
    const api = await testApi({}, {}, undefined, engine);
    const org = await api.call('POST', '/v1/pools', {
      name: 'org',
      blockPrefixLength: { IPv4: 16 },
      ...(poolBody.access ? {} : { openToChildPools: true }),
      ...poolBody,
    });
    expect(org.status, JSON.stringify(org.body)).toBe(201);
    const admin: Record<string, string> = poolBody.access
      ? { 'x-ipam-principal': 'arn:aws:iam::123456789012:role/netadmin' }
      : {};
    expect((await api.call('POST', '/v1/pools/org/ranges', { cidr: '10.0.0.0/14' }, admin)).status).toBe(201);
    const server = await responseServer();
    servers.push(server);
    return { api, server };
  }

  const context = (remainingMs = 60_000) => ({ getRemainingTimeInMillis: () => remainingMs, awsRequestId: 'lambda-1' });

  function provider(api: TestApi, options: ProviderOptions = {}) {
    const handler = createClaimResourceHandler(() => api.container.deps, {
      caller: principalFromArn(PROVIDER_ROLE),
      log: () => {},
      ...options,
    });
    return (event: unknown, remainingMs?: number) =>
      asIntFunction('claimResource', () => handler(event, context(remainingMs)));
  }

  let requests = 0;
  function event(
    server: ResponseServer,
    type: 'Create' | 'Update' | 'Delete',
    properties: Record<string, unknown>,
    extra: Record<string, unknown> = {},
  ) {
    requests += 1;
    return {
      RequestType: type,
      RequestId: `req-${requests}`,
      ResponseURL: server.url(`r${requests}`),
      ResourceType: 'Custom::IpamClaim',
      LogicalResourceId: 'VpcCidr',
      StackId: STACK,
      ServiceToken: 'arn:aws:lambda:us-east-1:123456789012:function:ipam-dev-claimResource',
      ResourceProperties: { ServiceToken: 'arn:aws:lambda:us-east-1:123456789012:function:x', ...properties },
      ...extra,
    };
  }

  const last = (server: ResponseServer) => server.received.at(-1)!.body;
  const claimsOf = async (api: TestApi, pool = 'org') =>
    ((await api.call('GET', `/v1/pools/${pool}/claims`)).body.items ?? []) as {
      name: string;
      owner: { kind: string; name: string; uid: string };
      labels: Record<string, string>;
    }[];

  describe(`Custom::IpamClaim (${engine.name})`, () => {
    it('creates a claim owned by the stack and answers its block with a PUT of an empty content type', async () => {
      // Prepare
      const { api, server } = await setup();
      const invoke = provider(api);
      // Act
      await invoke(event(server, 'Create', { Pool: 'org', Labels: { team: 'net' } }));
      // Assess
      const put = server.received[0]!;
      expect({ method: put.method, contentType: put.contentType, path: put.path }).toEqual({
        method: 'PUT',
        contentType: '',
        path: '/cfn/r' + requests + '?X-Amz-Signature=test',
      });
      const body = put.body;
      expect(body).toMatchObject({ Status: 'SUCCESS', StackId: STACK, RequestId: `req-${requests}` });
      expect(body.LogicalResourceId).toBe('VpcCidr');
      const data = body.Data!;
      expect(data.Cidr).toMatch(/^10\.[0-3]\.0\.0\/16$/);
      expect(data).toEqual({
        Cidr: data.Cidr,
        Cidrs: data.Cidr,
        Ipv4Cidr: data.Cidr,
        Ipv6Cidr: '',
        RangeCidr: '10.0.0.0/14',
        ClaimName: data.ClaimName,
        Pool: 'org',
      });
      expect(body.PhysicalResourceId).toBe(`org/${data.ClaimName}`);
      const [claim] = await claimsOf(api);
      expect(claim).toMatchObject({
        name: data.ClaimName,
        owner: { kind: 'CloudFormationStack', name: 'net', uid: STACK },
        labels: { team: 'net', 'cloudformation.ipam.dev/logical-id': 'VpcCidr' },
      });
      const byOwner = await api.call('GET', `/v1/pools/org/claims?owner=${encodeURIComponent(STACK)}`);
      expect(byOwner.body.items?.map((c) => c.name)).toEqual([data.ClaimName]);
    });

    it('answers a repeated Create (same RequestId) with the same claim, and makes no second one', async () => {
      // Prepare
      const { api, server } = await setup();
      const invoke = provider(api);
      const create = event(server, 'Create', { Pool: 'org', Count: '1' });
      // Act
      await invoke(create);
      await invoke(create);
      // Assess
      const [a, b] = server.received.map((r) => r.body);
      expect(b!.Status).toBe('SUCCESS');
      expect(b!.PhysicalResourceId).toBe(a!.PhysicalResourceId);
      expect(b!.Data).toEqual(a!.Data);
      expect((await claimsOf(api)).length).toBe(1);
    });

    it('replaces the claim on an Update of its size and keeps it on an Update of its labels only', async () => {
      // Prepare
      const { api, server } = await setup();
      const invoke = provider(api);
      await invoke(event(server, 'Create', { Pool: 'org', Labels: { env: 'a' } }));
      const created = last(server);
      const old = { Pool: 'org', Labels: { env: 'a' } };
      const id = created.PhysicalResourceId as string;
      // Act: the labels only, to what they are (a rollback's Update) and to something new
      await invoke(event(server, 'Update', { ...old }, { PhysicalResourceId: id, OldResourceProperties: old }));
      const same = last(server);
      await invoke(
        event(
          server,
          'Update',
          { ...old, Labels: { env: 'b' } },
          { PhysicalResourceId: id, OldResourceProperties: old },
        ),
      );
      const relabel = last(server);
      // Act: the size (two blocks)
      await invoke(
        event(server, 'Update', { ...old, Count: '2' }, { PhysicalResourceId: id, OldResourceProperties: old }),
      );
      const resized = last(server);
      // Assess
      expect(same).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: id, Data: created.Data });
      expect(relabel).toMatchObject({ Status: 'FAILED', PhysicalResourceId: id });
      expect(relabel.Reason).toMatch(/^Labels cannot change in place/);
      expect(resized.Status).toBe('SUCCESS');
      expect(resized.PhysicalResourceId).not.toBe(id);
      expect(String(resized.Data?.Cidrs).split(',')).toHaveLength(2);
      expect((await claimsOf(api)).map((c) => `org/${c.name}`).sort()).toEqual([id, resized.PhysicalResourceId].sort());
      // CloudFormation then deletes the old one
      await invoke(event(server, 'Delete', old, { PhysicalResourceId: id }));
      expect(last(server)).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: id });
      expect((await claimsOf(api)).map((c) => `org/${c.name}`)).toEqual([resized.PhysicalResourceId]);
    });

    it('releases the claim on Delete, and answers SUCCESS for a claim already gone or never made', async () => {
      // Prepare
      const { api, server } = await setup();
      const invoke = provider(api);
      await invoke(event(server, 'Create', { Pool: 'org' }));
      const id = last(server).PhysicalResourceId as string;
      // Act
      await invoke(event(server, 'Delete', { Pool: 'org' }, { PhysicalResourceId: id }));
      const first = last(server);
      await invoke(event(server, 'Delete', { Pool: 'org' }, { PhysicalResourceId: id }));
      const again = last(server);
      await invoke(event(server, 'Delete', { Pool: 'gone' }, { PhysicalResourceId: 'gone/never-made' }));
      const unknown = last(server);
      // Assess
      expect([first.Status, again.Status, unknown.Status]).toEqual(['SUCCESS', 'SUCCESS', 'SUCCESS']);
      expect([first.PhysicalResourceId, again.PhysicalResourceId]).toEqual([id, id]);
      expect(unknown.PhysicalResourceId).toBe('gone/never-made');
      expect(await claimsOf(api)).toEqual([]);
    });

    it("refuses bad properties FAILED with the API's code and sentence, writing nothing", async () => {
      // Prepare: a pool the provider's role is no member of, and one with no room left
      const { api, server } = await setup();
      const admin = { 'x-ipam-principal': 'arn:aws:iam::123456789012:role/netadmin' };
      const locked = await api.call(
        'POST',
        '/v1/pools',
        { name: 'locked', blockPrefixLength: { IPv4: 16 }, access: { administrators: [admin['x-ipam-principal']] } },
        admin,
      );
      expect(locked.status).toBe(201);
      expect((await api.call('POST', '/v1/pools/locked/ranges', { cidr: '10.8.0.0/16' }, admin)).status).toBe(201);
      const invoke = provider(api);
      const before = (await allItems(api.container.table)).length;
      // Act
      const answers = [];
      for (const props of [
        { Pool: 'nope' },
        { Pool: 'locked' },
        { Pool: 'org', Count: '5' },
        { Pool: 'org', Colour: 'blue' },
        { Pool: 'org', Name: 'Not_A_Label' },
      ]) {
        await invoke(event(server, 'Create', props));
        answers.push(last(server));
      }
      // Assess
      expect(answers.map((a) => a.Status)).toEqual(['FAILED', 'FAILED', 'FAILED', 'FAILED', 'FAILED']);
      expect(answers.map((a) => (a.Reason as string).split(':')[0])).toEqual([
        'NotFound',
        'Forbidden',
        'RangeFull',
        'InvalidArgument',
        'InvalidArgument',
      ]);
      expect(answers[1]!.Reason).toContain(PROVIDER_ROLE);
      expect(answers[3]!.Reason).toContain('Colour');
      for (const a of answers) expect(a.PhysicalResourceId).toEqual(expect.any(String));
      expect((await allItems(api.container.table)).length).toBe(before);
    });

    it("answers a Delete after a failed Create SUCCESS and releases nothing of another stack's", async () => {
      // Prepare: another stack holds the Name this one asks for
      const { api, server } = await setup();
      const invoke = provider(api);
      await invoke(event(server, 'Create', { Pool: 'org', Name: 'shared-vpc' }, { StackId: OTHER_STACK }));
      expect(last(server).Status).toBe('SUCCESS');
      // Act
      await invoke(event(server, 'Create', { Pool: 'org', Name: 'shared-vpc', Count: '2' }));
      const failed = last(server);
      await invoke(
        event(server, 'Delete', { Pool: 'org', Name: 'shared-vpc' }, { PhysicalResourceId: failed.PhysicalResourceId }),
      );
      const deleted = last(server);
      // Assess
      expect(failed.Status).toBe('FAILED');
      expect(failed.Reason).toMatch(/^Conflict: /);
      expect(deleted).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: failed.PhysicalResourceId });
      const held = await claimsOf(api);
      expect(held.map((c) => [c.name, c.owner.uid])).toEqual([['shared-vpc', OTHER_STACK]]);
    });

    it("answers RangeCidr: a subnet's /24 from a pool that grows from org, and the VPC's /16 it grew by", async () => {
      // Prepare: one VPC's pool of /24 blocks, growing by one /16 of org
      const { api, server } = await setup();
      const made = await api.call('POST', '/v1/pools', {
        name: 'vpc-a',
        blockPrefixLength: { IPv4: 24 },
        grow: { pool: 'org', belowFree: 1, maxBlocks: 1 },
      });
      expect(made.status, JSON.stringify(made.body)).toBe(201);
      const invoke = provider(api);
      // Act
      await invoke(event(server, 'Create', { Pool: 'vpc-a' }, { LogicalResourceId: 'SubnetA' }));
      const a = last(server).Data!;
      await invoke(event(server, 'Create', { Pool: 'vpc-a' }, { LogicalResourceId: 'SubnetB' }));
      const b = last(server).Data!;
      // Assess
      expect(a.RangeCidr).toMatch(/^10\.[0-3]\.0\.0\/16$/);
      expect(b.RangeCidr).toBe(a.RangeCidr);
      const sixteen = a.RangeCidr!.split('.').slice(0, 2).join('.');
      expect([a.Cidr, b.Cidr].every((c) => c!.startsWith(`${sixteen}.`) && c!.endsWith('.0/24'))).toBe(true);
      expect(a.Cidr).not.toBe(b.Cidr);
    });

    it("refuses to release a claim whose block is a nested pool's range, naming that range", async () => {
      // Prepare: the stack's /16, and a nested pool made from it
      const { api, server } = await setup();
      const invoke = provider(api);
      await invoke(event(server, 'Create', { Pool: 'org', Name: 'vpc-a' }));
      const cidr = last(server).Data!.Cidr;
      expect((await api.call('POST', '/v1/pools', { name: 'vpc-a', blockPrefixLength: { IPv4: 24 } })).status).toBe(
        201,
      );
      const child = await api.call('POST', '/v1/pools/vpc-a/ranges', {
        cidr,
        name: 'main',
        source: { pool: 'org', claim: 'vpc-a' },
      });
      expect(child.status, JSON.stringify(child.body)).toBe(201);
      // Act
      await invoke(event(server, 'Delete', { Pool: 'org', Name: 'vpc-a' }, { PhysicalResourceId: 'org/vpc-a' }));
      // Assess
      expect(last(server)).toMatchObject({ Status: 'FAILED', PhysicalResourceId: 'org/vpc-a' });
      expect(last(server).Reason).toContain('vpc-a/main');
      expect((await claimsOf(api)).map((c) => c.name)).toEqual(['vpc-a']);
    });

    it("answers FAILED before the function's limit, and a Delete racing the cut-short Create leaves no claim", async () => {
      // Prepare: a container whose reads wait at a gate, so its Create cannot finish
      const { api, server } = await setup();
      const gated = new GatedTable(api.container.table);
      const slow = api.sibling({ table: gated });
      let abandoned: Promise<unknown> | undefined;
      const invokeSlow = provider(slow, {
        answerMarginMs: 1000,
        commitMarginMs: 100,
        putTimeoutMs: 5000,
        abandoned: (work) => (abandoned = work),
      });
      gated.shut();
      const create = event(server, 'Create', { Pool: 'org' });
      // Act: 1.4 s left, answer 1 s before the limit
      await invokeSlow(create, 1400);
      const answer = last(server);
      // The rollback's Delete, through a container that is not held
      await provider(api)(event(server, 'Delete', { Pool: 'org' }, { PhysicalResourceId: answer.PhysicalResourceId }));
      const deleted = last(server);
      gated.lift();
      const outcome = await abandoned!.then(
        (a) => a,
        (e: unknown) => e,
      );
      // Assess
      expect(answer.Status).toBe('FAILED');
      expect(answer.Reason).toMatch(/did not finish the Create in time/);
      expect(deleted.Status).toBe('SUCCESS');
      expect(outcome).toMatchObject({ status: 'FAILED', reason: expect.stringMatching(/^DeadlineExceeded/) });
      expect(await claimsOf(api)).toEqual([]);
    });
  });
}
