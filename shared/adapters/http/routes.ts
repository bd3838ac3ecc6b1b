// Over 300 lines: the route table, one entry per route of openapi.yaml, each parsing its input and calling one use case.
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { components, operations } from './openapi.gen.ts';
import { IpamError, type ErrorCode } from '../../core/errors.ts';
import type { Principal } from '../../core/access.ts';
import type { Deps } from '../../core/use-cases/deps.ts';
import * as pools from '../../core/use-cases/pools.ts';
import * as ranges from '../../core/use-cases/ranges.ts';
import * as claims from '../../core/use-cases/claims.ts';
import { claimDnsStatus } from '../../core/use-cases/claim-dns.ts';
import { renewClaims } from '../../core/use-cases/claim-renewals.ts';
import * as addresses from '../../core/use-cases/addresses.ts';
import { getRangeOccupancy } from '../../core/use-cases/occupancy.ts';
import { claimDto, claimRenewalDto, leaseDto, occupancyDto, poolDetailsDto, poolDto, rangeDto } from './dto.ts';
import { etagOf } from './etag.ts';
import { createClaimGrowing } from '../../core/use-cases/grow.ts';
import {
  commitDeadline,
  ifMatch,
  labelSelectorQuery,
  ownerQuery,
  pageParams,
  parseBody,
  pathParam,
  rangeQuery,
  type FieldSpec,
} from './request.ts';
import type { RouteKey } from './route-keys.ts';

export type Response = APIGatewayProxyStructuredResultV2;

/** Allocation counters the API publishes (IpamMetrics in shared/adapters/metrics.ts is the real one). */
export interface ApiMetrics {
  allocated(scope: 'static' | 'dynamic'): void;
  failed(scope: 'static' | 'dynamic', code: ErrorCode): void;
  collided(scope: 'static' | 'dynamic', collisions: number): void;
}

/** What a route gets: the event and the container's dependencies. */
export interface RouteContext {
  readonly event: APIGatewayProxyEventV2;
  readonly deps: Deps;
  readonly metrics?: ApiMetrics;
  /** Extra facts: the health route's, and whether this is the local stack (which takes the caller from a header). */
  readonly info: {
    readonly version: string;
    readonly health: () => Promise<{ table: string; status: string }>;
    readonly localStack?: boolean;
  };
  /** The caller (request.ts callerOf); undefined when nothing names one (a local call without the header). */
  readonly caller?: Principal;
  /** Adds fields to the request's audit log line (api.ts writes one per write): what the write did. */
  readonly audit?: (fields: Record<string, unknown>) => void;
  /** The route's pool was not found Ready when its access was checked (api.ts authorize; only DELETE of a pool runs on). */
  readonly poolAbsent?: boolean;
}

export type Route = (ctx: RouteContext) => Promise<Response>;

/** A JSON response. */
export function json(statusCode: number, body: unknown, headers: Record<string, string> = {}): Response {
  // A newline at the end, as curl users expect of a JSON answer (a shell prompt is not glued to it).
  return { statusCode, headers: { 'content-type': 'application/json', ...headers }, body: `${JSON.stringify(body)}\n` };
}

const noContent = (): Response => ({ statusCode: 204, headers: {} });

const claimHeaders = (version: number) => ({ etag: etagOf(version) });

/** What a dryRun's answer says of itself. */
export const PREVIEW_DETAIL =
  'A preview of what this claim would get now; nothing was written and this is not a hold: a later claim may get another block or address.';

/** A dryRun's answer: the claim it would make, and in a pool that grows the blocks it would first take (`grows`). */
function previewDto(result: claims.CreateClaimAnswer): Record<string, unknown> {
  const { grows } = result;
  if (!grows?.length) return { ...claimDto(result.claim), dryRun: true, detail: PREVIEW_DETAIL };
  const blocks = grows
    .map(
      (g) =>
        `block ${g.cidr} from pool ${JSON.stringify(g.pool)} (its claim ${JSON.stringify(g.claim)}) as range ${JSON.stringify(g.range)}`,
    )
    .join(' and ');
  const growth = `The pool has no room for this claim: a real claim would first take ${blocks}, and get this in it.`;
  return { ...claimDto(result.claim), dryRun: true, grows, detail: `${growth} ${PREVIEW_DETAIL}` };
}

