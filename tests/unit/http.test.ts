import { DynamoDBClient, ProvisionedThroughputExceededException, QueryCommand } from '@aws-sdk/client-dynamodb';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it } from 'vitest';
import { buildContainer } from '../../shared/adapters/composition.ts';
import { CursorCodec, isListPosition, isSingleScopePosition } from '../../shared/adapters/dynamodb/cursor.ts';
import { createHttpHandler } from '../../shared/adapters/http/api.ts';
import { problemOf, problemResponse, statusOf } from '../../shared/adapters/http/problem.ts';
import { etagOf, parseIfMatch, versionsMatching } from '../../shared/adapters/http/etag.ts';
import {
  MAX_BODY_BYTES,
  pageParams,
  parseBody,
  pathParam,
  readEvent,
  refuseForgeableWrite,
  type FieldSpec,
} from '../../shared/adapters/http/request.ts';
import { loadConfig, parseFeatureGates } from '../../shared/config.ts';
import {
  AlreadyAllocatedError,
  ConflictError,
  ErrorCode,
  InvalidArgumentError,
  IpamError,
  MismatchedNetworkError,
  NotFoundError,
  NotInRangeError,
  NotReadyError,
  PoolNotEmptyError,
  PoolTerminatingError,
  TooManyConsumersError,
  ClaimInUseError,
  PreconditionFailedError,
  RangeFullError,
} from '../../shared/core/errors.ts';

/** An API Gateway HTTP API (payload v2) event. */
function httpEvent(
  method: string,
  path: string,
  options: { body?: string; query?: Record<string, string>; base64?: boolean } = {},
): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: path,
    rawQueryString: new URLSearchParams(options.query ?? {}).toString(),
    headers: { 'content-type': 'application/json' },
    ...(options.query ? { queryStringParameters: options.query } : {}),
    requestContext: {
      accountId: '000000000000',
      apiId: 'unit',
      domainName: 'localhost',
      domainPrefix: 'localhost',
      requestId: 'unit',
      routeKey: '$default',
      stage: '$default',
      time: '',
      timeEpoch: 0,
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'vitest' },
    },
    isBase64Encoded: options.base64 ?? false,
    ...(options.body === undefined ? {} : { body: options.body }),
  };
}

const withBody = (body: string | undefined, base64 = false) =>
  httpEvent('POST', '/v1/pools/pool-a/claims', { ...(body === undefined ? {} : { body }), base64 });
const withQuery = (query: Record<string, string>) => httpEvent('GET', '/v1/pools', { query });

/** The claim body's fields, as the route declares them. */
const claimFields: Record<string, FieldSpec> = {
  name: { type: 'string' },
  owner: {
    type: 'object',
    required: true,
    fields: {
      kind: { type: 'string', required: true },
      name: { type: 'string', required: true },
      uid: { type: 'string', required: true },
    },
  },
  ipFamilies: { type: 'string[]' },
  ttlSeconds: { type: 'integer' },
  legacy: { type: 'boolean' },
};
const OWNER = { kind: 'Pod', name: 'web-0', uid: 'owner-1' };

describe('Function: problemOf', () => {
  it('maps every error code to the status of the HTTP contract', () => {
    // Act
    const statuses = Object.fromEntries(Object.values(ErrorCode).map((code) => [code, statusOf[code]]));

    // Assess
    expect(statuses).toEqual({
      InvalidArgument: 400,
      NotFound: 404,
      AlreadyAllocated: 409,
      AddressReleasing: 409,
      Conflict: 409,
      PoolNotEmpty: 409,
      PoolTerminating: 409,
      RangeFull: 409,
      NotInRange: 422,
      MismatchedNetwork: 422,
      PreconditionFailed: 412,
      Forbidden: 403,
      NotReady: 503,
      DeadlineExceeded: 408,
      Internal: 500,
      TooManyConsumers: 409,
      ClaimInUse: 409,
      SourceMismatch: 409,
      ClaimHasChildren: 409,
      OwnerGone: 409,
      ClaimHasConsumers: 409,
      MethodNotAllowed: 405,
    });
  });

  it.each<[string, IpamError, number]>([
    ['InvalidArgumentError', new InvalidArgumentError('limit must be a whole number from 1 to 1000.', 'limit'), 400],
    ['NotFoundError', new NotFoundError('pool', 'pool-a'), 404],
    ['AlreadyAllocatedError', new AlreadyAllocatedError('10.0.0.10', { claim: 'other' }), 409],
    ['ConflictError', new ConflictError('Claim "c" already exists with a different spec.'), 409],
    ['PoolNotEmptyError', new PoolNotEmptyError('pool-a', 1), 409],
    ['PoolTerminatingError', new PoolTerminatingError('pool-a'), 409],
    ['RangeFullError', new RangeFullError('pool-a', 'IPv4'), 409],
    ['NotInRangeError', new NotInRangeError('10.1.0.1'), 422],
    [
      'MismatchedNetworkError',
      new MismatchedNetworkError('Pool "pool-a" has no Ready IPv6 range for this claim.'),
      422,
    ],
    ['PreconditionFailedError', new PreconditionFailedError('1', '2'), 412],
    ['NotReadyError', new NotReadyError(), 503],
    ['TooManyConsumersError', new TooManyConsumersError('vip', 256), 409],
    ['ClaimInUseError', new ClaimInUseError('vip', 2), 409],
  ])('exposes %s as a problem with status %s and its message as the detail', (_name, error, status) => {
    // Act
    const problem = problemOf(error);

    // Assess
    expect(problem).toEqual({
      type: `https://ipam.dev/problems/${error.code}`,
      title: expect.any(String),
      status,
      detail: error.message,
      code: error.code,
    });
  });

  it.each([
    [
      'a plain Error',
      new Error(
        'ValidationException: One or more parameter values were invalid: arn:aws:dynamodb:eu-west-1:123456789012:table/ipam',
      ),
    ],
    ['a TypeError', new TypeError("Cannot read properties of undefined (reading 'Item')")],
    ['a thrown string', 'secret string'],
    [
      'an IpamError with the Internal code',
      new IpamError(ErrorCode.Internal, 'bitmap of range r is corrupt at byte 17'),
    ],
  ])('turns %s into a generic 500 that leaks nothing', (_what, error) => {
    // Act
    const problem = problemOf(error);

    // Assess
    expect(problem).toEqual({
      type: 'https://ipam.dev/problems/Internal',
      title: 'Internal error',
      status: 500,
      detail: 'The server failed to handle the request; it has been logged.',
      code: 'Internal',
    });
  });
});

