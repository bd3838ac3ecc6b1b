/**
 * Every route of the HTTP API, declared once. The handler dispatches on exactly these (api.ts's route map is typed
 * by them, so a route missing here or there does not compile); serverless.yml's httpApi events, openapi.yaml's paths
 * and the packaged template's routes are tests' checks against this list (tests/unit/openapi.test.ts,
 * tests/unit/template.test.ts), not copies of it.
 */
export const routeKeys = [
  'GET /v1/health',
  'POST /v1/pools',
  'GET /v1/pools',
  'GET /v1/pools/{pool}',
  'DELETE /v1/pools/{pool}',
  'POST /v1/pools/{pool}/ranges',
  'GET /v1/pools/{pool}/ranges',
  'GET /v1/pools/{pool}/ranges/{range}',
  'DELETE /v1/pools/{pool}/ranges/{range}',
  'GET /v1/pools/{pool}/ranges/{range}/allocation',
  'GET /v1/pools/{pool}/ranges/{range}/occupancy',
  'POST /v1/pools/{pool}/claims',
  'GET /v1/pools/{pool}/claims',
  'GET /v1/pools/{pool}/claims/{claim}',
  'DELETE /v1/pools/{pool}/claims/{claim}',
  'POST /v1/pools/{pool}/claims/{claim}/renew',
  'POST /v1/pools/{pool}/renewals',
  'GET /v1/pools/{pool}/addresses',
  'GET /v1/pools/{pool}/addresses/{address}',
  'DELETE /v1/pools/{pool}/owners/{uid}',
  'GET /v1/pools/{pool}/events',
  'GET /v1/pools/{pool}/addresses/{address}/history',
  'GET /v1/pools/{pool}/owners/{uid}/history',
  'GET /v1/pools/{pool}/history',
  'POST /v1/pools/{pool}/claims/{claim}/consumers',
  'DELETE /v1/pools/{pool}/claims/{claim}/consumers/{uid}',
] as const;

/** `METHOD /path`, as API Gateway (payload 2.0) sends it in `routeKey`. */
export type RouteKey = (typeof routeKeys)[number];
