import { randomInt } from 'node:crypto';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { tableSnapshot } from '../support/items.ts';
import { routes } from '../../shared/adapters/http/api.ts';
import { statusOf } from '../../shared/adapters/http/problem.ts';
import type { FieldSpec } from '../../shared/adapters/http/request.ts';
import { bodyFields } from '../../shared/adapters/http/routes.ts';
import { checkLabels } from '../../shared/core/labels.ts';
import { testApi, type TestApi } from '../support/api.ts';

/*
 * A seeded fuzz test of the real HTTP handler (the same middy pipeline functions/http.ts exports, composed as every
 * int test composes it) over DynamoDB Local, with generated API Gateway v2 events and no server.
 *
 * Every route of the handler's route table is fuzzed. Requests to GET routes are anything at all (they may be
 * valid); requests to every other route carry at least one ingredient that is certainly invalid (a poison: a path
 * name no object can have, a body that is not a JSON object, a field of the wrong type, an invalid CIDR, an If-Match
 * that matches nothing...), so no fuzz case may legitimately change the table. Each case asserts:
 *   - the answer is never 5xx, and a non-GET request is always refused (4xx);
 *   - every 4xx is an application/problem+json document with a known code, its status, and a sentence;
 *   - the table holds exactly the items it held before the case (a full scan, compared after every case).
 *
 *   FUZZ_SEED=<seed> replays a run (the seed is printed at the start); FUZZ_RUNS=<n> sets the number of cases
 *   (default 300, at least 200 so every route is reached; `npm run fuzz` runs 5000).
 */

const SEED = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : randomInt(2 ** 31);
const RUNS = process.env.FUZZ_RUNS !== undefined ? Number(process.env.FUZZ_RUNS) : 300;
if (!Number.isInteger(SEED) || !Number.isInteger(RUNS) || RUNS < 1)
  throw new Error(
    `FUZZ_SEED and FUZZ_RUNS must be whole numbers (got ${process.env.FUZZ_SEED}, ${process.env.FUZZ_RUNS})`,
  );
// The run checks that every route was reached: fewer cases could miss one by chance, so they are refused, not
// allowed to skip that check.
if (RUNS < 200) throw new Error(`FUZZ_RUNS must be at least 200, so that every route is reached (got ${RUNS})`);

// ---------------------------------------------------------------------------------------------------------------
// The route table, as the handler serves it.

interface RouteShape {
  readonly key: string;
  readonly method: string;
  readonly template: string;
  readonly params: readonly string[];
  readonly fields?: Readonly<Record<string, FieldSpec>>;
}

const routeShapes: readonly RouteShape[] = Object.keys(routes).map((key) => {
  const [method, template] = key.split(' ') as [string, string];
  const params = [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]!);
  const fields = (bodyFields as Readonly<Record<string, Readonly<Record<string, FieldSpec>>>>)[key];
  return { key, method, template, params, ...(fields ? { fields } : {}) };
});

// ---------------------------------------------------------------------------------------------------------------
// Building blocks.

const loneSurrogates = ['\ud800', '\udfff', 'a\ud83d', '\ude00b'];
const huge = (min: number, max: number) =>
  fc.integer({ min, max }).chain((n) => fc.constantFrom('a', 'Z', '9', '-', 'é', '😀').map((c) => c.repeat(n)));
const unicode = fc.string({ unit: 'binary', maxLength: 40 });
const weirdString = fc.oneof(
  unicode,
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.constantFrom(
    '',
    ' ',
    '__proto__',
    'constructor',
    'toString',
    'hasOwnProperty',
    'null',
    'undefined',
    'NaN',
    '%',
    '%zz',
    '%2F',
    '../..',
    '\u0000',
    'a\nb',
    ...loneSurrogates,
  ),
  huge(250, 5000),
);