describe('Function: problemResponse', () => {
  it('answers NotReady with application/problem+json and a retry-after header', () => {
    // Act
    const response = problemResponse(problemOf(new NotReadyError()));

    // Assess
    expect(response).toEqual({
      statusCode: 503,
      headers: { 'content-type': 'application/problem+json', 'retry-after': '1' },
      body: `${JSON.stringify(problemOf(new NotReadyError()))}\n`,
    });
  });

  it('sends no retry-after with other problems', () => {
    // Act
    const response = problemResponse(problemOf(new RangeFullError('pool-a', 'IPv4')));

    // Assess
    expect(response.headers).toEqual({ 'content-type': 'application/problem+json' });
    expect(JSON.parse(response.body!)).toMatchObject({ status: 409, code: 'RangeFull' });
  });
});

describe('Function: parseBody', () => {
  it('returns the known fields of a valid body and drops null optional fields', () => {
    // Prepare
    const event = withBody(
      JSON.stringify({ name: 'c', owner: OWNER, ipFamilies: ['IPv4'], ttlSeconds: 60, legacy: null }),
    );

    // Act
    const body = parseBody(event, claimFields);

    // Assess
    expect(body).toEqual({ name: 'c', owner: OWNER, ipFamilies: ['IPv4'], ttlSeconds: 60 });
  });

  it('reads a base64-encoded body', () => {
    // Prepare
    const event = withBody(Buffer.from(JSON.stringify({ owner: OWNER })).toString('base64'), true);

    // Act
    const body = parseBody(event, claimFields);

    // Assess
    expect(body).toEqual({ owner: OWNER });
  });

  it('returns an empty object for an empty optional body', () => {
    // Act
    const body = parseBody(withBody(undefined), { ttlSeconds: { type: 'integer' } }, true);

    // Assess
    expect(body).toEqual({});
  });

  it.each<[string, string | undefined, string, string]>([
    ['the body is malformed JSON', '{"owner": {', 'body', 'The request body is not valid JSON'],
    ['the body is missing', undefined, 'body', 'The request needs a JSON object body.'],
    ['the body is blank', '  \n', 'body', 'The request needs a JSON object body.'],
    ['the body is an array', '[]', 'body', 'The request body must be a JSON object.'],
    ['the body is a string', '"owner"', 'body', 'The request body must be a JSON object.'],
    ['the body is null', 'null', 'body', 'The request body must be a JSON object.'],
    [
      'a field is unknown',
      JSON.stringify({ owner: OWNER, nmae: 'c' }),
      'nmae',
      'Unknown field "nmae"; known fields: name, owner, ipFamilies, ttlSeconds, legacy.',
    ],
    [
      'a field is named like an Object.prototype member',
      JSON.stringify({ owner: OWNER, constructor: 'x' }),
      'constructor',
      'Unknown field "constructor"',
    ],
    [
      'a field is named __proto__',
      `{"owner": ${JSON.stringify(OWNER)}, "__proto__": {"admin": true}}`,
      '__proto__',
      'Unknown field "__proto__"',
    ],
    ['a required field is missing', JSON.stringify({ name: 'c' }), 'owner', 'Field "owner" is required.'],
    ['a required field is null', JSON.stringify({ owner: null }), 'owner', 'Field "owner" is required.'],
    [
      'a string field holds a number',
      JSON.stringify({ owner: OWNER, name: 5 }),
      'name',
      'Field "name" must be a string.',
    ],
    [
      'an integer field holds a fraction',
      JSON.stringify({ owner: OWNER, ttlSeconds: 1.5 }),
      'ttlSeconds',
      'Field "ttlSeconds" must be a whole number.',
    ],
    [
      'an integer field holds a string',
      JSON.stringify({ owner: OWNER, ttlSeconds: '60' }),
      'ttlSeconds',
      'Field "ttlSeconds" must be a whole number.',
    ],
    [
      'a boolean field holds a string',
      JSON.stringify({ owner: OWNER, legacy: 'true' }),
      'legacy',
      'Field "legacy" must be true or false.',
    ],
    [
      'a string array holds a number',
      JSON.stringify({ owner: OWNER, ipFamilies: ['IPv4', 6] }),
      'ipFamilies',
      'Field "ipFamilies" must be an array of strings.',
    ],
    [
      'a string array is a string',
      JSON.stringify({ owner: OWNER, ipFamilies: 'IPv4' }),
      'ipFamilies',
      'Field "ipFamilies" must be an array of strings.',
    ],
    [
      'a string array has more than 256 entries',
      JSON.stringify({ owner: OWNER, ipFamilies: Array.from({ length: 257 }, () => 'IPv4') }),
      'ipFamilies',
      'must be an array of strings',
    ],
    ['the owner is an array', JSON.stringify({ owner: [OWNER] }), 'owner', 'Field "owner" must be an object.'],
    ['the owner is a string', JSON.stringify({ owner: 'owner-1' }), 'owner', 'Field "owner" must be an object.'],
    [
      'the owner has no uid',
      JSON.stringify({ owner: { kind: 'Pod', name: 'web-0' } }),
      'owner.uid',
      'Field "owner.uid" is required.',
    ],
    [
      'the owner uid is a number',
      JSON.stringify({ owner: { ...OWNER, uid: 7 } }),
      'owner.uid',
      'Field "owner.uid" must be a string.',
    ],
    [
      'the owner has an unknown field',
      JSON.stringify({ owner: { ...OWNER, namespace: 'default' } }),
      'owner.namespace',
      'Unknown field "owner.namespace"; known fields: kind, name, uid.',
    ],
    [
      'the owner has a field named like an Object.prototype member',
      JSON.stringify({ owner: { ...OWNER, toString: 'x' } }),
      'owner.toString',
      'Unknown field "owner.toString"',
    ],
  ])('throws InvalidArgumentError naming the field when %s', (_why, body, field, sentence) => {
    // Act
    const parse = () => parseBody(withBody(body), claimFields);

    // Assess
    expect(parse).toThrow(InvalidArgumentError);
    expect(parse).toThrow(sentence);
    expect(parse).toThrow(expect.objectContaining({ field }));
  });

  it('throws InvalidArgumentError when the body is larger than the limit, counting bytes rather than characters', () => {
    // Prepare: fewer characters than the limit, but three bytes each
    const body = JSON.stringify({ owner: { ...OWNER, name: '€'.repeat(Math.ceil(MAX_BODY_BYTES / 3)) } });

    // Act
    const parse = () => parseBody(withBody(body), claimFields);

    // Assess
    expect(body.length).toBeLessThan(MAX_BODY_BYTES);
    expect(parse).toThrow(InvalidArgumentError);
    expect(parse).toThrow(`The request body is larger than ${MAX_BODY_BYTES} bytes.`);
  });

  it('accepts a body of exactly the limit', () => {
    // Prepare
    const prefix = JSON.stringify({ owner: OWNER, name: '' });
    const body = `${prefix.slice(0, -2)}${'a'.repeat(MAX_BODY_BYTES - prefix.length)}"}`;

    // Act
    const parsed = parseBody(withBody(body), claimFields);

    // Assess
    expect(Buffer.byteLength(body)).toBe(MAX_BODY_BYTES);
    expect(parsed.owner).toEqual(OWNER);
  });
});

