import type { APIGatewayProxyEventV2 } from 'aws-lambda';

/**
 * An API Gateway HTTP API (payload 2.0) event for a method and path, as API Gateway sends a request without a
 * signature (the local stack's shape: no principal): what the tests, the simulator and the benchmark hand the real
 * HTTP handler. A string body is sent as it is (a test's malformed JSON), anything else as JSON.
 */
export function httpEvent(
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string>; requestId?: string } = {},
): APIGatewayProxyEventV2 {
  const { body, headers = {}, requestId = 'local' } = options;
  const [rawPath, query = ''] = path.split('?') as [string, string?];
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString: query,
    headers: { 'content-type': 'application/json', ...headers },
    ...(query ? { queryStringParameters: Object.fromEntries(new URLSearchParams(query)) } : {}),
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: 'localhost',
      domainPrefix: 'localhost',
      requestId,
      routeKey: '$default',
      stage: '$default',
      time: '',
      timeEpoch: 0,
      http: { method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'local' },
    },
    isBase64Encoded: false,
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  };
}