/** Strings that are certainly not valid addresses. */
const badAddress = fc.oneof(
  fc.constantFrom(
    '10.77.0.256',
    '1.2.3',
    '1.2.3.4.5',
    '10.077.0.1',
    '::g',
    '1:2:3:4:5:6:7:8:9',
    'fe80::1%eth0',
    '',
    ' 10.77.0.1',
    '١٠.٠.٠.١',
    '0x0a.0.0.1',
    '::ffff:1.2.3',
  ),
  huge(65, 3000),
  fc.ipV4().map((a) => `${a}.1`),
  fc.ipV6().map((a) => `${a}:::`),
);
/** Strings that are certainly not canonical CIDRs. */
const badCidr = fc.oneof(
  fc.constantFrom(
    '10.77.0.1/24',
    '10.0.0.0/33',
    '10.0.0.0',
    '::/129',
    'x/8',
    '10.0.0.0/08',
    '10.0.0.0/-1',
    '/24',
    'FD00::/8',
    '10.0.0.0/24/24',
    '',
  ),
  fc.ipV4().map((a) => `${a}/`),
  badAddress.map((a) => `${a}/24`),
  huge(100, 3000),
);
const maybeValidAddress = fc.oneof(
  fc.constantFrom('10.77.0.5', '10.77.0.10', 'fd00:77::5', '10.78.0.1'),
  fc.ipV4(),
  fc.ipV6(),
  badAddress,
);
const maybeValidCidr = fc.oneof(
  fc.constantFrom('10.77.0.0/24', '10.77.0.0/28', 'fd00:77::/120', '10.99.0.0/24'),
  badCidr,
);

/** Path parameter values: names of the fixture, names that may exist, and strings no object can have. */
const validish: Record<string, fc.Arbitrary<string>> = {
  pool: fc.constantFrom('fz', 'fz2', 'nope'),
  claim: fc.constantFrom('held', 'leased', 'ghost'),
  range: fc.constantFrom('10.77.0.0-24', 'fd00:77::-120', 'six', 'nope'),
  address: maybeValidAddress,
  uid: fc.constantFrom('owner-1', 'owner-2', 'nobody'),
};
/** Path values that break the rule of every path parameter (names.ts): too long for any, or not well-formed Unicode. */
const poisonPathValue = fc.oneof(huge(254, 5000), fc.constantFrom(...loneSurrogates), fc.constantFrom(''));

/** A value of the wrong JSON type for a field (null is "absent" to the parser, or a value of a nullable field, so it is not among them). */
function wrongType(spec: FieldSpec): fc.Arbitrary<unknown> {
  const any = fc.oneof(
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    weirdString,
    fc.array(fc.integer(), { maxLength: 3 }),
    fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
  );
  return any.filter((v) => {
    switch (spec.type) {
      case 'string':
        return typeof v !== 'string';
      case 'boolean':
        return typeof v !== 'boolean';
      case 'integer':
        return !(typeof v === 'number' && Number.isInteger(v));
      case 'string[]':
        return !(Array.isArray(v) && v.every((e) => typeof e === 'string'));
      case 'number[]':
        return !(Array.isArray(v) && v.every((e) => typeof e === 'number' && Number.isFinite(e)));
      case 'object':
        return typeof v !== 'object' || Array.isArray(v);
    }
  });
}

/** Whether labels.ts accepts a labels object. */
function labelsAccepted(labels: Record<string, unknown>): boolean {
  try {
    checkLabels(labels);
    return true;
  } catch {
    return false;
  }
}

