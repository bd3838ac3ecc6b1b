import { afterEach, describe, expect, it } from 'vitest';
import { testApi } from '../support/api.ts';
import { memoryEngine } from '../support/engines.ts';
import { PassThroughTable } from '../support/pass-through-table.ts';
import { responseServer, type ResponseServer } from '../support/response-server.ts';
import { createClaimResourceHandler } from '../../shared/adapters/custom-resource.ts';
import { MAX_RESPONSE_BYTES, responseBody } from '../../shared/core/use-cases/claim-resource.ts';
import type { Key } from '../../shared/adapters/dynamodb/keys.ts';
import type { Item } from '../../shared/adapters/dynamodb/codec.ts';

const STACK = 'arn:aws:cloudformation:us-east-1:123456789012:stack/net/5b9e0a10-0c56-11ef-9d8e-0a1b2c3d4e5f';
const context = { getRemainingTimeInMillis: () => 60_000, awsRequestId: 'lambda-7' };

/** A table that fails every read with an error no domain code names (a bug, a broken client). */
class BrokenTable extends PassThroughTable {
  override get(_key: Key): Promise<Item | undefined> {
    return Promise.reject(new TypeError('cannot read properties of undefined'));
  }
}

describe('Custom::IpamClaim provider: the response it always sends', () => {
  const servers: ResponseServer[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) await s.close();
  });
  const serve = async (failFirst = 0) => {
    const s = await responseServer({ failFirst });
    servers.push(s);
    return s;
  };
  const deleteOf = (server: ResponseServer) => ({
    RequestType: 'Delete',
    RequestId: 'req-d',
    ResponseURL: server.url(),
    LogicalResourceId: 'VpcCidr',
    StackId: STACK,
    PhysicalResourceId: 'not-a-claim-id',
    ResourceProperties: { Pool: 'org' },
  });

  it('answers an event it cannot read FAILED, on its ResponseURL, with what the event has', async () => {
    // Prepare
    const api = await testApi({}, {}, undefined, memoryEngine);
    const server = await serve();
    const handler = createClaimResourceHandler(() => api.container.deps, { log: () => {} });
    // Act: no RequestType, no StackId; ResourceProperties not an object
    await handler({ ResponseURL: server.url(), RequestId: 'req-1', ResourceProperties: 'Pool=org' }, context);
    // Assess
    expect(server.received).toHaveLength(1);
    const body = server.received[0]!.body;
    expect(body).toMatchObject({ Status: 'FAILED', RequestId: 'req-1', PhysicalResourceId: 'unclaimed/req-1' });
    expect(body.Reason).toMatch(/^InvalidArgument: The request has no RequestType/);
  });

  it('returns without answering an event that names no ResponseURL (there is nowhere to answer)', async () => {
    const api = await testApi({}, {}, undefined, memoryEngine);
    const logged: Record<string, unknown>[] = [];
    const handler = createClaimResourceHandler(() => api.container.deps, { log: (e) => logged.push(e) });
    await expect(handler({ RequestType: 'Create' }, context)).resolves.toBeUndefined();
    expect(logged.map((l) => l.message)).toEqual(['custom resource request without a ResponseURL; nothing answered']);
  });

  it('sends the answer again when the first PUT fails, and resolves once it is taken', async () => {
    // Prepare: the response URL answers its first PUT 503
    const api = await testApi({}, {}, undefined, memoryEngine);
    const server = await serve(1);
    const handler = createClaimResourceHandler(() => api.container.deps, { log: () => {} });
    // Act
    await handler(deleteOf(server), context);
    // Assess
    expect(server.received).toHaveLength(2);
    expect(server.received[1]!.body).toEqual(server.received[0]!.body);
    expect(server.answered().map((p) => p.body.Status)).toEqual(['SUCCESS']);
  });

  it("answers FAILED, without internals, when the use case throws something that is not the API's", async () => {
    // Prepare
    const api = await testApi({}, {}, undefined, memoryEngine);
    const broken = api.sibling({ table: new BrokenTable(api.container.table) });
    const server = await serve();
    const logged: Record<string, unknown>[] = [];
    const handler = createClaimResourceHandler(() => broken.container.deps, { log: (e) => logged.push(e) });
    // Act
    await handler({ ...deleteOf(server), PhysicalResourceId: 'org/vpc' }, context);
    // Assess
    const body = server.received[0]!.body;
    expect(body).toMatchObject({ Status: 'FAILED', PhysicalResourceId: 'org/vpc' });
    expect(body.Reason).toBe('Internal: the provider failed on this request (logged under Lambda request lambda-7).');
    expect(logged.some((l) => String(l.error).includes('cannot read properties'))).toBe(true);
  });

  it('keeps every body within 4096 bytes: a long Reason is cut, Data that cannot fit becomes FAILED', () => {
    const request = { requestId: 'r', stackId: STACK, logicalResourceId: 'X' };
    const long = responseBody(request, { status: 'FAILED', reason: 'é'.repeat(5000), physicalResourceId: 'p/q' });
    const many = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`K${i}`, '2001:db8::/64']));
    const huge = responseBody(request, { status: 'SUCCESS', physicalResourceId: 'p/q', data: many });
    expect(new TextEncoder().encode(long).length).toBeLessThanOrEqual(MAX_RESPONSE_BYTES);
    expect(JSON.parse(long).Reason).toMatch(/^é+\.\.\.$/);
    expect(JSON.parse(huge)).toMatchObject({ Status: 'FAILED', PhysicalResourceId: 'p/q' });
    expect(JSON.parse(huge).Data).toBeUndefined();
  });
});