/** The JSON body of each route that reads one, field by field (parseBody checks it; the fuzz test derives its bodies from it). */
export const bodyFields = {
  'POST /v1/pools': {
    name: { type: 'string', required: true },
    exclude: { type: 'string[]' },
    reuseDelaySeconds: { type: 'integer' },
    historyDays: { type: 'integer' },
    access: { type: 'object', fields: { administrators: { type: 'string[]' }, allocators: { type: 'string[]' } } },
    freeThresholds: { type: 'number[]' },
    // Per family ({"IPv4": 26}): pools.ts checks the families and lengths.
    blockPrefixLength: { type: 'object' },
    // Grow on demand from a parent block pool: grow.ts checks it.
    grow: { type: 'object' },
    // Lets other pools use this one's blocks (a pool without access): access.ts requireChildPoolConsent.
    openToChildPools: { type: 'boolean' },
    // The pool's DNS zone and target: dns/settings.ts checks it.
    dns: { type: 'object' },
  },
  'POST /v1/pools/{pool}/ranges': {
    cidr: { type: 'string', required: true },
    name: { type: 'string' },
    legacy: { type: 'boolean' },
    // A nested pool's range: the block claim of another pool it is made from.
    source: {
      type: 'object',
      fields: { pool: { type: 'string', required: true }, claim: { type: 'string', required: true } },
    },
  },
  'POST /v1/pools/{pool}/claims': {
    name: { type: 'string' },
    generateName: { type: 'string' },
    owner: {
      type: 'object',
      required: true,
      fields: {
        kind: { type: 'string', required: true },
        name: { type: 'string', required: true },
        uid: { type: 'string', required: true },
      },
    },
    ipFamilyPolicy: { type: 'string' },
    ipFamilies: { type: 'string[]' },
    addresses: { type: 'string[]' },
    ttlSeconds: { type: 'integer' },
    count: { type: 'integer' },
    // Keys are the client's own: labels.ts checks them and their values.
    labels: { type: 'object' },
    // Explicit blocks of a block pool's claim.
    prefixes: { type: 'string[]' },
    hostname: { type: 'string' },
    // Answer what the claim would get now; write nothing.
    dryRun: { type: 'boolean' },
  },
  // ttlSeconds null confirms a hold: the claim becomes permanent.
  'POST /v1/pools/{pool}/claims/{claim}/renew': { ttlSeconds: { type: 'integer', nullable: true } },
  // Many claims of the pool at once (use-cases/claim-renewals.ts checks the list).
  'POST /v1/pools/{pool}/renewals': { claims: { type: 'string[]', required: true }, ttlSeconds: { type: 'integer' } },
  // A consumer of the claim (use-cases/consumers.ts checks each field).
  'POST /v1/pools/{pool}/claims/{claim}/consumers': {
    kind: { type: 'string', required: true },
    name: { type: 'string', required: true },
    uid: { type: 'string', required: true },
  },
} as const satisfies Record<string, Readonly<Record<string, FieldSpec>>>;

type Schemas = components['schemas'];

/**
 * Each body route's body as openapi.yaml declares it (openapi.gen.ts). parseBody has checked every field against
 * bodyFields (known fields only, each of its type, the required ones present), and tests/unit/openapi.test.ts holds
 * bodyFields to the document, so the routes read typed fields and cast nothing.
 */
interface Bodies {
  readonly 'POST /v1/pools': Schemas['PoolSpec'];
  readonly 'POST /v1/pools/{pool}/ranges': Schemas['RangeSpec'];
  readonly 'POST /v1/pools/{pool}/claims': Schemas['ClaimSpec'];
  readonly 'POST /v1/pools/{pool}/claims/{claim}/renew': NonNullable<
    operations['renewClaim']['requestBody']
  >['content']['application/json'];
  readonly 'POST /v1/pools/{pool}/claims/{claim}/consumers': Schemas['Consumer'];
  readonly 'POST /v1/pools/{pool}/renewals': Schemas['RenewalSpec'];
}

