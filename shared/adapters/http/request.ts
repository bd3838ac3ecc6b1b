// Over 300 lines: every rule for reading an API Gateway request (body, query, headers, principal, origin) in one place, as the HTTP adapter maps them.
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { principalFromArn, type Principal } from '../../core/access.ts';
import { ForbiddenError, InvalidArgumentError, quote } from '../../core/errors.ts';
import { parseAddress } from '../../core/ip/address.ts';
import { parseLabelSelector, type LabelSelector } from '../../core/labels.ts';
import { checkDnsLabel, checkOwnerField, checkRangeRef } from '../../core/names.ts';
import type { VersionMatch } from '../../core/use-cases/claims.ts';
import { versionsMatching } from './etag.ts';

/** Largest accepted request body, in bytes. */
export const MAX_BODY_BYTES = 16 * 1024;

/** A field's expected JSON type. */
type FieldType = 'string' | 'boolean' | 'integer' | 'string[]' | 'number[]' | 'object';

export interface FieldSpec {
  readonly type: FieldType;
  readonly required?: boolean;
  /** A JSON null is a value of its own, kept for the route (otherwise null reads as absent). */
  readonly nullable?: boolean;
  /** Fields of a nested object (type 'object'). */
  readonly fields?: Readonly<Record<string, FieldSpec>>;
}

/** Parses the JSON body strictly: size limit, an object, known fields only, each of its type. @throws InvalidArgumentError */
export function parseBody(
  event: APIGatewayProxyEventV2,
  fields: Readonly<Record<string, FieldSpec>>,
  optional = false,
): Record<string, unknown> {
  const raw: unknown = event.body ?? '';
  // readEvent refuses such events already; checked again because this function is also called on its own.
  if (typeof raw !== 'string') throw nonTextBody(raw);
  let text = raw;
  if (event.isBase64Encoded && text) text = Buffer.from(text, 'base64').toString('utf8');
  if (Buffer.byteLength(text, 'utf8') > MAX_BODY_BYTES)
    throw new InvalidArgumentError(`The request body is larger than ${MAX_BODY_BYTES} bytes.`, 'body');
  if (text.trim() === '') {
    if (optional) return {};
    throw new InvalidArgumentError('The request needs a JSON object body.', 'body');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new InvalidArgumentError(`The request body is not valid JSON: ${(error as Error).message}.`, 'body');
  }
  return checkObject(value, fields, '');
}

function checkObject(
  value: unknown,
  fields: Readonly<Record<string, FieldSpec>>,
  path: string,
): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidArgumentError(`${path || 'The request body'} must be a JSON object.`, path || 'body');
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!Object.hasOwn(fields, key))
      throw new InvalidArgumentError(
        `Unknown field ${quote(path + key)}; known fields: ${Object.keys(fields).join(', ')}.`,
        path + key,
      );
  }
  for (const [key, spec] of Object.entries(fields)) {
    const field = path + key;
    const v = record[key];
    if (v === null && spec.nullable) continue;
    if (v === undefined || v === null) {
      if (spec.required) throw new InvalidArgumentError(`Field ${JSON.stringify(field)} is required.`, field);
      delete record[key];
      continue;
    }
    const ok =
      spec.type === 'string'
        ? typeof v === 'string'
        : spec.type === 'boolean'
          ? typeof v === 'boolean'
          : spec.type === 'integer'
            ? typeof v === 'number' && Number.isInteger(v)
            : spec.type === 'string[]'
              ? Array.isArray(v) && v.length <= 256 && v.every((e) => typeof e === 'string')
              : spec.type === 'number[]'
                ? Array.isArray(v) && v.length <= 256 && v.every((e) => typeof e === 'number' && Number.isFinite(e))
                : typeof v === 'object' && !Array.isArray(v);
    if (!ok) throw new InvalidArgumentError(`Field ${JSON.stringify(field)} must be ${describe(spec.type)}.`, field);
    if (spec.type === 'object' && spec.fields) checkObject(v, spec.fields, `${field}.`);
  }
  return record;
}

function describe(type: FieldType): string {
  return {
    string: 'a string',
    boolean: 'true or false',
    integer: 'a whole number',
    'string[]': 'an array of strings',
    'number[]': 'an array of numbers',
    object: 'an object',
  }[type];
}

