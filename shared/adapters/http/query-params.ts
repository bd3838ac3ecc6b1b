import { InvalidArgumentError, quote } from '../../core/errors.ts';
import type { RouteKey } from './route-keys.ts';

/**
 * The query parameters each route reads (openapi.yaml's, checked by tests/unit/openapi.test.ts). Any other is
 * refused: a parameter silently ignored makes a typo, or another API's spelling (Kubernetes' `?dryRun=All`), look
 * like success, and on a write it does what the caller did not mean.
 */
export const queryParameters: { readonly [K in RouteKey]: readonly string[] } = {
  'GET /v1/health': [],
  'POST /v1/pools': [],
  'GET /v1/pools': ['limit', 'cursor'],
  'GET /v1/pools/{pool}': [],
  'DELETE /v1/pools/{pool}': [],
  'POST /v1/pools/{pool}/ranges': [],
  'GET /v1/pools/{pool}/ranges': [],
  'GET /v1/pools/{pool}/ranges/{range}': [],
  'DELETE /v1/pools/{pool}/ranges/{range}': [],
  'GET /v1/pools/{pool}/ranges/{range}/allocation': [],
  'GET /v1/pools/{pool}/ranges/{range}/occupancy': [],
  'POST /v1/pools/{pool}/claims': [],
  'GET /v1/pools/{pool}/claims': ['owner', 'labelSelector', 'limit', 'cursor'],
  'GET /v1/pools/{pool}/claims/{claim}': [],
  'DELETE /v1/pools/{pool}/claims/{claim}': [],
  'POST /v1/pools/{pool}/claims/{claim}/renew': [],
  'POST /v1/pools/{pool}/renewals': [],
  'GET /v1/pools/{pool}/addresses': ['range', 'limit', 'cursor'],
  'GET /v1/pools/{pool}/addresses/{address}': [],
  'DELETE /v1/pools/{pool}/owners/{uid}': [],
  'GET /v1/pools/{pool}/events': ['limit', 'cursor'],
  'GET /v1/pools/{pool}/addresses/{address}/history': ['at', 'from', 'to', 'limit', 'cursor'],
  'GET /v1/pools/{pool}/owners/{uid}/history': ['limit', 'cursor'],
  'GET /v1/pools/{pool}/history': ['cidr', 'from', 'to', 'limit'],
  'POST /v1/pools/{pool}/claims/{claim}/consumers': [],
  'DELETE /v1/pools/{pool}/claims/{claim}/consumers/{uid}': [],
};

/** Refuses query parameters the route does not read, naming them and the ones it does. @throws InvalidArgumentError */
export function refuseUnknownQuery(key: RouteKey, query: Readonly<Record<string, unknown>> | undefined): void {
  const known = queryParameters[key];
  const unknown = Object.keys(query ?? {}).filter((name) => !known.includes(name));
  if (unknown.length === 0) return;
  const names = unknown.slice(0, 5).map((name) => quote(name));
  const takes = known.length ? `takes only ${known.join(', ')}` : 'takes no query parameter';
  const dryRun = unknown.includes('dryRun') ? ' A preview is the body\'s "dryRun": true.' : '';
  throw new InvalidArgumentError(
    `Unknown query parameter${unknown.length === 1 ? '' : 's'} ${names.join(', ')}${unknown.length > 5 ? ', ...' : ''}; ${key} ${takes}.${dryRun}`,
    'query',
  );
}