/** A route's body, parsed and checked by its bodyFields, typed by the document. @throws InvalidArgumentError */
export function bodyOf<K extends keyof Bodies & keyof typeof bodyFields>(
  event: APIGatewayProxyEventV2,
  key: K,
  optional = false,
): Bodies[K] {
  return parseBody(event, bodyFields[key], optional) as Bodies[K];
}

/** Some of the routes of route-keys.ts, by key (`satisfies` refuses a key that is not declared there). */
export type RouteMap = Readonly<Partial<Record<RouteKey, Route>>>;

/** The routes of pools, ranges, claims and addresses (api.ts joins them with the legacy and reconciler ones). */
export const routes = {
  'GET /v1/health': async ({ info }) => {
    // Status only: the table's name, the runtime's and the code's versions are facts for an attacker, not a probe.
    const table = await info.health();
    return json(200, { status: table.status === 'ACTIVE' ? 'ok' : 'degraded' });
  },

  'POST /v1/pools': async ({ event, deps, caller }) => {
    const body = bodyOf(event, 'POST /v1/pools');
    const pool = await pools.createPool(deps, {
      name: body.name,
      ...(body.exclude ? { exclude: body.exclude } : {}),
      ...(body.reuseDelaySeconds !== undefined ? { reuseDelaySeconds: body.reuseDelaySeconds } : {}),
      ...(body.historyDays !== undefined ? { historyDays: body.historyDays } : {}),
      ...(body.access !== undefined ? { access: body.access } : {}),
      ...(body.freeThresholds !== undefined ? { freeThresholds: body.freeThresholds } : {}),
      ...(body.blockPrefixLength !== undefined ? { blockPrefixLength: body.blockPrefixLength } : {}),
      ...(body.grow !== undefined ? { grow: body.grow } : {}),
      ...(body.openToChildPools !== undefined ? { openToChildPools: body.openToChildPools } : {}),
      ...(caller ? { caller } : {}),
      ...(body.dns !== undefined ? { dns: body.dns } : {}),
    });
    return json(201, poolDto(pool), { location: `/v1/pools/${pool.name}` });
  },
  'GET /v1/pools': async ({ event, deps, caller }) => {
    const { limit, cursor } = pageParams(event);
    const page = await pools.listPools(deps, limit, cursor, caller);
    return json(200, { items: page.items.map(poolDto), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) });
  },
  'GET /v1/pools/{pool}': async ({ event, deps }) =>
    json(200, poolDetailsDto(await pools.getPool(deps, pathParam(event, 'pool')))),
  'DELETE /v1/pools/{pool}': async ({ event, deps, poolAbsent }) => {
    const name = pathParam(event, 'pool');
    // No Ready pool at the access check: only a deletion already in progress is finished (nothing is marked, so a
    // pool created after the check, whose access was never checked, is not deleted).
    // Accepted: gone for every request; 202 while what it left is still being removed (its name is not free yet).
    const outcome = poolAbsent ? await pools.finishPoolDeletion(deps, name) : await pools.deletePool(deps, name);
    return outcome === 'gone' ? noContent() : json(202, { name, state: 'Terminating' });
  },

  'POST /v1/pools/{pool}/ranges': async ({ event, deps, caller }) => {
    const body = bodyOf(event, 'POST /v1/pools/{pool}/ranges');
    const result = await ranges.createRange(deps, {
      pool: pathParam(event, 'pool'),
      cidr: body.cidr,
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.legacy !== undefined ? { legacy: body.legacy } : {}),
      ...(body.source !== undefined ? { source: body.source } : {}),
      ...(caller ? { caller } : {}),
    });
    return json(result.created ? 201 : 200, rangeDto(result.range, result.utilization));
  },
  'GET /v1/pools/{pool}/ranges': async ({ event, deps }) => {
    const list = await ranges.listRanges(deps, pathParam(event, 'pool'));
    return json(200, { items: list.map((r) => rangeDto(r.range, r.utilization)) });
  },
  'GET /v1/pools/{pool}/ranges/{range}': async ({ event, deps }) => {
    const r = await ranges.getRange(deps, pathParam(event, 'pool'), pathParam(event, 'range'));
    return json(200, rangeDto(r.range, r.utilization));
  },
  'GET /v1/pools/{pool}/ranges/{range}/occupancy': async ({ event, deps }) => {
    return json(200, occupancyDto(await getRangeOccupancy(deps, pathParam(event, 'pool'), pathParam(event, 'range'))));
  },
  'DELETE /v1/pools/{pool}/ranges/{range}': async ({ event, deps }) => {
    const outcome = await ranges.deleteRange(deps, pathParam(event, 'pool'), pathParam(event, 'range'));
    return outcome === 'gone' ? noContent() : json(202, { name: pathParam(event, 'range'), state: 'Terminating' });
  },

  'POST /v1/pools/{pool}/claims': async ({ event, deps, metrics, caller, audit }) => {
    const body = bodyOf(event, 'POST /v1/pools/{pool}/claims');
    // Static when the client named its addresses; the scope splits the allocation counters.
    const scope = Array.isArray(body.addresses) && body.addresses.length > 0 ? 'static' : 'dynamic';
    const commitBy = commitDeadline(event);
    const result = await createClaimGrowing(deps, {
      pool: pathParam(event, 'pool'),
      owner: body.owner,
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.generateName !== undefined ? { generateName: body.generateName } : {}),
      ...(body.ipFamilyPolicy !== undefined ? { ipFamilyPolicy: body.ipFamilyPolicy } : {}),
      ...(body.ipFamilies !== undefined ? { ipFamilies: body.ipFamilies } : {}),
      ...(body.addresses !== undefined ? { addresses: body.addresses } : {}),
      ...(body.prefixes !== undefined ? { prefixes: body.prefixes } : {}),
      ...(body.dryRun === true ? { dryRun: true } : {}),
      ...(body.ttlSeconds !== undefined ? { ttlSeconds: body.ttlSeconds } : {}),
      ...(body.count !== undefined ? { count: body.count } : {}),
      ...(caller ? { createdBy: caller } : {}),
      ...(body.labels !== undefined ? { labels: body.labels } : {}),
      ...(body.hostname !== undefined ? { hostname: body.hostname } : {}),
      ...(commitBy !== undefined ? { commitBy } : {}),
    }).catch((error: unknown) => {
      if (error instanceof IpamError) metrics?.failed(scope, error.code);
      throw error;
    });
    // A preview is no hold: said in the answer, and neither audited as a write nor counted as an allocation.
    if (result.preview) return json(200, previewDto(result));
    audit?.({
      claim: result.claim.name,
      created: result.created,
      addresses: result.claim.addresses.map((a) => a.address),
    });
    if (result.created) metrics?.allocated(scope);
    if (result.collisions) metrics?.collided(scope, result.collisions);
    return json(result.created ? 201 : 200, claimDto(result.claim), claimHeaders(result.claim.version));
  },
  'GET /v1/pools/{pool}/claims': async ({ event, deps }) => {
    const ownerUid = ownerQuery(event);
    const labels = labelSelectorQuery(event);
    const page = await claims.listClaims(deps, pathParam(event, 'pool'), pageParams(event), {
      ...(ownerUid !== undefined ? { ownerUid } : {}),
      ...(labels ? { labels } : {}),
    });
    return json(200, { items: page.items.map(claimDto), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) });
  },
  'GET /v1/pools/{pool}/claims/{claim}': async ({ event, deps }) => {
    const claim = await claims.getClaim(deps, pathParam(event, 'pool'), pathParam(event, 'claim'));
    const dns = await claimDnsStatus(deps, claim);
    return json(200, { ...claimDto(claim), ...(dns ? { dns } : {}) }, claimHeaders(claim.version));
  },
  'DELETE /v1/pools/{pool}/claims/{claim}': async ({ event, deps, caller, audit }) => {
    const released = await claims.deleteClaim(deps, pathParam(event, 'pool'), pathParam(event, 'claim'), {
      ifMatch: ifMatch(event),
      caller,
    });
    audit?.({
      released: released ? released.addresses.map((a) => a.address) : [],
      ...(released?.createdBy ? { createdBy: released.createdBy.arn } : {}),
    });
    return noContent();
  },
  'POST /v1/pools/{pool}/claims/{claim}/renew': async ({ event, deps, caller }) => {
    const body = bodyOf(event, 'POST /v1/pools/{pool}/claims/{claim}/renew', true);
    const claim = await claims.renewClaim(deps, pathParam(event, 'pool'), pathParam(event, 'claim'), {
      ttlSeconds: body.ttlSeconds,
      caller,
    });
    return json(200, claimDto(claim), claimHeaders(claim.version));
  },
  'POST /v1/pools/{pool}/renewals': async ({ event, deps, caller, audit }) => {
    const body = bodyOf(event, 'POST /v1/pools/{pool}/renewals');
    const results = await renewClaims(deps, {
      pool: pathParam(event, 'pool'),
      names: body.claims,
      ...(body.ttlSeconds !== undefined ? { ttlSeconds: body.ttlSeconds } : {}),
      ...(caller ? { caller } : {}),
    });
    const renewed = results.filter((r) => r.result === 'Renewed').length;
    audit?.({ claims: results.length, renewed });
    return json(200, { items: results.map(claimRenewalDto), renewed });
  },

  'GET /v1/pools/{pool}/addresses': async ({ event, deps }) => {
    const range = rangeQuery(event);
    const page = await addresses.listAddresses(deps, pathParam(event, 'pool'), { ...pageParams(event), range });
    return json(200, { items: page.items.map(leaseDto), ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) });
  },
  'GET /v1/pools/{pool}/addresses/{address}': async ({ event, deps }) =>
    json(200, leaseDto(await addresses.getAddress(deps, pathParam(event, 'pool'), pathParam(event, 'address')))),
} as const satisfies RouteMap;