describe('Function: pageParams', () => {
  it.each<[Record<string, string>, { limit?: number; cursor?: string }]>([
    [{}, {}],
    [{ limit: '1' }, { limit: 1 }],
    [{ limit: '1000' }, { limit: 1000 }],
    [
      { limit: '50', cursor: 'abc.def' },
      { limit: 50, cursor: 'abc.def' },
    ],
  ])('reads %j as %j', (query, expected) => {
    // Act
    const params = pageParams(withQuery(query));

    // Assess
    expect(params).toEqual(expected);
  });

  it.each([['0'], ['1001'], ['-1'], ['1.5'], ['ten'], [''], ['1e2'], [' 5']])(
    'throws InvalidArgumentError for limit %j',
    (limit) => {
      // Act
      const read = () => pageParams(withQuery({ limit }));

      // Assess
      expect(read).toThrow(InvalidArgumentError);
      expect(read).toThrow('limit must be a whole number from 1 to 1000.');
    },
  );

  it.each([
    ['an empty cursor', ''],
    ['a cursor over 2048 characters', 'a'.repeat(2049)],
  ])('throws InvalidArgumentError for %s', (_why, cursor) => {
    // Act
    const read = () => pageParams(withQuery({ cursor }));

    // Assess
    expect(read).toThrow(InvalidArgumentError);
    expect(read).toThrow(expect.objectContaining({ field: 'cursor' }));
  });
});