/** Reads `limit` (1-1000) and `cursor` from the query string. @throws InvalidArgumentError */
export function pageParams(event: APIGatewayProxyEventV2): { limit?: number; cursor?: string } {
  const limitText = queryParam(event, 'limit');
  const cursor = queryParam(event, 'cursor');
  const out: { limit?: number; cursor?: string } = {};
  if (limitText !== undefined) {
    const limit = Number(limitText);
    if (!/^\d+$/.test(limitText) || limit < 1 || limit > 1000)
      throw new InvalidArgumentError('limit must be a whole number from 1 to 1000.', 'limit');
    out.limit = limit;
  }
  if (cursor !== undefined) {
    if (cursor.length === 0 || cursor.length > 2048)
      throw new InvalidArgumentError(
        'cursor is not valid: pass back the nextCursor of a previous page unchanged.',
        'cursor',
      );
    out.cursor = cursor;
  }
  return out;
}

/**
 * The rule each path parameter must pass before it reaches a use case (and so a key): the same rules as when the
 * object is created (shared/core/names.ts), so a name that no object can have is refused with 400 on every method.
 * Typed by name, so a route cannot read a path parameter that has no rule.
 */
const pathRules = {
  pool: (value: string) => checkDnsLabel(value, 'pool'),
  claim: (value: string) => checkDnsLabel(value, 'claim'),
  range: (value: string) => checkRangeRef(value, 'range'),
  uid: (value: string) => checkOwnerField(value, 'uid'),
  address: (value: string) => {
    parseAddress(value, 'address');
    return value;
  },
} as const satisfies Record<string, (value: string) => string>;

/** The path parameters the routes use. */
export type PathParam = keyof typeof pathRules;

/**
 * The path parameters that are names (pool, claim, range, address): a valid one never needs percent-encoding (a
 * range name's or an address's ':' is a plain path character), so a '%' in one is refused, never decoded. Decoding
 * would let `/v1/pools/%74eam-a` reach pool `team-a` while an IAM statement that names `.../pools/team-a/*` (or
 * denies it) does not match the path API Gateway authorized. An owner uid is free Unicode (names.ts) and may need
 * encoding; it names no IAM resource, so it alone is still decoded.
 */
const verbatimParams: ReadonlySet<PathParam> = new Set<PathParam>(['pool', 'claim', 'range', 'address']);

/** Whether a path parameter must arrive exactly as it is named (no '%'). */
export function isVerbatimParam(name: string): boolean {
  return verbatimParams.has(name as PathParam);
}

/** The refusal of a percent-encoded name in the path. */
export function percentInPath(name: string): InvalidArgumentError {
  return new InvalidArgumentError(
    `The ${name} in the path contains '%': names are sent as they are, never percent-encoded.`,
    name,
  );
}

/** A path parameter, checked against its rule (only an owner uid is URL-decoded first). @throws InvalidArgumentError */
export function pathParam(event: APIGatewayProxyEventV2, name: PathParam): string {
  const raw = event.pathParameters?.[name];
  if (raw === undefined || raw === '') throw new InvalidArgumentError(`The path needs a ${name}.`, name);
  if (verbatimParams.has(name)) {
    if (raw.includes('%')) throw percentInPath(name);
    return pathRules[name](raw);
  }
  let value: string;
  try {
    value = decodeURIComponent(raw);
  } catch {
    throw new InvalidArgumentError(`The ${name} in the path is not valid URL encoding.`, name);
  }
  return pathRules[name](value);
}

/** A query parameter, if the query string has it. */
export function queryParam(event: APIGatewayProxyEventV2, name: string): string | undefined {
  const q = event.queryStringParameters;
  return q && Object.hasOwn(q, name) ? q[name] : undefined;
}

/** The `owner` query parameter: an owner uid (names.ts). @throws InvalidArgumentError */
export function ownerQuery(event: APIGatewayProxyEventV2): string | undefined {
  const owner = queryParam(event, 'owner');
  return owner === undefined ? undefined : checkOwnerField(owner, 'owner');
}

/** The `labelSelector` query parameter: `k=v,k2=v2` (labels.ts). @throws InvalidArgumentError */
export function labelSelectorQuery(event: APIGatewayProxyEventV2): LabelSelector | undefined {
  const selector = queryParam(event, 'labelSelector');
  return selector === undefined ? undefined : parseLabelSelector(selector);
}

