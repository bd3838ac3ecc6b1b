import middy from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { requireAdministrator, requireMember, type Principal } from '../../core/access.ts';
import { MethodNotAllowedError, NotFoundError } from '../../core/errors.ts';
import type { Deps } from '../../core/use-cases/deps.ts';
import { problemOf, problemResponse } from './problem.ts';
import { callerOf, isVerbatimParam, pathParam, percentInPath, readEvent, refuseForgeableWrite } from './request.ts';
import {
  compileRoutes,
  matchRoute,
  methodsOf,
  routes as coreRoutes,
  type ApiMetrics,
  type Route,
  type RouteContext,
} from './routes.ts';
import { routeKeys, type RouteKey } from './route-keys.ts';
import { refuseUnknownQuery } from './query-params.ts';
import { legacyRoutes } from './legacy-routes.ts';
import { reconcileRoutes } from './reconcile-routes.ts';
import { historyRoutes } from './history-routes.ts';
import { consumerRoutes } from './consumer-routes.ts';

/** Every route of the API, by route key: exactly the keys of route-keys.ts (one missing or extra does not compile). */
export const routes: { readonly [K in RouteKey]: Route } = {
  ...coreRoutes,
  ...legacyRoutes,
  ...reconcileRoutes,
  ...historyRoutes,
  ...consumerRoutes,
};

/** Logs one JSON line: a failure (5xx details live here, never in the response), or the audit line of a write. */
export type ErrorLogger = (entry: Record<string, unknown>) => void;

const defaultLogger: ErrorLogger = (entry) => console.error(JSON.stringify(entry));

/** The problem middleware: maps every error to `application/problem+json`, hiding what must not be exposed. */
function problemMiddleware(
  log: ErrorLogger,
): middy.MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2> {
  return {
    onError: async (request) => {
      const problem = problemOf(request.error);
      if (problem.status >= 500) {
        const error = request.error as Error;
        // The event may be any shape here (readEvent refused it, or never ran): read it optionally.
        const event = request.event as Partial<APIGatewayProxyEventV2> | null | undefined;
        log({
          level: 'error',
          message: 'request failed',
          route: event?.routeKey,
          path: event?.rawPath,
          status: problem.status,
          error: error?.name,
          detail: error?.message,
          cause: (error?.cause as Error)?.name,
        });
      }
      request.response = problemResponse(problem);
    },
  };
}

/**
 * Refuses a name percent-encoded in the raw path, whatever the path parameters say: API Gateway may hand them over
 * decoded, and it is the raw path that IAM authorized (request.ts says why names are never decoded).
 * @throws InvalidArgumentError
 */
function refusePercentEncodedNames(compiled: ReturnType<typeof compileRoutes>, key: RouteKey, rawPath: string): void {
  if (!rawPath.includes('%')) return;
  const route = compiled.find((c) => c.key === key);
  const segments = route?.pattern.exec(rawPath);
  if (!route || !segments) return;
  route.params.forEach((name, i) => {
    if (isVerbatimParam(name) && segments[i + 1]!.includes('%')) throw percentInPath(name);
  });
}

/** The routes only a pool's administrators may call, and what each does (for the 403's sentence). */
const administered: Partial<Record<RouteKey, string>> = {
  'DELETE /v1/pools/{pool}': 'delete the pool',
  'POST /v1/pools/{pool}/ranges': 'add a range',
  'DELETE /v1/pools/{pool}/ranges/{range}': 'delete a range',
};

/**
 * The pool's `access`, checked once for every route under a pool (core/access.ts): its administrators for the routes
 * above, its administrators and allocators for every other one (reads included). Whose claim may be released or
 * renewed is the use case's check, which has the claim. A pool absent (or Terminating) at this check is the request's
 * 404 at once: a route run on would act on a pool created meanwhile, whose `access` was never checked. A DELETE of the
 * pool alone runs on, told so (`'absent'`), to finish a deletion in progress.
 * @throws ForbiddenError; NotFoundError
 */