interface Compiled {
  readonly key: RouteKey;
  readonly method: string;
  readonly pattern: RegExp;
  readonly params: readonly string[];
}

/** Compiles route keys so requests without a routeKey (or with a `$default` one) are matched by method and path. */
export function compileRoutes(keysList: readonly RouteKey[]): Compiled[] {
  return keysList.map((key) => {
    const [method, path] = key.split(' ') as [string, string];
    const params: string[] = [];
    const source = path.replace(/\{([^}]+)\}/g, (_, name: string) => {
      params.push(name);
      return '([^/]+)';
    });
    return { key, method, pattern: new RegExp(`^${source}/?$`), params };
  });
}

/** Finds the route of a request, filling path parameters when matched by path. */
/** The methods the routes of a path take (none: no route has this path). */
export function methodsOf(compiled: readonly Compiled[], path: string): string[] {
  return [...new Set(compiled.filter((c) => c.pattern.test(path)).map((c) => c.method))];
}

export function matchRoute(
  compiled: readonly Compiled[],
  event: APIGatewayProxyEventV2,
): { key: RouteKey; pathParameters: Record<string, string> } | undefined {
  if (event.routeKey && event.routeKey !== '$default') {
    const found = compiled.find((c) => c.key === event.routeKey);
    if (found) return { key: found.key, pathParameters: (event.pathParameters ?? {}) as Record<string, string> };
  }
  const method = event.requestContext?.http?.method ?? '';
  const path = event.rawPath ?? '';
  for (const c of compiled) {
    if (c.method !== method) continue;
    const m = c.pattern.exec(path);
    if (m) return { key: c.key, pathParameters: Object.fromEntries(c.params.map((p, i) => [p, m[i + 1]!])) };
  }
  return undefined;
}