/** The `range` query parameter: the name of a range (names.ts). @throws InvalidArgumentError */
export function rangeQuery(event: APIGatewayProxyEventV2): string | undefined {
  const range = queryParam(event, 'range');
  return range === undefined ? undefined : checkRangeRef(range, 'range');
}

/** A header, case-insensitively. */
export function header(event: APIGatewayProxyEventV2, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(event.headers ?? {})) if (key.toLowerCase() === wanted) return value;
  return undefined;
}

/** The header that names the caller on the local stack, which has no IAM in front of it (docs/local-stack.md). */
export const PRINCIPAL_HEADER = 'x-ipam-principal';

/**
 * The caller: on a deployed stage, the principal API Gateway's IAM authorizer verified
 * (`requestContext.authorizer.iam.userArn`), normalized (access.ts); on the local stack, the ARN of the
 * `x-ipam-principal` header when there is one. A deployed stage refuses that header (400), so a client can never
 * name itself instead of signing. Undefined when neither says (a local call without the header).
 * @throws InvalidArgumentError for the header outside the local stack, or a header that is not a principal ARN
 */
export function callerOf(event: APIGatewayProxyEventV2, localStack: boolean): Principal | undefined {
  const claimed = header(event, PRINCIPAL_HEADER);
  if (claimed !== undefined) {
    if (!localStack)
      throw new InvalidArgumentError(
        `The ${PRINCIPAL_HEADER} header is honoured only by the local stack; a deployed stage takes the caller from the request's IAM signature.`,
        PRINCIPAL_HEADER,
      );
    return principalFromArn(claimed, PRINCIPAL_HEADER);
  }
  const authorizer = (event.requestContext as { authorizer?: { iam?: { userArn?: unknown } } }).authorizer;
  const arn = authorizer?.iam?.userArn;
  if (typeof arn !== 'string' || arn === '') return undefined;
  try {
    return principalFromArn(arn, 'caller');
  } catch {
    // API Gateway verified it: an ARN of a shape we do not normalize is still the caller, kept as it came.
    return { arn: arn.slice(0, 512) };
  }
}

/** The versions the If-Match header accepts (etag.ts), or undefined without one. @throws InvalidArgumentError */
export function ifMatch(event: APIGatewayProxyEventV2): VersionMatch | undefined {
  const value = header(event, 'if-match');
  return value === undefined ? undefined : versionsMatching(value);
}

/** The header a client names its commit deadline in (POST claims): an RFC 3339 time with a zone. */
export const COMMIT_DEADLINE_HEADER = 'x-ipam-commit-deadline';

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i;

/** The commit deadline as epoch milliseconds, or undefined without the header. @throws InvalidArgumentError */
export function commitDeadline(event: APIGatewayProxyEventV2): number | undefined {
  const value = header(event, COMMIT_DEADLINE_HEADER);
  if (value === undefined) return undefined;
  const ms = RFC3339.test(value.trim()) ? Date.parse(value.trim()) : Number.NaN;
  if (!Number.isFinite(ms))
    throw new InvalidArgumentError(
      `The ${COMMIT_DEADLINE_HEADER} header must be an RFC 3339 time such as 2030-01-01T12:00:00.000Z, not ${quote(value)}.`,
      COMMIT_DEADLINE_HEADER,
    );
  return ms;
}

function nonTextBody(body: unknown): InvalidArgumentError {
  const kind = Array.isArray(body)
    ? 'an array'
    : body === null
      ? 'null'
      : typeof body === 'object'
        ? 'an object'
        : `a ${typeof body}`;
  return new InvalidArgumentError(`The request body must arrive as JSON text, not as ${kind}.`, 'body');
}

/** A record of strings from an event part, with no prototype (so `constructor` or `__proto__` are plain keys). */
function stringRecord(value: unknown, part: string): Record<string, string> | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value))
    throw new InvalidArgumentError(`The request's ${part} must be a map of strings.`, part);
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [key, v] of Object.entries(value)) {
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string')
      throw new InvalidArgumentError(
        `The request's ${part} must be a map of strings; ${JSON.stringify(key.slice(0, 100))} is not a string.`,
        part,
      );
    out[key] = v;
  }
  return out;
}