async function authorize(
  key: RouteKey,
  event: APIGatewayProxyEventV2,
  deps: Deps,
  caller: Principal | undefined,
): Promise<'absent' | undefined> {
  if (!key.includes('{pool}')) return undefined;
  let pool;
  try {
    pool = (await deps.views.get(pathParam(event, 'pool'), deps.clock.nowMs())).pool;
  } catch (error) {
    if (error instanceof NotFoundError && key === 'DELETE /v1/pools/{pool}') return 'absent';
    throw error;
  }
  const what = administered[key];
  if (what !== undefined) requireAdministrator(pool, caller, what);
  else requireMember(pool, caller);
  return undefined;
}

/** A path value for a log line, cut short (a huge path does not make a huge line). */
const logged = (value: string | undefined) =>
  value === undefined ? undefined : value.length > 256 ? `${value.slice(0, 256)}...` : value;

/** A request no route takes: 405 with `Allow` when its path is known for other methods, else 404. @throws NotFoundError */
function noRoute(
  compiled: ReturnType<typeof compileRoutes>,
  event: ReturnType<typeof readEvent>,
): APIGatewayProxyStructuredResultV2 {
  // The path is echoed for the reader, cut short so a huge path does not make a huge answer.
  const path = event.rawPath.length > 200 ? `${event.rawPath.slice(0, 200)}...` : event.rawPath;
  const allow = methodsOf(compiled, event.rawPath);
  if (allow.length) {
    const problem = problemOf(new MethodNotAllowedError(event.requestContext.http.method, path, allow));
    const response = problemResponse(problem);
    return { ...response, headers: { ...response.headers, allow: allow.join(', ') } };
  }
  throw new NotFoundError(
    'route',
    path,
    `No route ${event.requestContext.http.method || '(no method)'} ${path || '(no path)'}.`,
  );
}

/** Builds the HTTP API handler: route, call one use case, map the result; errors become problem documents. */
export function createHttpHandler(
  deps: () => Deps,
  info: RouteContext['info'],
  log: ErrorLogger = defaultLogger,
  metrics?: ApiMetrics & { flush(): void },
) {
  const compiled = compileRoutes(routeKeys);
  return middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, Context>()
    .use(problemMiddleware(log))
    .use({
      // One EMF line per request that counted something; after the response is decided, errors included.
      after: async () => metrics?.flush(),
      onError: async () => metrics?.flush(),
    })
    .handler(async (raw) => {
      const event = readEvent(raw);
      const match = matchRoute(compiled, event);
      if (!match) return noRoute(compiled, event);
      const route = routes[match.key];
      const routed = { ...event, pathParameters: match.pathParameters };
      // Every write leaves one audit line: who (the principal), what (route, names), and how it ended.
      const writes = event.requestContext.http.method !== 'GET';
      const fields: Record<string, unknown> = {};
      let caller: Principal | undefined;
      const audit = (status: number, extra: Record<string, unknown> = {}) => {
        if (!writes) return;
        const names = Object.fromEntries(Object.entries(match.pathParameters).map(([k, v]) => [k, logged(v)]));
        log({
          level: 'info',
          message: 'write',
          requestId: event.requestContext.requestId,
          route: match.key,
          ...names,
          principal: caller?.arn ?? null,
          ...(caller?.session ? { session: caller.session } : {}),
          status,
          ...fields,
          ...extra,
        });
      };
      try {
        caller = callerOf(event, info.localStack === true);
        // Inside the try: a write refused for a percent-encoded name leaves its audit line too.
        refusePercentEncodedNames(compiled, match.key, event.rawPath);
        refuseUnknownQuery(match.key, event.queryStringParameters);
        refuseForgeableWrite(event);
        const container = deps();
        const poolAbsent = (await authorize(match.key, routed, container, caller)) === 'absent';
        const response = await route({
          event: routed,
          deps: container,
          info,
          ...(poolAbsent ? { poolAbsent } : {}),
          ...(caller ? { caller } : {}),
          audit: (more) => Object.assign(fields, more),
          ...(metrics ? { metrics } : {}),
        });
        audit(response.statusCode ?? 200);
        return response;
      } catch (error) {
        const problem = problemOf(error);
        audit(problem.status, { code: problem.code, ...(problem.rule ? { rule: problem.rule } : {}) });
        throw error;
      }
    });
}
