import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';

/** HTTP API entry (placeholder until the API lands): answers the health route. */
export const handler = async (event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> => {
  if (event.routeKey === 'GET /v1/health') {
    return { statusCode: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ status: 'ok' }) };
  }
  return { statusCode: 404, headers: { 'content-type': 'application/problem+json' }, body: JSON.stringify({ code: 'NotFound' }) };
};