describe('Class: CursorCodec', () => {
  const codec = new CursorCodec('unit-secret');
  const scope = ['claims', 'pool-a', ''] as const;

  it('reads back what it wrote', () => {
    // Prepare
    const position = { s: 2, k: '0a00000a' };

    // Act
    const decoded = codec.decode(scope, codec.encode(scope, position), isListPosition);

    // Assess
    expect(decoded).toEqual(position);
  });

  it('writes opaque cursors that survive a query string unchanged', () => {
    // Act
    const cursor = codec.encode(scope, { s: 0, k: 'pool-a/ü+?&=' });

    // Assess
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  });

  const valid = codec.encode(scope, { s: 1, k: 'claim-7' });
  const [body, signature] = valid.split('.') as [string, string];
  const flip = (text: string, at: number) => `${text.slice(0, at)}${text[at] === 'A' ? 'B' : 'A'}${text.slice(at + 1)}`;
  // What issue 25 found: the old default key was `ipam-cursor:<table name>`, and health answered the table name.
  const guessed = new CursorCodec('ipam-cursor:ipam-dev');

  it.each([
    ['an altered body', `${flip(body, 3)}.${signature}`],
    [
      'another position under the old signature',
      `${Buffer.from(JSON.stringify({ s: 1, k: 'claim-8' })).toString('base64url')}.${signature}`,
    ],
    ['an altered signature', `${body}.${flip(signature, 0)}`],
    ['a truncated signature', `${body}.${signature.slice(0, -1)}`],
    ['no signature', body],
    ['an extra part', `${valid}.x`],
    ['a random string', 'eyJzIjowLCJrIjoiYSJ9'],
    ['a random dotted string', 'hello.world'],
    ['an empty string', ''],
    ['a cursor signed with another secret', new CursorCodec('other-secret').encode(scope, { s: 1, k: 'claim-7' })],
    ['a cursor forged with the old guessable default key', guessed.encode(scope, { s: 0, k: 'claim-7' })],
    ['a genuine cursor of another route', codec.encode(['events', 'pool-a'], { s: 1, k: 'claim-7' })],
    ['a genuine cursor of another pool', codec.encode(['claims', 'pool-b', ''], { s: 1, k: 'claim-7' })],
    ['a genuine cursor of another filter', codec.encode(['claims', 'pool-a', 'owner-1'], { s: 1, k: 'claim-7' })],
  ])('throws InvalidArgumentError for %s', (_why, cursor) => {
    // Act
    const decode = () => codec.decode(scope, cursor, isListPosition);

    // Assess
    expect(decode).toThrow(InvalidArgumentError);
    expect(decode).toThrow('cursor is not valid: pass back the nextCursor of a previous page unchanged.');
  });

  it.each([
    ['another shape', { offset: 5 }],
    ['a negative position', { s: -1, k: 'a' }],
    ['a fractional position', { s: 0.5, k: 'a' }],
    ['a position past the safe integers', { s: 2 ** 60, k: 'a' }],
    ['a key longer than any sort key', { s: 0, k: 'k'.repeat(1025) }],
  ])('throws InvalidArgumentError for a genuine cursor of %s', (_why, position) => {
    // Prepare
    const cursor = codec.encode(scope, position);

    // Act
    const decode = () => codec.decode(scope, cursor, isListPosition);

    // Assess
    expect(decode).toThrow(InvalidArgumentError);
  });

  it('throws InvalidArgumentError for a second scope in a listing of one', () => {
    // Act
    const decode = () => codec.decode(scope, codec.encode(scope, { s: 1, k: 'a' }), isSingleScopePosition);

    // Assess
    expect(decode).toThrow(InvalidArgumentError);
  });
});

describe('Function: parseFeatureGates', () => {
  it.each<[string | undefined, { MultiCIDRServiceAllocator: boolean; DisableAllocatorDualWrite: boolean }]>([
    [undefined, { MultiCIDRServiceAllocator: true, DisableAllocatorDualWrite: false }],
    ['', { MultiCIDRServiceAllocator: true, DisableAllocatorDualWrite: false }],
    ['MultiCIDRServiceAllocator=false', { MultiCIDRServiceAllocator: false, DisableAllocatorDualWrite: false }],
    [
      ' DisableAllocatorDualWrite = true , MultiCIDRServiceAllocator=true,',
      { MultiCIDRServiceAllocator: true, DisableAllocatorDualWrite: true },
    ],
  ])('reads %j', (text, expected) => {
    // Act
    const gates = parseFeatureGates(text);

    // Assess
    expect(gates).toEqual(expected);
  });

  it.each([
    ['an unknown gate', 'MultiCidrServiceAllocator=true', 'FEATURE_GATES: unknown gate "MultiCidrServiceAllocator"'],
    ['a gate named like an Object.prototype member', 'toString=true', 'FEATURE_GATES: unknown gate "toString"'],
    ['a gate named __proto__', '__proto__=true', 'FEATURE_GATES: unknown gate "__proto__"'],
    [
      'a value that is not a boolean',
      'DisableAllocatorDualWrite=yes',
      'FEATURE_GATES: DisableAllocatorDualWrite must be true or false, not "yes"',
    ],
    [
      'a gate without a value',
      'DisableAllocatorDualWrite',
      'FEATURE_GATES: DisableAllocatorDualWrite must be true or false',
    ],
  ])('throws when the text has %s', (_why, text, sentence) => {
    // Act
    const parse = () => parseFeatureGates(text);

    // Assess
    expect(parse).toThrow(sentence);
  });
});