/** Values of the right JSON type that the field's own rule refuses: certainly invalid. */
const badValues: Record<string, fc.Arbitrary<unknown>> = {
  // Invalid as a pool, claim and range name alike ('Web' and 'a_b' are valid range names, so not here).
  name: fc.oneof(fc.constantFrom('-a', 'a-', 'a b', '', 'ü', 'a/b'), huge(101, 3000)),
  generateName: fc.oneof(fc.constantFrom('-web', 'Web', 'web_', '', '--'), huge(64, 3000)),
  cidr: badCidr,
  exclude: fc.array(badAddress, { minLength: 1, maxLength: 3 }),
  addresses: fc.array(badAddress, { minLength: 1, maxLength: 2 }),
  ipFamilies: fc.constantFrom(['IPv5'], ['IPv4', 'IPv4'], ['ipv4'], ['']),
  ipFamilyPolicy: fc.constantFrom('DualStack', 'singlestack', '', 'SingleStack '),
  ttlSeconds: fc.oneof(fc.constantFrom(0, -1, 365 * 24 * 3600 + 1, Number.MAX_SAFE_INTEGER), fc.integer({ max: 0 })),
  count: fc.oneof(fc.constantFrom(0, -1, 33, Number.MAX_SAFE_INTEGER), fc.integer({ max: 0 }), fc.integer({ min: 33 })),
  owner: fc.oneof(
    fc.constant({ kind: 'Pod', name: 'n' }),
    fc.record({
      kind: fc.constant('Pod'),
      name: fc.constant('n'),
      uid: fc.oneof(fc.constant(''), huge(254, 3000), fc.constantFrom(...loneSurrogates)),
    }),
    fc.constant({ kind: '', name: 'n', uid: 'u' }),
  ),
  labels: fc.oneof(
    fc.constantFrom(
      { '-a': 'v' },
      { 'a/b/c': 'v' },
      { '/a': 'v' },
      { a: 'v-' },
      { a: 7 },
      { a: null },
      { a: ['v'] },
      { a: 'f'.repeat(129) },
      { ['n'.repeat(64)]: 'v' },
    ),
    fc.constant(Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v']))),
    fc.dictionary(
      weirdString.filter((key) => !labelsAccepted({ [key]: 'v' })),
      fc.constant('v'),
      { minKeys: 1, maxKeys: 3 },
    ),
  ),
};
/** Values that may or may not be valid. */
const anyValue: Record<string, fc.Arbitrary<unknown>> = {
  name: fc.oneof(fc.constantFrom('held', 'new-one', 'fz', 'six'), weirdString),
  generateName: fc.oneof(fc.constantFrom('web', 'web-'), weirdString),
  cidr: maybeValidCidr,
  exclude: fc.array(fc.oneof(maybeValidAddress, maybeValidCidr), { maxLength: 3 }),
  addresses: fc.array(maybeValidAddress, { maxLength: 3 }),
  ipFamilies: fc.array(fc.constantFrom('IPv4', 'IPv6', 'IPv5'), { maxLength: 3 }),
  ipFamilyPolicy: fc.constantFrom('SingleStack', 'PreferDualStack', 'RequireDualStack', 'Other'),
  ttlSeconds: fc.oneof(fc.integer({ min: -10, max: 100 }), fc.double({ noNaN: true, noDefaultInfinity: true })),
  count: fc.oneof(fc.integer({ min: -2, max: 40 }), fc.double({ noNaN: true, noDefaultInfinity: true })),
  legacy: fc.boolean(),
  labels: fc.oneof(
    fc.dictionary(
      fc.constantFrom('app', 'cni.ipam/node', 'x/y', 'Tier_1'),
      fc.constantFrom('', 'web', 'f'.repeat(128)),
      { maxKeys: 4 },
    ),
    fc.dictionary(weirdString, weirdString, { maxKeys: 3 }),
  ),
  owner: fc.oneof(
    fc.record({ kind: fc.constant('Pod'), name: fc.constant('p'), uid: fc.constantFrom('owner-1', 'owner-2') }),
    fc.record({ kind: weirdString, name: weirdString, uid: weirdString }),
  ),
};

/** Sets a key on a plain object as an own enumerable property, even `__proto__` (an assignment would set the prototype). */
function withKey(target: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  return target;
}

/** A body object from a route's fields: each field absent, plausible, or of the wrong type. */
function bodyObject(fields: Readonly<Record<string, FieldSpec>>): fc.Arbitrary<Record<string, unknown>> {
  const entries = Object.entries(fields).map(([key, spec]) =>
    fc
      .oneof(
        { weight: 2, arbitrary: fc.constant(undefined) },
        { weight: 4, arbitrary: anyValue[key] ?? weirdString },
        { weight: 1, arbitrary: wrongType(spec) },
        { weight: 1, arbitrary: fc.constant(null) },
      )
      .map((value) => [key, value] as const),
  );
  return fc.tuple(...entries).map((pairs) => {
    const body: Record<string, unknown> = {};
    for (const [key, value] of pairs) if (value !== undefined) withKey(body, key, value);
    return body;
  });
}

/** A body change that makes any body of the route certainly invalid. */
function bodyPoison(
  fields: Readonly<Record<string, FieldSpec>>,
): fc.Arbitrary<(body: Record<string, unknown>) => unknown> {
  const keys = Object.keys(fields);
  const required = keys.filter((k) => fields[k]!.required);
  const poisons: fc.Arbitrary<(body: Record<string, unknown>) => unknown>[] = [
    // An unknown field, including the names that would reach a prototype.
    fc
      .oneof(fc.constantFrom('__proto__', 'constructor', 'toString', 'nmae', 'owner.uid', ''), huge(100, 5000))
      .map((key) => (body) => withKey({ ...body }, key, { polluted: true })),
    // A field of the wrong type.
    fc
      .constantFrom(...keys)
      .chain((key) =>
        wrongType(fields[key]!).map((value) => (body: Record<string, unknown>) => withKey({ ...body }, key, value)),
      ),
    // A value of the right type that the field's rule refuses.
    fc
      .constantFrom(...keys.filter((k) => badValues[k]))
      .chain((key) =>
        badValues[key]!.map((value) => (body: Record<string, unknown>) => withKey({ ...body }, key, value)),
      ),
  ];
  if (required.length)
    poisons.push(
      fc.constantFrom(...required).map((key) => (body) => {
        const copy = { ...body };
        delete copy[key];
        return copy;
      }),
    );
  if (keys.includes('name') && keys.includes('generateName')) {
    // A claim names exactly one of name and generateName.
    poisons.push(fc.constant((body) => withKey(withKey({ ...body }, 'name', 'both-a'), 'generateName', 'both')));
  }
  return fc.oneof(...poisons);
}

/** Raw bodies: not text at all, text that is not JSON, JSON that is not an object, or too large. */
const rawBody = fc.oneof(
  fc
    .oneof(
      fc.integer(),
      fc.boolean(),
      fc.constant(0),
      fc.constant(false),
      fc.array(fc.integer(), { maxLength: 2 }),
      fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { maxKeys: 2 }),
    )
    .map((body) => ({ body, text: false })),
  fc
    .oneof(
      // Not JSON, and not empty or blank: a renew takes an empty body (seed 28299474 sent one as the poison).
      fc.string({ maxLength: 30 }).filter((t) => {
        if (t.trim() === '') return false;
        try {
          JSON.parse(t);
          return false;
        } catch {
          return true;
        }
      }),
      fc.constantFrom('{', '{"name":', '[1,', '{"a":1}}', '\u0000', '{"name":"x",}'),
    )
    .map((body) => ({ body: body as unknown, text: true })),
  fc
    .oneof(
      fc
        .jsonValue({ maxDepth: 2 })
        .filter((v) => typeof v !== 'object' || v === null || Array.isArray(v))
        .map((v) => JSON.stringify(v)),
      fc.constantFrom('null', '[]', '"owner"', '0', 'false', '1e400'),
    )
    .map((body) => ({ body: body as unknown, text: true })),
  fc
    .integer({ min: 16 * 1024 + 1, max: 40_000 })
    .map((n) => ({ body: `{"name":"${'a'.repeat(n)}"}` as unknown, text: true })),
);

