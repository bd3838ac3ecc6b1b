import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { loadConfig } from '../../shared/config.ts';
import { buildContainer, type Container, type ContainerOverrides } from '../../shared/adapters/composition.ts';
import { createHttpHandler } from '../../shared/adapters/http/api.ts';
import { httpEvent as eventFor } from '../../scripts/lib/http-event.ts';
import type { Table } from '../../shared/adapters/dynamodb/table.ts';
import { assertConforms } from './contract.ts';
import { dynamoLocalEngine, type TestEngine } from './engines.ts';
import { asIntFunction } from './int-functions.ts';

export interface ApiResponse {
  status: number;
  headers: Record<string, string>;
  // Parsed JSON of the response body (tests read fields off it).
  body: Record<string, unknown> & { items?: Record<string, unknown>[] };
}

export interface TestApi {
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse>;
  /** Hands the real handler any event, even one API Gateway would never send, and returns its raw answer. */
  invoke(event: unknown): Promise<APIGatewayProxyStructuredResultV2>;
  container: Container;
  tableName: string;
  /** The DynamoDB Local endpoint; empty on the memory engine. */
  endpoint: string;
  /** Another container (another warm Lambda) on the same table. */
  sibling(overrides?: ContainerOverrides, env?: Record<string, string>): TestApi;
}

/** An API Gateway HTTP API (payload v2) event for a method and path (scripts/lib/http-event.ts). */
export function httpEvent(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): APIGatewayProxyEventV2 {
  return eventFor(method, path, { body, headers, requestId: 'test' });
}

function makeApi(
  table: Table,
  base: Record<string, string>,
  overrides: ContainerOverrides,
  env: Record<string, string>,
  metrics?: RecordedMetrics,
): TestApi {
  const config = loadConfig({ LEASE_INDEX_SHARDS: '4', DYNAMODB_REQUEST_TIMEOUT_MS: '30000', ...base, ...env });
  // A client given by the test (one that counts requests) speaks to the same table, and so does a table given by the test
  // (one that wraps this one); otherwise every container shares the engine.
  const container = asStreamFunction(
    buildContainer(config, overrides.client ? overrides : { ...overrides, table: overrides.table ?? table }),
  );
  const httpHandler = createHttpHandler(
    () => container.deps,
    { version: 'test', health: () => container.deps.health.health(), localStack: config.localStack },
    () => {},
    metrics,
  );
  const handler = (event: APIGatewayProxyEventV2, context: Context) =>
    asIntFunction('api', () => httpHandler(event, context));
  return {
    container,
    tableName: table.name,
    endpoint: base.DYNAMODB_ENDPOINT ?? '',
    // The handler's declared event type is what API Gateway sends; robustness tests pass other shapes on purpose.
    invoke: async (event) =>
      (await handler(event as APIGatewayProxyEventV2, {} as Context)) as APIGatewayProxyStructuredResultV2,

    async call(method, path, body, headers) {
      const out = await handler(httpEvent(method, path, body, headers), {} as Context);
      const text = typeof out === 'object' && out.body ? out.body : '';
      const response = {
        status: out.statusCode ?? 0,
        headers: (out.headers ?? {}) as Record<string, string>,
        body: text ? JSON.parse(text) : {},
      };
      // Every answer a test reads is also checked against openapi.yaml (tests/support/contract.ts).
      assertConforms(method, path, response.status, response.headers, text ? response.body : undefined);
      return response;
    },
    sibling: (o = {}, e = {}) => makeApi(table, base, o, { ...env, ...e }),
  };
}

/** The container with its stream function's projections (and their exhaustion watch) run as the stream function. */
function asStreamFunction(container: Container): Container {
  const scoped = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(t, property) {
        const value: unknown = Reflect.get(t, property, t);
        if (typeof value === 'function')
          return (...args: unknown[]) =>
            asIntFunction('mirror', () => (value as (...a: unknown[]) => unknown).apply(t, args));
        return property === 'exhaustion' && typeof value === 'object' && value !== null ? scoped(value) : value;
      },
    });
  return { ...container, mirror: scoped(container.mirror) };
}

/** The real HTTP handler over a fresh table, on DynamoDB Local unless another engine is given. */
export async function testApi(
  overrides: ContainerOverrides = {},
  env: Record<string, string> = {},
  metrics?: RecordedMetrics,
  engine: TestEngine = dynamoLocalEngine,
): Promise<TestApi> {
  const { table, env: base } = await engine.fresh();
  return makeApi(table, base, overrides, env, metrics);
}

/** Records the API's allocation counters in memory. */
export class RecordedMetrics {
  readonly lines: string[] = [];
  private pending: string[] = [];
  allocated(scope: string): void {
    this.pending.push(`Allocations ${scope}`);
  }
  failed(scope: string, code: string): void {
    this.pending.push(`AllocationErrors ${scope} ${code}`);
  }
  collided(scope: string, n: number): void {
    this.pending.push(`Collisions ${scope} ${n}`);
  }
  flush(): void {
    this.lines.push(...this.pending.splice(0));
  }
}