describe('Function: loadConfig', () => {
  it('reads defaults from an environment with only TABLE_NAME on the local stack', () => {
    // Act
    const config = loadConfig({ TABLE_NAME: 'ipam', LOCAL_STACK: 'true' });

    // Assess
    expect(config).toMatchObject({
      localStack: true,
      tableName: 'ipam',
      dynamodbEndpoint: undefined,
      region: 'us-east-1',
      stage: 'dev',
      featureGates: { MultiCIDRServiceAllocator: true, DisableAllocatorDualWrite: false },
      leaseIndexShards: 8,
      cursorSecret: 'ipam-cursor:ipam',
    });
  });

  it('reads the settings it is given', () => {
    // Act
    const config = loadConfig({
      TABLE_NAME: 'ipam',
      DYNAMODB_ENDPOINT: 'http://127.0.0.1:8000',
      AWS_REGION: 'eu-west-1',
      LEASE_INDEX_SHARDS: '16',
      CURSOR_SECRET: 's3cret-0123456789abcdef',
      FEATURE_GATES: 'DisableAllocatorDualWrite=true',
      POWERTOOLS_METRICS_NAMESPACE: 'ns',
      POWERTOOLS_SERVICE_NAME: 'svc',
    });

    // Assess
    expect(config).toMatchObject({
      dynamodbEndpoint: 'http://127.0.0.1:8000',
      region: 'eu-west-1',
      leaseIndexShards: 16,
      cursorSecret: 's3cret-0123456789abcdef',
      localStack: false,
      featureGates: { DisableAllocatorDualWrite: true },
      metrics: { namespace: 'ns', serviceName: 'svc' },
    });
  });

  it.each<[string, Record<string, string>, string]>([
    ['TABLE_NAME is missing', {}, 'TABLE_NAME is not set'],
    ['TABLE_NAME is empty', { TABLE_NAME: '' }, 'TABLE_NAME is not set'],
    ['CURSOR_SECRET is missing outside the local stack', { TABLE_NAME: 'ipam' }, 'CURSOR_SECRET is not set'],
    [
      'CURSOR_SECRET is short outside the local stack',
      { TABLE_NAME: 'ipam', CURSOR_SECRET: 'short' },
      'CURSOR_SECRET must be at least 16 characters',
    ],
    [
      'LEASE_INDEX_SHARDS is zero',
      { TABLE_NAME: 'ipam', LOCAL_STACK: 'true', LEASE_INDEX_SHARDS: '0' },
      'LEASE_INDEX_SHARDS must be a number >= 1, not "0"',
    ],
    [
      'LEASE_INDEX_SHARDS is not a number',
      { TABLE_NAME: 'ipam', LOCAL_STACK: 'true', LEASE_INDEX_SHARDS: 'eight' },
      'LEASE_INDEX_SHARDS must be a number >= 1',
    ],
    [
      'RECONCILE_LEAK_STRIKES is zero',
      { TABLE_NAME: 'ipam', LOCAL_STACK: 'true', RECONCILE_LEAK_STRIKES: '0' },
      'RECONCILE_LEAK_STRIKES must be a number >= 1',
    ],
    [
      'LEASE_INDEX_SHARDS is a fraction',
      { TABLE_NAME: 'ipam', LOCAL_STACK: 'true', LEASE_INDEX_SHARDS: '2.5' },
      'LEASE_INDEX_SHARDS must be a whole number, not "2.5"',
    ],
    [
      'RECONCILE_LEAK_STRIKES is a fraction',
      { TABLE_NAME: 'ipam', LOCAL_STACK: 'true', RECONCILE_LEAK_STRIKES: '1.5' },
      'RECONCILE_LEAK_STRIKES must be a whole number',
    ],
    [
      'FEATURE_GATES has two values for a gate',
      { TABLE_NAME: 'ipam', LOCAL_STACK: 'true', FEATURE_GATES: 'MultiCIDRServiceAllocator=true=false' },
      'FEATURE_GATES: MultiCIDRServiceAllocator must be true or false',
    ],
    [
      'a grace period is negative',
      { TABLE_NAME: 'ipam', LOCAL_STACK: 'true', RECONCILE_EXPIRED_GRACE_SECONDS: '-5' },
      'RECONCILE_EXPIRED_GRACE_SECONDS must be a number >= 0',
    ],
    [
      'a grace period is infinite',
      { TABLE_NAME: 'ipam', LOCAL_STACK: 'true', RECONCILE_ORPHAN_GRACE_SECONDS: 'Infinity' },
      'RECONCILE_ORPHAN_GRACE_SECONDS must be a number >= 0',
    ],
    [
      'FEATURE_GATES names an unknown gate',
      { TABLE_NAME: 'ipam', LOCAL_STACK: 'true', FEATURE_GATES: 'Foo=true' },
      'FEATURE_GATES: unknown gate "Foo"',
    ],
  ])('throws when %s (tests/unit/cold-start.test.ts: a handler module then fails to load)', (_why, env, sentence) => {
    // Act
    const load = () => loadConfig(env);

    // Assess
    expect(load).toThrow(sentence);
  });
});