/**
 * Genuine cursors, signed by the service for one listing each (pools, claims, claims of an owner, addresses, a range's
 * addresses), filled in by beforeAll: sent to every route, they are cursors of other routes, pools, filters or ranges
 * (issue 25: a 400, never a 500).
 */
const genuineCursors: string[] = [];
const genuineCursor = fc.nat(1000).map((i) => genuineCursors[i % Math.max(1, genuineCursors.length)] ?? 'none.yet');
const queryValue = fc.oneof(
  fc.constantFrom('0', '1', '1000', '1001', '-1', '1.5', '1e2', ' 5', '', 'abc', 'eyJzIjowLCJrIjoiYSJ9.forged', 'a.b'),
  weirdString,
  genuineCursor,
);
const queryParams = fc.dictionary(
  fc.constantFrom('limit', 'cursor', 'owner', 'range', 'labelSelector', '__proto__', 'constructor', 'x'),
  fc.oneof(queryValue, fc.constantFrom('app=web', 'app!=web', 'a=b,c=d', 'a=,b==c', 'a in (b)')),
  { maxKeys: 4 },
);
const ifMatchValue = fc.oneof(
  fc.constantFrom(
    '"1"',
    '*',
    'W/"1"',
    '"0x1"',
    '"1.0"',
    '"01"',
    '"+1"',
    '"0o1"',
    '1',
    '"1',
    '"1" "2"',
    '',
    ' , ',
    '"1", *',
    '"€"',
    'W/ "1"',
    '"2", "1"',
  ),
  weirdString,
);
/** If-Match values that can match no version of anything: malformed (400) or tags that name no version (412). */
const poisonIfMatch = fc.constantFrom(
  '"0x1"',
  '"1.0"',
  '"01"',
  '"+1"',
  '"0o1"',
  'W/"1"',
  'W/"2"',
  '"0"',
  '1',
  '"1',
  '"1" "2"',
  '',
  ' , ',
  '"1", *',
  '"€"',
  '"-1"',
);
const headers = fc.record(
  {
    accept: fc.constantFrom(
      'application/cbor',
      'application/json',
      '*/*;q=0.5, application/cbor;q=abc',
      'text/html',
      '',
    ),
    'content-type': fc.constantFrom('application/json', 'text/plain', ''),
    'if-match': ifMatchValue,
    'x-weird': weirdString,
  },
  { requiredKeys: [] },
);