const optionalString = (value: unknown, part: string): string | undefined => {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new InvalidArgumentError(`The request's ${part} must be a string.`, part);
  return value;
};

/**
 * Reads an HTTP API (payload v2) event defensively: API Gateway always sends strings where the type says so, but
 * the handler is also invoked directly (tests, `npm run invoke`, a misconfigured integration), so every part it
 * reads is checked here once, and a shape it cannot read is a 400, never a TypeError and a 500. Maps come back
 * without a prototype.
 * @throws InvalidArgumentError
 */
export function readEvent(raw: unknown): APIGatewayProxyEventV2 {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new InvalidArgumentError('The request is not an HTTP API event.', 'event');
  const event = raw as Record<string, unknown>;
  if (event.body !== undefined && event.body !== null && typeof event.body !== 'string') throw nonTextBody(event.body);
  const context =
    typeof event.requestContext === 'object' && event.requestContext !== null
      ? (event.requestContext as Record<string, unknown>)
      : {};
  const http =
    typeof context.http === 'object' && context.http !== null ? (context.http as Record<string, unknown>) : {};
  const body = optionalString(event.body, 'body');
  const headers = stringRecord(event.headers, 'headers') ?? (Object.create(null) as Record<string, string>);
  const query = stringRecord(event.queryStringParameters, 'query parameters');
  const path = stringRecord(event.pathParameters, 'path parameters');
  const routeKey = optionalString(event.routeKey, 'routeKey');
  return {
    ...(raw as APIGatewayProxyEventV2),
    routeKey: routeKey ?? '$default',
    rawPath: optionalString(event.rawPath, 'rawPath') ?? '',
    rawQueryString: optionalString(event.rawQueryString, 'rawQueryString') ?? '',
    headers,
    isBase64Encoded: event.isBase64Encoded === true,
    requestContext: {
      ...(context as unknown as APIGatewayProxyEventV2['requestContext']),
      http: {
        ...(http as unknown as APIGatewayProxyEventV2['requestContext']['http']),
        method: optionalString(http.method, 'method') ?? '',
      },
    },
    ...(query ? { queryStringParameters: query } : { queryStringParameters: undefined }),
    ...(path ? { pathParameters: path } : { pathParameters: undefined }),
    ...(body !== undefined ? { body } : { body: undefined }),
  };
}

/**
 * Refuses a write that a web page of another site could have sent: a page may send a "simple" cross-origin POST (a
 * text/plain or form body, no CORS preflight) to a developer's local stack on 127.0.0.1, which has no IAM. Browsers
 * say where such a request comes from: Fetch Metadata (`Sec-Fetch-Site`), or in browsers without it, `Origin` (sent
 * on every cross-origin POST); either naming another origin refuses the write. Other clients (the CLI, curl, SDKs) send neither. Reads are left
 * alone: a page cannot read a cross-origin answer.
 * @throws ForbiddenError
 */
export function refuseForgeableWrite(event: APIGatewayProxyEventV2): void {
  const method = event.requestContext.http.method;
  if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS') return;
  const header = (name: string) => Object.entries(event.headers ?? {}).find(([key]) => key.toLowerCase() === name)?.[1];
  const site = header('sec-fetch-site');
  if (site !== undefined) {
    if (site === 'same-origin' || site === 'none') return;
    throw new ForbiddenError(
      'cross-site-request',
      `A write sent by a web page of another origin (Sec-Fetch-Site: ${quote(site)}) is refused.`,
    );
  }
  // A browser without Fetch Metadata: its Origin against the host it asked (the local stack's console server forwards
  // it as x-forwarded-host; a page cannot set that header without a preflight).
  const origin = header('origin');
  // An opaque origin ('null') or one that is no URL has no host: refused like another origin's.
  const from = origin === undefined ? undefined : hostOf(origin);
  if (origin !== undefined && (from === undefined || from !== (header('x-forwarded-host') ?? header('host')))) {
    throw new ForbiddenError(
      'cross-site-request',
      `A write sent by a web page of another origin (Origin: ${quote(origin)}) is refused.`,
    );
  }
}

/** The host (and port) of an origin, or undefined when it is not a URL. */
function hostOf(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined;
  }
}