describe('Function: createHttpHandler', () => {
  // The real pipeline (router, use case, DynamoStore, problem middleware) over a mocked DynamoDB client.
  const client = new DynamoDBClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'unit', secretAccessKey: 'unit' },
  });
  const ddb = mockClient(client);
  const container = buildContainer(loadConfig({ TABLE_NAME: 'ipam-unit', LOCAL_STACK: 'true' }), { client });
  const logged: Record<string, unknown>[] = [];
  const handler = createHttpHandler(
    () => container.deps,
    { version: 'unit', health: async () => ({ table: 'ipam-unit', status: 'ACTIVE' }) },
    (entry) => logged.push(entry),
  );
  const context = { getRemainingTimeInMillis: () => 30_000 } as Context;
  const call = async (event: APIGatewayProxyEventV2) =>
    (await handler(event, context)) as APIGatewayProxyStructuredResultV2;

  beforeEach(() => {
    ddb.reset();
    logged.length = 0;
  });

  it('answers an unexpected store error with a generic 500 and logs the details instead', async () => {
    // Prepare
    ddb
      .on(QueryCommand)
      .rejects(
        new Error('ValidationException: arn:aws:dynamodb:eu-west-1:123456789012:table/ipam-unit index GSI1 missing'),
      );

    // Act
    const response = await call(httpEvent('GET', '/v1/pools'));

    // Assess
    expect(response).toEqual({
      statusCode: 500,
      headers: { 'content-type': 'application/problem+json' },
      body: `${JSON.stringify({
        type: 'https://ipam.dev/problems/Internal',
        title: 'Internal error',
        status: 500,
        detail: 'The server failed to handle the request; it has been logged.',
        code: 'Internal',
      })}\n`,
    });
    expect(response.body).not.toContain('arn:aws');
    expect(logged).toEqual([
      expect.objectContaining({ level: 'error', status: 500, detail: expect.stringContaining('arn:aws:dynamodb') }),
    ]);
  });

  it('answers a throttled store with 503 NotReady and retry-after', async () => {
    // Prepare
    ddb
      .on(QueryCommand)
      .rejects(new ProvisionedThroughputExceededException({ message: 'Rate exceeded', $metadata: {} }));

    // Act
    const response = await call(httpEvent('GET', '/v1/pools'));

    // Assess
    expect(response.statusCode).toBe(503);
    expect(response.headers).toEqual({ 'content-type': 'application/problem+json', 'retry-after': '1' });
    expect(JSON.parse(response.body!)).toMatchObject({ status: 503, code: 'NotReady' });
  });

  it('answers a tampered cursor with 400 before reading the table', async () => {
    // Act
    const response = await call(httpEvent('GET', '/v1/pools', { query: { cursor: 'eyJzIjowLCJrIjoiYSJ9.forged' } }));

    // Assess
    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body!)).toMatchObject({
      code: 'InvalidArgument',
      detail: 'cursor is not valid: pass back the nextCursor of a previous page unchanged.',
    });
    expect(ddb.calls()).toHaveLength(0);
  });

  it.each([
    ['a pool matched by path', { ...httpEvent('GET', '/v1/pools/%63%31') }],
    [
      'a claim whose parameter API Gateway already decoded',
      {
        ...httpEvent('GET', '/v1/pools/p/claims/%63%31'),
        routeKey: 'GET /v1/pools/{pool}/claims/{claim}',
        pathParameters: { pool: 'p', claim: 'c1' },
      },
    ],
    ['an address with its colons encoded', { ...httpEvent('GET', '/v1/pools/p/addresses/fd00%3A%3A1') }],
  ])('answers a percent-encoded name (%s) with 400 before reading the table', async (_why, event) => {
    // Act
    const response = await call(event);

    // Assess
    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body!)).toMatchObject({
      code: 'InvalidArgument',
      detail: expect.stringContaining("contains '%'"),
    });
    expect(ddb.calls()).toHaveLength(0);
  });

  it('answers an unknown body field with 400 naming the field', async () => {
    // Act
    const response = await call(
      httpEvent('POST', '/v1/pools', { body: JSON.stringify({ name: 'pool-a', exclude: [], colour: 'blue' }) }),
    );

    // Assess
    expect(response.statusCode).toBe(400);
    expect(JSON.parse(response.body!)).toMatchObject({
      code: 'InvalidArgument',
      detail:
        'Unknown field "colour"; known fields: name, exclude, reuseDelaySeconds, historyDays, access, freeThresholds, blockPrefixLength, grow, openToChildPools, dns.',
    });
    expect(ddb.calls()).toHaveLength(0);
  });
});