// ---------------------------------------------------------------------------------------------------------------
// Events.

interface FuzzCase {
  readonly route: string;
  readonly mutating: boolean;
  readonly event: unknown;
  /** The status the case must get, when its generator makes it certain (a percent-encoded pool name: 400). */
  readonly status?: number;
}

/** Every byte percent-encoded, as a client encoding a valid name would never need to (`c1` -> `%63%31`). */
const percentEncoded = (value: string) =>
  [...Buffer.from(value, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');

const encode = (value: string) => {
  try {
    return encodeURIComponent(value);
  } catch {
    return value.replaceAll('/', '%2F'); // Lone surrogates cannot be percent-encoded; sent as they are, without a '/'.
  }
};

function eventFor(route: RouteShape): fc.Arbitrary<FuzzCase> {
  const mutating = route.method !== 'GET';
  const params = fc.tuple(
    ...route.params.map((p) => fc.oneof({ weight: 3, arbitrary: validish[p]! }, { weight: 1, arbitrary: weirdString })),
  );
  // What makes a mutating request certainly invalid: a path name (always available), a body, or an If-Match.
  const poisonKinds: string[] = route.params.length ? ['path'] : [];
  if (mutating && poisonKinds.length === 0 && !route.fields)
    throw new Error(`${route.key} changes state but has nothing to poison`);
  if (route.fields) poisonKinds.push('body', 'rawBody');
  if (route.key === 'DELETE /v1/pools/{pool}/claims/{claim}') poisonKinds.push('ifMatch');
  return fc
    .record({
      values: params,
      style: fc.constantFrom(
        'rawPath',
        'routeKey',
        'rawPathEncodedBadly',
        'percentEncoded',
        'percentEncodedDecodedParams',
      ),
      body: route.fields ? bodyObject(route.fields) : fc.constant(undefined),
      raw: fc.option(rawBody, { freq: 4 }),
      query: fc.option(queryParams, { freq: 2 }),
      headers,
      base64: fc.constantFrom('plain', 'plain', 'encoded', 'flagOnly'),
      poisonKind: poisonKinds.length ? fc.constantFrom(...poisonKinds) : fc.constant('none'),
      poisonParam: fc.nat(Math.max(0, route.params.length - 1)),
      poisonValue: poisonPathValue,
      poisonBody: route.fields ? bodyPoison(route.fields) : fc.constant((b: Record<string, unknown>) => b),
      poisonRaw: rawBody,
      poisonIfMatch,
      trailingSlash: fc.boolean(),
    })
    .map((g): FuzzCase => {
      const values = [...g.values];
      let body: unknown = g.raw ? g.raw.body : g.body === undefined ? undefined : JSON.stringify(g.body);
      const hdrs: Record<string, unknown> = { ...g.headers };
      if (mutating) {
        if (g.poisonKind === 'path') values[g.poisonParam] = g.poisonValue;
        if (g.poisonKind === 'body') body = JSON.stringify(g.poisonBody((g.body ?? {}) as Record<string, unknown>));
        if (g.poisonKind === 'rawBody') body = g.poisonRaw.body;
        if (g.poisonKind === 'ifMatch') hdrs['if-match'] = g.poisonIfMatch;
      }
      let i = 0;
      const rawPath =
        route.template.replace(/\{[^}]+\}/g, () => {
          const value = values[i++]!;
          if (g.style === 'percentEncoded' || g.style === 'percentEncodedDecodedParams') return percentEncoded(value);
          return g.style === 'rawPathEncodedBadly' ? `${encode(value)}%zz` : encode(value);
        }) + (g.trailingSlash ? '/' : '');
      const pathParameters = Object.fromEntries(route.params.map((p, j) => [p, values[j]!]));
      // A text body may come base64-encoded (as binary bodies do), or flagged as base64 without being so; not the
      // latter when the body is the poison: decoding it as base64 could leave an empty, valid body (renew).
      const bodyPoisoned = mutating && (g.poisonKind === 'body' || g.poisonKind === 'rawBody');
      const mode = bodyPoisoned && g.base64 === 'flagOnly' ? 'plain' : g.base64;
      const base64 = typeof body === 'string' && mode !== 'plain';
      if (typeof body === 'string' && mode === 'encoded') body = Buffer.from(body, 'utf8').toString('base64');
      const event: Record<string, unknown> = {
        version: '2.0',
        // The decoded-parameters style is API Gateway decoding the path parameters it hands over, the raw path still encoded.
        routeKey: g.style === 'routeKey' || g.style === 'percentEncodedDecodedParams' ? route.key : '$default',
        rawPath,
        rawQueryString: '',
        headers: hdrs,
        requestContext: {
          http: { method: route.method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'fuzz' },
          routeKey: '$default',
          stage: '$default',
        },
        isBase64Encoded: base64,
        ...(g.style === 'routeKey' || g.style === 'percentEncodedDecodedParams' ? { pathParameters } : {}),
        ...(g.query ? { queryStringParameters: g.query } : {}),
        ...(body !== undefined ? { body } : {}),
      };
      // A pool's name is never served decoded: percent-encoded, it is refused whatever else the request holds.
      const encodedPool =
        (g.style === 'percentEncoded' || g.style === 'percentEncodedDecodedParams') &&
        route.params[0] === 'pool' &&
        values.every((v) => v !== ''); // an empty segment matches no route (404)
      return { route: route.key, mutating, event, ...(encodedPool ? { status: 400 } : {}) };
    });
}

/** Events of shapes API Gateway never sends: the handler must still answer each with a problem document. */
const strangeEvent: fc.Arbitrary<FuzzCase> = fc
  .oneof(
    fc.constantFrom(
      null,
      undefined,
      0,
      'GET /v1/pools',
      [],
      {},
      { routeKey: 'DELETE /v1/pools/{pool}' },
      { rawPath: '/v1/pools' },
    ),
    fc.record(
      {
        routeKey: fc.constantFrom('DELETE /v1/pools/{pool}', 'POST /v1/pools', '$default', 7),
        pathParameters: fc.oneof(fc.constant(null), fc.constant({ pool: 3 }), fc.constant('fz')),
        headers: fc.oneof(fc.constant(null), fc.constant('x'), fc.constant({ 'if-match': ['"1"'] })),
        body: fc.oneof(fc.constant(undefined), fc.integer(), fc.constant({ name: 'x' })),
        requestContext: fc.oneof(fc.constant(null), fc.constant({ http: null }), fc.constant({ http: { method: 5 } })),
      },
      { requiredKeys: [] },
    ),
  )
  .map((event) => ({ route: 'strange event', mutating: true, event }));

// ---------------------------------------------------------------------------------------------------------------

describe('Fuzz: the HTTP handler over generated API Gateway events', () => {
  let api: TestApi;
  let fixture: string[];

  beforeAll(async () => {
    // A fixture the valid parts of requests can hit: pools, a legacy and an IPv6 range, claims with and without TTL.
    api = await testApi();
    const setup: [string, string, unknown][] = [
      ['POST', '/v1/pools', { name: 'fz', exclude: ['10.77.0.10'] }],
      ['POST', '/v1/pools', { name: 'fz2' }],
      ['POST', '/v1/pools/fz/ranges', { cidr: '10.77.0.0/24', legacy: true }],
      ['POST', '/v1/pools/fz/ranges', { cidr: 'fd00:77::/120', name: 'six' }],
      [
        'POST',
        '/v1/pools/fz/claims',
        { name: 'held', owner: { kind: 'Pod', name: 'p', uid: 'owner-1' }, addresses: ['10.77.0.5'] },
      ],
      [
        'POST',
        '/v1/pools/fz/claims',
        {
          name: 'leased',
          owner: { kind: 'Pod', name: 'p', uid: 'owner-2' },
          ipFamilyPolicy: 'PreferDualStack',
          ttlSeconds: 86_400,
        },
      ],
    ];
    for (const [method, path, body] of setup) expect((await api.call(method, path, body)).status).toBe(201);
    for (const listing of [
      '/v1/pools?limit=1',
      '/v1/pools/fz/claims?limit=1',
      '/v1/pools/fz/claims?limit=1&owner=owner-2',
      '/v1/pools/fz/addresses?limit=1',
      '/v1/pools/fz/addresses?limit=1&range=six',
    ]) {
      const page = await api.call('GET', listing);
      if (typeof page.body.nextCursor === 'string') genuineCursors.push(page.body.nextCursor);
    }
    expect(genuineCursors.length).toBeGreaterThanOrEqual(3);
    fixture = await tableSnapshot(api.container.table);
  });

  it(
    `answers ${RUNS} generated requests over every route without a 5xx, refusing each invalid one and changing nothing`,
    { timeout: Math.max(60_000, RUNS * 200) },
    async () => {
      console.log(
        `fuzz: seed ${SEED}, ${RUNS} cases over ${routeShapes.length} routes; replay with FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS}`,
      );
      const started = Date.now();
      const seen = new Map<string, number>();
      const statuses = new Map<number, number>();
      let handlerMs = 0;
      let scanMs = 0;
      const arbitrary = fc.oneof(
        { weight: 20, arbitrary: fc.constantFrom(...routeShapes).chain(eventFor) },
        { weight: 1, arbitrary: strangeEvent },
      );

      await fc.assert(
        fc.asyncProperty(arbitrary, async ({ route, mutating, event, status }) => {
          const t0 = performance.now();
          const response = await api.invoke(event);
          handlerMs += performance.now() - t0;
          seen.set(route, (seen.get(route) ?? 0) + 1);
          statuses.set(response.statusCode ?? 0, (statuses.get(response.statusCode ?? 0) ?? 0) + 1);

          expect(response.statusCode, 'no 5xx').toBeLessThan(500);
          if (status !== undefined) expect(response.statusCode, 'a percent-encoded pool name is refused').toBe(status);
          if (mutating) expect(response.statusCode, 'a poisoned request is refused').toBeGreaterThanOrEqual(400);
          if (response.statusCode! >= 400) {
            expect(response.headers?.['content-type']).toBe('application/problem+json');
            const problem = JSON.parse(response.body ?? '') as {
              type: string;
              title: string;
              status: number;
              detail: string;
              code: keyof typeof statusOf;
            };
            expect(Object.keys(statusOf)).toContain(problem.code);
            expect(problem).toMatchObject({
              status: response.statusCode,
              type: `https://ipam.dev/problems/${problem.code}`,
              title: expect.any(String),
            });
            expect(statusOf[problem.code]).toBe(response.statusCode);
            expect(problem.detail).toMatch(/^\S[\s\S]{8,}\.$/);
            expect(problem.detail.length).toBeLessThan(600);
          }
          const t1 = performance.now();
          expect(await tableSnapshot(api.container.table)).toEqual(fixture);
          scanMs += performance.now() - t1;
        }),
        // No shrinking: a case that changed the table would make every shrunk case fail too; the seed replays it.
        { seed: SEED, numRuns: RUNS, endOnFailure: true },
      );

      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      console.log(
        `fuzz: ${RUNS} cases in ${seconds} s (handler ${(handlerMs / 1000).toFixed(1)} s, scans ${(scanMs / 1000).toFixed(1)} s); statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`,
      );
      // Every route was reached (with a few hundred cases, each of the ~20 routes gets several).
      expect([...seen.keys()].filter((r) => r !== 'strange event').sort()).toEqual(
        routeShapes.map((r) => r.key).sort(),
      );
    },
  );
});
