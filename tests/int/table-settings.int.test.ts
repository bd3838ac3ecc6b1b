import { readFileSync } from 'node:fs';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, ScheduledEvent } from 'aws-lambda';
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import { lambdaContext } from '../../scripts/lambda-context.ts';
import { keys } from '../../shared/adapters/dynamodb/keys.ts';
import { SdkTable } from '../../shared/adapters/dynamodb/sdk-table.ts';
import { assertTableSettings } from '../../shared/adapters/dynamodb/table-settings.ts';
import { freshTable } from '../support/dynamo.ts';

// Each function module is imported fresh (vi.resetModules) under a stubbed environment, as a new Lambda environment
// would load it, against a table of DynamoDB Local: LEASE_INDEX_SHARDS is fixed for a table's life, so a function
// started with another count than the table was first used with must refuse to serve, and say why in one line.

const healthEvent = JSON.parse(
  readFileSync(new URL('../../events/http-health.json', import.meta.url), 'utf8'),
) as APIGatewayProxyEventV2;
const scheduleEvent = JSON.parse(
  readFileSync(new URL('../../events/schedule.json', import.meta.url), 'utf8'),
) as ScheduledEvent;

async function startHttp(
  shards: string,
): Promise<(event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyStructuredResultV2>> {
  vi.resetModules();
  vi.stubEnv('LEASE_INDEX_SHARDS', shards);
  const { handler } = await import('../../functions/http.ts');
  return async (event) => (await handler(event, lambdaContext('ipam-test-api'))) as APIGatewayProxyStructuredResultV2;
}

describe('Table settings: LEASE_INDEX_SHARDS recorded on first use', () => {
  let errors: MockInstance<typeof console.error>;

  beforeEach(async () => {
    const { tableName, endpoint } = await freshTable('ipam-settings');
    vi.stubEnv('TABLE_NAME', tableName);
    vi.stubEnv('DYNAMODB_ENDPOINT', endpoint);
    vi.stubEnv('AWS_REGION', 'us-east-1');
    // A deployed function's environment: no LOCAL_STACK, so the cursor key must be given (shared/config.ts).
    vi.stubEnv('CURSOR_SECRET', 'table-settings-test-cursor-secret-0123456789');
    errors = vi.spyOn(console, 'error').mockImplementation(() => undefined);
  });

  afterEach(() => {
    vi.unstubAllEnvs();
    vi.restoreAllMocks();
  });

  // The handler module last imported holds a container bound to a dropped table: later files of the worker import
  // their own.
  afterAll(() => vi.resetModules());

  it("serves when the function's shard count is the one the table was first used with", async () => {
    // Prepare: the first function records 8.
    expect((await (await startHttp('8'))(healthEvent)).statusCode).toBe(200);
    // Act: a new environment with the same count.
    const answer = await (await startHttp('8'))(healthEvent);
    // Assess
    expect(answer.statusCode).toBe(200);
    expect(errors).not.toHaveBeenCalled();
  });

  it('refuses every invocation of a function started with another count, logging one line that says why', async () => {
    // Prepare: the table was first used with 8 shards.
    expect((await (await startHttp('8'))(healthEvent)).statusCode).toBe(200);
    // Act: a redeploy from a shell that had LEASE_INDEX_SHARDS=16.
    const api = await startHttp('16');
    const first = api(healthEvent);
    // (A fresh module's class, so matched by name.)
    await expect(first).rejects.toMatchObject({
      name: 'TableSettingsMismatchError',
      recorded: { leaseIndexShards: 8 },
    });
    await expect(api(healthEvent)).rejects.toThrow('LEASE_INDEX_SHARDS is 16, but table');
    // Assess: one JSON line for the environment, naming both counts and what to do.
    expect(errors).toHaveBeenCalledTimes(1);
    const line = String(errors.mock.calls[0]![0]);
    expect(line).not.toContain('\n');
    expect(JSON.parse(line)).toEqual({
      level: 'error',
      message: 'cold start failed',
      error: 'TableSettingsMismatchError',
      detail: expect.stringMatching(
        /^LEASE_INDEX_SHARDS is 16, but table ipam-settings-\w+ was first used with 8 .*refuses to serve.*leaseIndexShards back to 8/,
      ),
    });
  });

  it('refuses the reconciler and the stream mirror too', async () => {
    // Prepare
    expect((await (await startHttp('8'))(healthEvent)).statusCode).toBe(200);
    vi.resetModules();
    vi.stubEnv('LEASE_INDEX_SHARDS', '4');
    const reconciler = await import('../../functions/reconcile.ts');
    const mirror = await import('../../functions/stream.ts');
    // Act
    const run = reconciler.handler(scheduleEvent, lambdaContext('ipam-test-reconciler'));
    const batch = mirror.handler({ Records: [] });
    // Assess
    const outcomes = await Promise.allSettled([run, batch]);
    expect(outcomes.map((o) => (o.status === 'rejected' ? (o.reason as Error).name : o.status))).toEqual([
      'TableSettingsMismatchError',
      'TableSettingsMismatchError',
    ]);
  });

  it('answers 503 NotReady, not 500, while the check itself is throttled, and serves once it passes', async () => {
    // Prepare: the first PutItem of the environment (the settings record) is throttled; nothing else is stubbed.
    const ddb = mockClient(DynamoDBClient);
    ddb
      .on(PutItemCommand)
      .rejects(
        Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name: 'ThrottlingException' }),
      );
    let throttled: APIGatewayProxyStructuredResultV2;
    let api: Awaited<ReturnType<typeof startHttp>>;
    // The mock is on every client of the worker, whose next file (isolate: false) must get the real one back.
    try {
      api = await startHttp('8');
      // Act
      throttled = await api(healthEvent);
    } finally {
      ddb.restore();
    }
    const next = await api(healthEvent);
    // Assess: a retryable problem the client can act on, then the check runs again and the function serves.
    expect(throttled.statusCode).toBe(503);
    expect(throttled.headers?.['retry-after']).toBe('1');
    expect(JSON.parse(String(throttled.body))).toMatchObject({ code: 'NotReady', status: 503 });
    expect(next.statusCode).toBe(200);
    expect(errors).not.toHaveBeenCalled();
  });

  it('lets exactly one of two first uses with different counts record its count', async () => {
    // Prepare
    const { client, tableName } = await freshTable('ipam-settings');
    const table = new SdkTable(client, tableName);
    // Act
    const outcomes = await Promise.allSettled([
      assertTableSettings(table, { leaseIndexShards: 8 }, '2026-11-25T00:00:00.000Z'),
      assertTableSettings(table, { leaseIndexShards: 16 }, '2026-11-25T00:00:00.000Z'),
    ]);
    // Assess
    expect(outcomes.map((o) => o.status).sort()).toEqual(['fulfilled', 'rejected']);
    const recorded = await table.get(keys.tableSettings());
    const winner = outcomes[0]!.status === 'fulfilled' ? 8 : 16;
    expect(recorded?.leaseIndexShards).toBe(winner);
    await expect(
      assertTableSettings(table, { leaseIndexShards: winner }, '2026-11-25T00:00:01.000Z'),
    ).resolves.toBeUndefined();
  });
});