describe('Function: refuseForgeableWrite (issue 33, item 8)', () => {
  // A page on another site can send a "simple" cross-origin POST (text/plain, no preflight) to a developer's local
  // stack on 127.0.0.1: such a write must be refused before anything runs.
  const post = (headers: Record<string, string>) => ({
    ...httpEvent('POST', '/v1/pools', { body: '{"name":"pool-a"}' }),
    headers,
  });

  it.each([
    ['Fetch Metadata naming another site', { 'content-type': 'text/plain', 'sec-fetch-site': 'cross-site' }],
    ['Fetch Metadata naming a sibling site', { 'content-type': 'application/json', 'sec-fetch-site': 'same-site' }],
    [
      'an Origin of another host',
      { 'content-type': 'text/plain', origin: 'https://evil.example', host: '127.0.0.1:3000' },
    ],
    [
      'an Origin of another port of the same host',
      { 'content-type': 'text/plain', origin: 'http://127.0.0.1:8080', host: '127.0.0.1:3000' },
    ],
    ['an opaque Origin', { 'content-type': 'text/plain', origin: 'null', host: '127.0.0.1:3000' }],
  ])('refuses a write with %s (403 cross-site-request)', (_, headers) => {
    // Act
    const refusal = (() => {
      try {
        refuseForgeableWrite(post(headers));
      } catch (error) {
        return problemOf(error);
      }
      return undefined;
    })();
    // Assess
    expect(refusal).toMatchObject({ status: 403, code: 'Forbidden', rule: 'cross-site-request' });
  });

  it.each([
    [
      'from a client that is no browser (curl -d sends a form type)',
      { 'content-type': 'application/x-www-form-urlencoded' },
    ],
    [
      "from the page's own origin",
      {
        'content-type': 'application/json',
        'sec-fetch-site': 'same-origin',
        origin: 'http://127.0.0.1:3000',
        host: '127.0.0.1:3000',
      },
    ],
    ['typed by the user (Fetch Metadata none)', { 'sec-fetch-site': 'none' }],
    [
      "from the page's own origin through the console server (Fetch Metadata said same-origin)",
      { 'sec-fetch-site': 'same-origin', origin: 'http://127.0.0.1:3000', host: '127.0.0.1:4001' },
    ],
    [
      "from the page's own origin through the console server, a browser without Fetch Metadata",
      { origin: 'http://127.0.0.1:3000', host: '127.0.0.1:4001', 'x-forwarded-host': '127.0.0.1:3000' },
    ],
  ])('takes a write %s', (_, headers) => {
    expect(() => refuseForgeableWrite(post(headers))).not.toThrow();
  });

  it('leaves reads alone', () => {
    expect(() =>
      refuseForgeableWrite({ ...httpEvent('GET', '/v1/pools'), headers: { 'sec-fetch-site': 'cross-site' } }),
    ).not.toThrow();
  });
});

describe('Function: parseIfMatch', () => {
  it.each<[string, ReturnType<typeof parseIfMatch>]>([
    ['*', '*'],
    [' * ', '*'],
    ['"1"', [{ weak: false, opaque: '1' }]],
    ['W/"1"', [{ weak: true, opaque: '1' }]],
    [
      '"1", W/"2" ,"3"',
      [
        { weak: false, opaque: '1' },
        { weak: true, opaque: '2' },
        { weak: false, opaque: '3' },
      ],
    ],
    ['"x,y"', [{ weak: false, opaque: 'x,y' }]],
    ['""', [{ weak: false, opaque: '' }]],
    [',"1",,', [{ weak: false, opaque: '1' }]],
    ['"é"', [{ weak: false, opaque: 'é' }]], // obs-text (%x80-FF) is allowed in a tag
  ])('reads %j', (value, expected) => {
    // Act
    const parsed = parseIfMatch(value);

    // Assess
    expect(parsed).toEqual(expected);
  });

  it.each([
    [''],
    ['  '],
    [','],
    ['1'],
    ['"1'],
    ['w/"1"'],
    ['W/1'],
    ['W/ "1"'],
    ['"1" "2"'],
    ['"1";"2"'],
    ['"1", *'],
    ['* , "1"'],
    ['" 1"'],
    ['"\u20ac"'],
    ['"a\tb"'],
  ])('throws InvalidArgumentError for %j', (value) => {
    // Act
    const parse = () => parseIfMatch(value);

    // Assess
    expect(parse).toThrow(InvalidArgumentError);
    expect(parse).toThrow(expect.objectContaining({ field: 'If-Match' }));
  });
});

describe('Function: versionsMatching', () => {
  it.each<[string, ReturnType<typeof versionsMatching>]>([
    ['*', 'any'],
    [etagOf(1), [1]],
    ['"2", "1"', [2, 1]],
    ['W/"1"', []],
    ['W/"1", "3"', [3]],
    ['"0x1"', []],
    ['"1.0"', []],
    ['"01"', []],
    ['"+1"', []],
    ['"0o1"', []],
    ['"1e0"', []],
    ['"-1"', []],
    ['"0"', [0]],
    ['"9007199254740993"', []],
  ])('accepts %j as %j (strong comparison with the ETag that etagOf writes)', (value, expected) => {
    // Act
    const versions = versionsMatching(value);

    // Assess
    expect(versions).toEqual(expected);
  });
});

describe('Function: readEvent', () => {
  const base = httpEvent('GET', '/v1/pools');

  it('returns maps without a prototype, so prototype names are plain keys', () => {
    // Act
    const event = readEvent({ ...base, queryStringParameters: { limit: '5' }, headers: { 'If-Match': '"1"' } });

    // Assess
    expect(Object.getPrototypeOf(event.queryStringParameters)).toBeNull();
    expect(event.queryStringParameters?.constructor).toBeUndefined();
    expect({ ...event.queryStringParameters }).toEqual({ limit: '5' });
    expect({ ...event.headers }).toEqual({ 'If-Match': '"1"' });
  });

  it('fills what a hand-made event leaves out', () => {
    // Act
    const event = readEvent({});

    // Assess
    expect(event).toMatchObject({
      routeKey: '$default',
      rawPath: '',
      rawQueryString: '',
      isBase64Encoded: false,
      requestContext: { http: { method: '' } },
    });
  });

  it.each<[string, unknown, string]>([
    ['null', null, 'The request is not an HTTP API event.'],
    ['a string', 'GET /', 'The request is not an HTTP API event.'],
    ['an array', [base], 'The request is not an HTTP API event.'],
    ['a body that is a number', { ...base, body: 0 }, 'The request body must arrive as JSON text, not as a number.'],
    ['a body that is false', { ...base, body: false }, 'The request body must arrive as JSON text, not as a boolean.'],
    [
      'a body that is an object',
      { ...base, body: { name: 'p' } },
      'The request body must arrive as JSON text, not as an object.',
    ],
    ['headers that are a string', { ...base, headers: 'a: b' }, "The request's headers must be a map of strings."],
    [
      'a header that is a number',
      { ...base, headers: { 'if-match': 1 } },
      'The request\'s headers must be a map of strings; "if-match" is not a string.',
    ],
    [
      'a query value that is an array',
      { ...base, queryStringParameters: { limit: ['1'] } },
      "The request's query parameters must be a map of strings",
    ],
    ['a routeKey that is a number', { ...base, routeKey: 1 }, "The request's routeKey must be a string."],
  ])('throws InvalidArgumentError for %s', (_what, raw, sentence) => {
    // Act
    const read = () => readEvent(raw);

    // Assess
    expect(read).toThrow(InvalidArgumentError);
    expect(read).toThrow(sentence);
  });
});

describe('Function: pathParam', () => {
  const withPath = (pathParameters: Record<string, string>) => ({ ...httpEvent('GET', '/x'), pathParameters });

  it.each<[Parameters<typeof pathParam>[1], string, string]>([
    ['pool', 'pool-a', 'pool-a'],
    ['claim', 'web-0', 'web-0'],
    ['range', '10.0.0.0-24', '10.0.0.0-24'],
    ['range', '::-64', '::-64'],
    ['range', 'Blue_1.a', 'Blue_1.a'],
    ['uid', '3f1c%2Fx', '3f1c/x'],
    ['address', 'fd00::1', 'fd00::1'],
  ])('reads the %s %j as %j', (name, raw, expected) => {
    // Act
    const value = pathParam(withPath({ [name]: raw }), name);

    // Assess
    expect(value).toBe(expected);
  });

  it.each<[Parameters<typeof pathParam>[1], string, string]>([
    ['pool', 'a'.repeat(64), 'pool must be 1-63'],
    ['claim', 'Web', 'claim must be 1-63'],
    ['claim', 'a'.repeat(4000), 'claim must be 1-63'],
    ['range', '-x', 'range must be 1-100'],
    ['range', 'r'.repeat(101), 'range must be 1-100'],
    ['uid', 'u'.repeat(254), 'uid must be 1-253 characters'],
    ['uid', '%ED%A0%80', 'The uid in the path is not valid URL encoding.'],
    ['uid', '\ud800', 'uid must be 1-253 characters of well-formed Unicode.'],
    ['address', '10.0.0.256', 'address "10.0.0.256" is not a valid IPv4 address'],
    ['uid', '%zz', 'The uid in the path is not valid URL encoding.'],
    ['pool', '%63%31', "The pool in the path contains '%': names are sent as they are, never percent-encoded."],
    ['claim', '%63%31', "The claim in the path contains '%'"],
    ['range', 'fd00%3A%3A-64', "The range in the path contains '%'"],
    ['address', 'fd00%3A%3A1', "The address in the path contains '%'"],
    ['pool', '', 'The path needs a pool.'],
  ])('throws InvalidArgumentError for the %s %j', (name, raw, sentence) => {
    // Act
    const read = () => pathParam(withPath({ [name]: raw }), name);

    // Assess
    expect(read).toThrow(InvalidArgumentError);
    expect(read).toThrow(sentence);
  });
});
