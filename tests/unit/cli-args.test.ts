import { describe, expect, it } from 'vitest';
import { claimSpecOf, parseOwner } from '../../cli/commands/mutate.ts';
import { ExitCode } from '../../cli/errors.ts';
import { fakeFetch, runCli, type RecordedRequest } from '../support/cli.ts';

const claim = {
  name: 'web',
  uid: 'u-1',
  owner: { kind: 'Service', name: 'web', uid: '3f1c' },
  ipFamilyPolicy: 'RequireDualStack',
  ipFamilies: ['IPv4', 'IPv6'],
  addresses: [
    { address: '10.96.0.187', family: 'IPv4', range: '10.96.0.0-24' },
    { address: 'fd00:10:96::9a3c', family: 'IPv6', range: 'fd00:10:96::-112' },
  ],
  createdAt: '2026-04-02T09:57:00Z',
  version: 1,
};

/** A server that answers 201 with `claim` to a POST and records what it was sent. */
function claimServer() {
  return fakeFetch((request: RecordedRequest) =>
    request.method === 'POST'
      ? { status: 201, body: claim }
      : { status: 404, body: { code: 'NotFound', status: 404, detail: 'no' } },
  );
}

describe('Command line: ipam claim', () => {
  it('sends the claim spec the flags spell, to the pool in the path', async () => {
    // Prepare
    const server = claimServer();

    // Act
    const result = await runCli(
      [
        'claim',
        'services',
        '--name',
        'web',
        '--owner',
        'Service/web/3f1c',
        '--dual-stack',
        'require',
        '--family',
        'ipv6',
        '--family',
        'IPv4',
        '--address',
        '10.96.0.187,fd00:10:96::9a3c',
        '--ttl',
        '1h30m',
      ],
      { fetch: server.fetch },
    );

    // Assess
    expect(result).toMatchObject({ code: ExitCode.Ok, err: '' });
    expect(server.requests).toHaveLength(1);
    const [request] = server.requests;
    expect(request!.method).toBe('POST');
    expect(request!.url.href).toBe('http://127.0.0.1:3000/v1/pools/services/claims');
    expect(JSON.parse(request!.body!)).toEqual({
      name: 'web',
      owner: { kind: 'Service', name: 'web', uid: '3f1c' },
      ipFamilyPolicy: 'RequireDualStack',
      ipFamilies: ['IPv6', 'IPv4'],
      addresses: ['10.96.0.187', 'fd00:10:96::9a3c'],
      ttlSeconds: 5400,
    });
    expect(result.out).toBe('claim/web created: 10.96.0.187 (10.96.0.0-24), fd00:10:96::9a3c (fd00:10:96::-112)\n');
  });

  it('takes --generate-name and a bare number of seconds as the TTL', async () => {
    const server = claimServer();
    const result = await runCli(
      ['claim', 'services', '--generate-name', 'vpn', '--owner', 'Client/laptop/c-19', '--ttl', '300'],
      { fetch: server.fetch },
    );
    expect(result.code).toBe(ExitCode.Ok);
    expect(JSON.parse(server.requests[0]!.body!)).toEqual({
      generateName: 'vpn',
      owner: { kind: 'Client', name: 'laptop', uid: 'c-19' },
      ttlSeconds: 300,
    });
  });

  it.each([
    [
      'no name at all',
      ['claim', 'services', '--owner', 'Service/web/3f1c'],
      'give exactly one of --name and --generate-name',
    ],
    [
      'both names',
      ['claim', 'services', '--name', 'a', '--generate-name', 'b', '--owner', 'Service/web/3f1c'],
      'give exactly one of --name and --generate-name',
    ],
    [
      'an owner without a uid',
      ['claim', 'services', '--name', 'web', '--owner', 'Service/web'],
      'Expected KIND/NAME/UID',
    ],
    ['no owner', ['claim', 'services', '--name', 'web'], "required option '--owner <kind/name/uid>' not specified"],
    [
      'a TTL that is not a duration',
      ['claim', 'services', '--name', 'web', '--owner', 'S/w/1', '--ttl', '5 minutes'],
      'Expected a duration',
    ],
    [
      'an unknown dual-stack policy',
      ['claim', 'services', '--name', 'web', '--owner', 'S/w/1', '--dual-stack', 'maybe'],
      'Allowed choices are require, prefer, single',
    ],
    [
      'an unknown family',
      ['claim', 'services', '--name', 'web', '--owner', 'S/w/1', '--family', 'IPv5'],
      'Expected IPv4 or IPv6',
    ],
    ['no pool', ['claim', '--name', 'web', '--owner', 'S/w/1'], "missing required argument 'pool'"],
  ])('refuses %s with exit code 2, the error and the command help, and sends nothing', async (_case, argv, message) => {
    const server = claimServer();
    const result = await runCli(argv, { fetch: server.fetch });
    expect(result.code).toBe(ExitCode.Usage);
    expect(result.err).toContain(message);
    expect(result.err).toContain('Usage: ipam claim [options] <pool>');
    expect(result.err).toContain('Examples:');
    expect(server.requests).toEqual([]);
  });

  it('keeps the slashes of an owner uid after the second one', () => {
    expect(parseOwner('Pod/api-7f/ns/uid')).toEqual({ kind: 'Pod', name: 'api-7f', uid: 'ns/uid' });
  });

  it('rounds a sub-second remainder of the TTL up to a whole second', () => {
    expect(claimSpecOf({ name: 'a', owner: { kind: 'k', name: 'n', uid: 'u' }, ttl: 1500 }).ttlSeconds).toBe(2);
  });
});

describe('Command line: ipam claim --count', () => {
  const batch = {
    ...claim,
    name: 'workers',
    ipFamilyPolicy: 'SingleStack',
    ipFamilies: ['IPv4'],
    count: 3,
    addresses: ['10.96.0.23', '10.96.0.24', '10.96.0.25'].map((address) => ({
      address,
      family: 'IPv4',
      range: '10.96.0.0-24',
    })),
  };

  it('sends count in the claim spec and names each range once in the sentence', async () => {
    const server = fakeFetch(() => ({ status: 201, body: batch }));
    const result = await runCli(
      ['claim', 'services', '--name', 'workers', '--owner', 'Deployment/workers/9b2e', '--count', '3'],
      { fetch: server.fetch },
    );
    expect(result).toMatchObject({ code: ExitCode.Ok, err: '' });
    expect(JSON.parse(server.requests[0]!.body!)).toEqual({
      name: 'workers',
      owner: { kind: 'Deployment', name: 'workers', uid: '9b2e' },
      count: 3,
    });
    expect(result.out).toBe(
      'claim/workers created: 3 addresses per family: 10.96.0.23, 10.96.0.24, 10.96.0.25 (10.96.0.0-24)\n',
    );
  });

  it('sends no count without --count', async () => {
    const server = claimServer();
    await runCli(['claim', 'services', '--name', 'web', '--owner', 'Service/web/3f1c'], { fetch: server.fetch });
    expect(JSON.parse(server.requests[0]!.body!)).not.toHaveProperty('count');
  });

  it.each([
    ['a count of 0', ['--count', '0'], 'Expected a whole number from 1 to 32'],
    ['a count of 33', ['--count', '33'], 'Expected a whole number from 1 to 32'],
    ['a count that is not a number', ['--count', 'eight'], 'Expected a whole number from 1 to 32'],
    [
      '--count with --address',
      ['--count', '2', '--address', '10.96.0.10'],
      'give either --count or --address (one address per family), not both',
    ],
    ['--count 1 with --address', ['--address', '10.96.0.10', '--count', '1'], 'give either --count or --address'],
  ])('refuses %s with exit code 2 and sends nothing', async (_case, flags, message) => {
    const server = claimServer();
    const result = await runCli(['claim', 'services', '--name', 'web', '--owner', 'S/w/1', ...flags], {
      fetch: server.fetch,
    });
    expect(result.code).toBe(ExitCode.Usage);
    expect(result.err).toContain(message);
    expect(result.err).toContain('Usage: ipam claim [options] <pool>');
    expect(server.requests).toEqual([]);
  });
});

describe('Command line: labels (ipam claim -l, ipam get claims -l)', () => {
  it('sends the labels of repeated and comma-separated -l/--label flags in the claim spec', async () => {
    // Prepare
    const server = claimServer();

    // Act
    const result = await runCli(
      [
        'claim',
        'pods',
        '--name',
        'web',
        '--owner',
        'Pod/web-0/8e1d',
        '-l',
        'cni.ipam/node=node-1',
        '--label',
        'cni.ipam/ifname=eth0,canary=',
        '-l',
        'cni.ipam/node=node-1',
      ],
      { fetch: server.fetch },
    );

    // Assess
    expect(result).toMatchObject({ code: ExitCode.Ok, err: '' });
    expect(JSON.parse(server.requests[0]!.body!)).toEqual({
      name: 'web',
      owner: { kind: 'Pod', name: 'web-0', uid: '8e1d' },
      labels: { 'cni.ipam/node': 'node-1', 'cni.ipam/ifname': 'eth0', canary: '' },
    });
  });

  it('sends no labels without -l', async () => {
    const server = claimServer();
    await runCli(['claim', 'services', '--name', 'web', '--owner', 'Service/web/3f1c'], { fetch: server.fetch });
    expect(JSON.parse(server.requests[0]!.body!)).not.toHaveProperty('labels');
  });

  it.each([
    ['a bare key', ['-l', 'app'], '"app" is not one'],
    ['an inequality', ['-l', 'app!=web'], 'equality only'],
    ['a key the service refuses', ['-l', '-app=web'], 'Label "-app" is not valid: its name must be'],
    ['one key with two values', ['-l', 'app=web', '-l', 'app=db'], 'Label "app" is given twice, with "web" and "db".'],
    ['an empty -l', ['-l', ''], 'Expected KEY=VALUE'],
  ])('refuses %s with exit code 2 and sends nothing', async (_case, flags, message) => {
    const server = claimServer();
    const result = await runCli(['claim', 'services', '--name', 'web', '--owner', 'S/w/1', ...flags], {
      fetch: server.fetch,
    });
    expect(result.code).toBe(ExitCode.Usage);
    expect(result.err).toContain(message);
    expect(server.requests).toEqual([]);
  });

  it('lists claims with a labelSelector from -l/--selector, repeated flags joined, following every page', async () => {
    // Prepare: the first page is empty (the server filtered it out) and carries a cursor.
    const server = fakeFetch((request) => ({
      status: 200,
      body: request.url.searchParams.get('cursor')
        ? { items: [{ ...claim, labels: { app: 'web', tier: 'db' } }] }
        : { items: [], nextCursor: 'c2' },
    }));

    // Act
    const result = await runCli(
      ['get', 'claims', '-p', 'pods', '-l', 'app=web', '--selector', 'tier=db', '-o', 'name'],
      { fetch: server.fetch },
    );

    // Assess
    expect(result).toMatchObject({ code: ExitCode.Ok, out: 'claim/web\n' });
    expect(server.requests.map((r) => r.url.pathname + r.url.search)).toEqual([
      '/v1/pools/pods/claims?labelSelector=app%3Dweb%2Ctier%3Ddb&limit=1000',
      '/v1/pools/pods/claims?labelSelector=app%3Dweb%2Ctier%3Ddb&limit=1000&cursor=c2',
    ]);
  });
});

describe('Command line: ipam create pool --reuse-delay', () => {
  const poolServer = () =>
    fakeFetch((request) => ({
      status: 201,
      body: { reuseDelaySeconds: 0, exclude: [], createdAt: '2026-04-02T09:59:00Z', ...JSON.parse(request.body!) },
    }));

  it.each([
    ['10m', 600, 'pool/pods created, reuse delay 10m\n'],
    ['1h', 3600, 'pool/pods created, reuse delay 1h\n'],
    ['90', 90, 'pool/pods created, reuse delay 1m30s\n'],
    ['1500ms', 2, 'pool/pods created, reuse delay 2s\n'],
    ['168h', 604800, 'pool/pods created, reuse delay 168h\n'],
    ['0', 0, 'pool/pods created\n'],
  ])('sends --reuse-delay %s as reuseDelaySeconds %d', async (text, seconds, sentence) => {
    const server = poolServer();
    const result = await runCli(['create', 'pool', 'pods', '--reuse-delay', text], { fetch: server.fetch });
    expect(result).toMatchObject({ code: ExitCode.Ok, out: sentence, err: '' });
    expect(server.requests.map((r) => [r.method, r.url.pathname])).toEqual([['POST', '/v1/pools']]);
    expect(JSON.parse(server.requests[0]!.body!)).toEqual({ name: 'pods', reuseDelaySeconds: seconds });
  });

  it('sends no reuseDelaySeconds without the flag, and the exclusions with it', async () => {
    const server = poolServer();
    await runCli(['create', 'pool', 'services', '--exclude', '10.96.0.0/29'], { fetch: server.fetch });
    await runCli(['create', 'pool', 'pods', '--exclude', '10.244.0.0/30', '--reuse-delay', '5m', '-o', 'json'], {
      fetch: server.fetch,
    });
    expect(server.requests.map((r) => JSON.parse(r.body!) as unknown)).toEqual([
      { name: 'services', exclude: ['10.96.0.0/29'] },
      { name: 'pods', exclude: ['10.244.0.0/30'], reuseDelaySeconds: 300 },
    ]);
  });

  it.each([
    ['more than 7 days', '169h', 'Expected a duration of at most 168h (604800 seconds).'],
    ['one second more than 7 days', '604801', 'Expected a duration of at most 168h'],
    ['not a duration', 'soon', 'Expected a duration such as 90s, 5m or 1h30m.'],
  ])('refuses a delay of %s with exit code 2 and sends nothing', async (_case, text, message) => {
    const server = poolServer();
    const result = await runCli(['create', 'pool', 'pods', '--reuse-delay', text], { fetch: server.fetch });
    expect(result.code).toBe(ExitCode.Usage);
    expect(result.err).toContain(message);
    expect(result.err).toContain('Usage: ipam create pool [options] <name>');
    expect(server.requests).toEqual([]);
  });
});

describe('Command line: ipam renew --permanent', () => {
  it('sends ttlSeconds null and says the claim is permanent', async () => {
    const server = fakeFetch(() => ({ status: 200, body: claim }));
    const result = await runCli(['renew', 'services', 'web', '--permanent'], { fetch: server.fetch });
    expect(result).toMatchObject({ code: ExitCode.Ok, err: '' });
    expect(server.requests.map((r) => [r.method, r.url.pathname, r.body])).toEqual([
      ['POST', '/v1/pools/services/claims/web/renew', '{"ttlSeconds":null}'],
    ]);
    expect(result.out).toBe(
      'claim/web made permanent: 10.96.0.187 (10.96.0.0-24), fd00:10:96::9a3c (fd00:10:96::-112)\n',
    );
  });

  it('sends an empty body for a plain renew', async () => {
    const server = fakeFetch(() => ({ status: 200, body: claim }));
    await runCli(['renew', 'services', 'web'], { fetch: server.fetch });
    expect(server.requests[0]!.body).toBe('{}');
  });

  it('refuses --permanent with --ttl with exit code 2 and sends nothing', async () => {
    const server = fakeFetch(() => ({ status: 200, body: claim }));
    const result = await runCli(['renew', 'services', 'web', '--permanent', '--ttl', '5m'], { fetch: server.fetch });
    expect(result.code).toBe(ExitCode.Usage);
    expect(result.err).toContain('error: --permanent removes the expiry; it cannot be combined with --ttl.');
    expect(result.err).toContain('Usage: ipam renew [options] <pool> <claim...>');
    expect(server.requests).toEqual([]);
  });
});

describe('Command line: ipam renew with several claims', () => {
  const results = {
    items: [
      { name: 'web', result: 'Renewed', expiresAt: '2035-01-01T00:15:00.000Z', version: 2 },
      { name: 'gone', result: 'NotFound', detail: 'claim "gone" was not found.' },
    ],
    renewed: 1,
  };

  it('renews them in one request, prints a line a claim and exits 1 when one was not renewed', async () => {
    const server = fakeFetch(() => ({ status: 200, body: results }));
    const result = await runCli(['renew', 'services', 'web', 'gone', '--ttl', '5m'], { fetch: server.fetch });
    expect(server.requests.map((r) => [r.method, r.url.pathname, r.body])).toEqual([
      ['POST', '/v1/pools/services/renewals', '{"claims":["web","gone"],"ttlSeconds":300}'],
    ]);
    expect(result.out).toBe('claim/web renewed until 2035-01-01T00:15:00.000Z\n');
    expect(result.err).toBe(
      'claim/gone not renewed: NotFound: claim "gone" was not found.\nerror: 1 of 2 claims were not renewed.\n',
    );
    expect(result.code).toBe(ExitCode.Failure);
  });

  it('refuses --permanent with several claims with exit code 2 and sends nothing', async () => {
    const server = fakeFetch(() => ({ status: 200, body: results }));
    const result = await runCli(['renew', 'services', 'web', 'gone', '--permanent'], { fetch: server.fetch });
    expect(result.code).toBe(ExitCode.Usage);
    expect(result.err).toContain('error: --permanent takes one claim.');
    expect(server.requests).toEqual([]);
  });
});

describe('Command line: verbs, nouns and global options', () => {
  const page = fakeFetch((request) => ({
    status: 200,
    body: request.url.pathname === '/v1/pools' ? { items: [] } : { items: [] },
  }));

  it.each([
    [['get', 'pools'], 'GET', '/v1/pools?limit=1000'],
    [['get', 'po'], 'GET', '/v1/pools?limit=1000'],
    [['get', 'ranges', '-p', 'services'], 'GET', '/v1/pools/services/ranges'],
    [
      ['get', 'claims', '-p', 'services', '--owner', 'c-19', '--limit', '5'],
      'GET',
      '/v1/pools/services/claims?owner=c-19&limit=5',
    ],
    [
      ['get', 'addresses', '-p', 'services', '--range', 'fd00:10:96::-112'],
      'GET',
      '/v1/pools/services/addresses?range=fd00%3A10%3A96%3A%3A-112&limit=1000',
    ],
    [
      ['get', 'events', '-p', 'services', '--limit', '20', '--cursor', 'abc'],
      'GET',
      '/v1/pools/services/events?limit=20&cursor=abc',
    ],
    [['release-owner', 'services', 'c-19'], 'DELETE', '/v1/pools/services/owners/c-19'],
    [['delete', 'range', 'services', 'fd00:10:96::-112'], 'DELETE', '/v1/pools/services/ranges/fd00:10:96::-112'],
    [['renew', 'services', 'vpn-x', '--ttl', '10m'], 'POST', '/v1/pools/services/claims/vpn-x/renew'],
  ])('%j calls %s %s', async (argv, method, pathAndQuery) => {
    const server = fakeFetch((request) => ({
      status: request.method === 'DELETE' ? 204 : 200,
      body: request.method === 'DELETE' ? undefined : request.method === 'POST' ? claim : { items: [] },
    }));
    const result = await runCli(argv, { fetch: server.fetch });
    expect(result.code).toBe(ExitCode.Ok);
    expect(server.requests.map((r) => [r.method, r.url.pathname + r.url.search])).toEqual([[method, pathAndQuery]]);
  });

  it('consume sends the consumer KIND/NAME/UID as the body, unconsume the uid in the path, and each says what happened', async () => {
    const server = fakeFetch((request) =>
      request.method === 'POST'
        ? { status: 201, body: { ...claim, consumers: [{ kind: 'Pod', name: 'lb-0', uid: '5d2a/x' }] } }
        : { status: 200, body: { uid: '5d2a/x', removed: true, released: true } },
    );
    const added = await runCli(['consume', 'services', 'vip', 'Pod/lb-0/5d2a/x'], { fetch: server.fetch });
    const removed = await runCli(['unconsume', 'services', 'vip', '5d2a/x'], { fetch: server.fetch });
    expect([added.code, removed.code]).toEqual([ExitCode.Ok, ExitCode.Ok]);
    expect(server.requests.map((r) => [r.method, r.url.pathname])).toEqual([
      ['POST', '/v1/pools/services/claims/vip/consumers'],
      ['DELETE', '/v1/pools/services/claims/vip/consumers/5d2a%2Fx'],
    ]);
    expect(JSON.parse(server.requests[0]!.body!)).toEqual({ kind: 'Pod', name: 'lb-0', uid: '5d2a/x' });
    expect(added.out).toContain('consumed by Pod/lb-0 (1 consumer)');
    expect(removed.out).toBe('claim/vip released: 5d2a/x was its last consumer\n');
  });

  it('sends If-Match with --if-version and a TTL body with renew --ttl', async () => {
    const server = fakeFetch((request) => ({
      status: request.method === 'DELETE' ? 204 : 200,
      body: request.method === 'POST' ? claim : undefined,
    }));
    await runCli(['release', 'services', 'dns', '--if-version', '3'], { fetch: server.fetch });
    await runCli(['renew', 'services', 'web', '--ttl', '10m'], { fetch: server.fetch });
    // release reads the claim first (a typo is NotFound, tests/unit/cli-first-day.test.ts), then deletes it
    expect(server.requests.map((r) => [r.method, r.url.pathname])).toEqual([
      ['GET', '/v1/pools/services/claims/dns'],
      ['DELETE', '/v1/pools/services/claims/dns'],
      ['POST', '/v1/pools/services/claims/web/renew'],
    ]);
    expect(server.requests[1]!.headers['if-match']).toBe('"3"');
    expect(JSON.parse(server.requests[2]!.body!)).toEqual({ ttlSeconds: 600 });
  });

  it('acts as a principal on the local stack with --as or IPAM_PRINCIPAL (x-ipam-principal), and refuses it for a deployed stage', async () => {
    const arn = 'arn:aws:iam::123456789012:role/team-a-ci';
    await runCli(['--as', arn, 'get', 'pools'], { fetch: page.fetch });
    await runCli(['get', 'pools'], { fetch: page.fetch, env: { IPAM_PRINCIPAL: arn } });
    await runCli(['get', 'pools'], { fetch: page.fetch });
    expect(page.requests.slice(-3).map((r) => r.headers['x-ipam-principal'])).toEqual([arn, arn, undefined]);
    const deployed = await runCli(
      ['--endpoint', 'https://abc123.execute-api.eu-west-1.amazonaws.com', '--as', arn, 'get', 'pools'],
      { fetch: page.fetch },
    );
    expect(deployed.code).toBe(2);
    expect(deployed.err).toContain('--as (or IPAM_PRINCIPAL) names a principal on the local stack only');
  });

  it('takes the pool from IPAM_POOL and the endpoint from IPAM_ENDPOINT, flags winning over both', async () => {
    await runCli(['get', 'ranges'], {
      fetch: page.fetch,
      env: { IPAM_POOL: 'envpool', IPAM_ENDPOINT: 'http://127.0.0.1:4000' },
    });
    await runCli(['--endpoint', 'http://127.0.0.1:5000/base/', 'get', 'ranges', '-p', 'flagpool'], {
      fetch: page.fetch,
      env: { IPAM_POOL: 'envpool', IPAM_ENDPOINT: 'http://127.0.0.1:4000' },
    });
    expect(page.requests.slice(-2).map((r) => r.url.href)).toEqual([
      'http://127.0.0.1:4000/v1/pools/envpool/ranges',
      'http://127.0.0.1:5000/base/v1/pools/flagpool/ranges',
    ]);
  });

  it("accepts an endpoint that ends with the API's /v1 (the README's $API), and follows $PORT like npm start", async () => {
    await runCli(['--endpoint', 'http://127.0.0.1:4000/v1', 'get', 'pools'], { fetch: page.fetch });
    await runCli(['get', 'pools'], { fetch: page.fetch, env: { IPAM_ENDPOINT: 'http://127.0.0.1:4001/v1/' } });
    await runCli(['get', 'pools'], { fetch: page.fetch, env: { PORT: '4002' } });
    await runCli(['get', 'pools'], {
      fetch: page.fetch,
      env: { PORT: '4002', IPAM_ENDPOINT: 'http://127.0.0.1:4003' },
    });
    expect(page.requests.slice(-4).map((r) => r.url.origin + r.url.pathname)).toEqual([
      'http://127.0.0.1:4000/v1/pools',
      'http://127.0.0.1:4001/v1/pools',
      'http://127.0.0.1:4002/v1/pools',
      'http://127.0.0.1:4003/v1/pools',
    ]);
  });

  it.each([
    [['get', 'ranges'], "required option '-p, --pool <pool>' not specified (or set IPAM_POOL)"],
    [['get', 'pools', '-o', 'xml'], "argument 'xml' is invalid. Allowed choices are wide, json, yaml, name"],
    [['get', 'pools', '--limit', '0'], 'Expected a whole number from 1 to 1000'],
    [['get', 'widgets'], "unknown command 'widgets'"],
    [['frobnicate'], "unknown command 'frobnicate'"],
    [['get', 'pools', '--colour'], "unknown option '--colour'"],
    [['--endpoint', 'ftp://example.invalid', 'get', 'pools'], '--endpoint must be an http or https URL'],
    [['completion', 'fish'], "value 'fish' is invalid"],
  ])('%j is a usage error: exit code 2 with the help', async (argv, message) => {
    const result = await runCli(argv, { fetch: page.fetch });
    expect(result.code).toBe(ExitCode.Usage);
    expect(result.err).toContain(message);
    expect(result.err).toMatch(/Usage: ipam/);
  });

  it('prints help with examples and exits 0 for --help, at the top and for a command', async () => {
    const top = await runCli(['--help']);
    const map = await runCli(['map', '--help']);
    expect(top.code).toBe(ExitCode.Ok);
    expect(top.out).toContain('Usage: ipam [options] [command]');
    expect(top.out).toContain('ipam map services 10.96.0.0-24');
    expect(map.code).toBe(ExitCode.Ok);
    expect(map.out).toContain('Usage: ipam map [options] <pool> <range>');
    expect(map.out).toContain('--svg <file>');
  });

  it('shows the watch defaults as the durations one types (2s, 1h), not milliseconds', async () => {
    const help = await runCli(['get', 'events', '--help']);
    expect(help.out).toMatch(/--interval <duration> +time between two polls of --watch \(default: 2s\)/);
    expect(help.out).toMatch(/--watch-for <duration> +how long --watch runs at most \(default: 1h\)/);
  });
});

describe('Command line: errors a person can act on', () => {
  it('prints a problem document as one line `error: <code>: <detail>` and exits 1', async () => {
    const server = fakeFetch(() => ({
      status: 409,
      contentType: 'application/problem+json',
      body: {
        type: 'https://ipam.dev/problems/RangeFull',
        title: 'Range full',
        status: 409,
        detail: 'No free IPv4 address is left in pool "services".',
        code: 'RangeFull',
      },
    }));
    const result = await runCli(['claim', 'services', '--name', 'x', '--owner', 'S/x/1'], { fetch: server.fetch });
    expect(result).toEqual({
      code: ExitCode.Failure,
      out: '',
      err: 'error: RangeFull: No free IPv4 address is left in pool "services".\n',
      files: new Map(),
    });
  });

  it('prints AddressReleasing (an address held for its previous owner) the same way', async () => {
    const detail =
      'Address 10.244.0.77 was released recently and is held for its previous owner "Pod"/"web-0" until 2026-04-02T10:10:00.000Z; only that owner may claim it before then.';
    const server = fakeFetch(() => ({
      status: 409,
      contentType: 'application/problem+json',
      body: { status: 409, title: 'Address held after release', detail, code: 'AddressReleasing' },
    }));
    const result = await runCli(
      ['claim', 'pods', '--name', 'other', '--owner', 'Pod/db-0/d4', '--address', '10.244.0.77'],
      { fetch: server.fetch },
    );
    expect(result).toMatchObject({ code: ExitCode.Failure, out: '', err: `error: AddressReleasing: ${detail}\n` });
  });

  it('names the endpoint and suggests npm start when the connection is refused', async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:3000'), { code: 'ECONNREFUSED' });
    const result = await runCli(['get', 'pools'], { fetch: fakeFetch(() => refused).fetch });
    expect(result.code).toBe(ExitCode.Failure);
    expect(result.err).toBe(
      'error: cannot connect to http://127.0.0.1:3000 (connection refused): is the local stack running? Start it with `npm start`, or pass --endpoint URL (or set IPAM_ENDPOINT).\n',
    );
  });

  it("prints API Gateway's own refusal (not a problem document) with its status", async () => {
    const result = await runCli(['get', 'pools'], {
      fetch: fakeFetch(() => ({ status: 403, body: { message: 'Forbidden' } })).fetch,
    });
    expect(result).toMatchObject({ code: ExitCode.Failure, err: 'error: HTTP 403: Forbidden\n' });
  });

  it('prints the request and the response on stderr with --verbose, and the output on stdout as usual', async () => {
    const server = fakeFetch(() => ({
      status: 200,
      body: { items: [{ name: 'services', exclude: [], createdAt: '2026-04-02T09:00:00Z' }] },
    }));
    const result = await runCli(['get', 'pools', '--verbose'], { fetch: server.fetch });
    expect(result.code).toBe(ExitCode.Ok);
    expect(result.err).toContain('> GET http://127.0.0.1:3000/v1/pools?limit=1000\n');
    expect(result.err).toMatch(/< 200 \(\d+ ms\)\n/);
    expect(result.err).toContain('< {"items":[{"name":"services"');
    expect(result.out).toBe('NAME       EXCLUDE   AGE\nservices   <none>    60m\n');
  });
});

describe('Command line: block pools and nested pools (issue 35)', () => {
  const echo = (extra: Record<string, unknown>) =>
    fakeFetch((request) => ({
      status: 201,
      body: {
        exclude: [],
        reuseDelaySeconds: 0,
        createdAt: '2026-04-02T09:59:00Z',
        ...JSON.parse(request.body!),
        ...extra,
      },
    }));

  it('sends --block /26 and --block6 /64 as blockPrefixLength and says so', async () => {
    const server = echo({});
    const result = await runCli(['create', 'pool', 'nodes', '--block', '/26', '--block6', '64'], {
      fetch: server.fetch,
    });
    expect(result).toMatchObject({
      code: ExitCode.Ok,
      out: 'pool/nodes created, blocks IPv4 /26, IPv6 /64\n',
      err: '',
    });
    expect(JSON.parse(server.requests[0]!.body!)).toEqual({ name: 'nodes', blockPrefixLength: { IPv4: 26, IPv6: 64 } });
  });

  it.each([['/33'], ['/0'], ['twenty']])('refuses --block %s with exit code 2 and sends nothing', async (text) => {
    const server = echo({});
    const result = await runCli(['create', 'pool', 'nodes', '--block', text], { fetch: server.fetch });
    expect(result.code).toBe(ExitCode.Usage);
    expect(result.err).toContain('a prefix length from /1 to /32');
    expect(server.requests).toEqual([]);
  });

  it('sends --dns-zone [--dns-ttl] [--dns-reverse] [--dns-target] as the pool dns and says so', async () => {
    const server = echo({});
    const local = await runCli(['create', 'pool', 'pods', '--dns-zone', 'pods.example.internal'], {
      fetch: echo({ dns: { zone: 'pods.example.internal.', ttlSeconds: 60, reverse: false, target: { local: {} } } })
        .fetch,
    });
    const full = await runCli(
      [
        ...'create pool svc --dns-zone svc.example.internal. --dns-ttl 5m --dns-reverse --dns-target'.split(' '),
        '{"route53":{"hostedZoneId":"Z1"}}',
      ],
      { fetch: server.fetch },
    );
    expect(local).toMatchObject({
      code: ExitCode.Ok,
      out: 'pool/pods created, dns pods.example.internal. (local target)\n',
    });
    expect(full.out).toBe('pool/svc created, dns svc.example.internal. (route53 target, reverse)\n');
    expect(JSON.parse(server.requests[0]!.body!)).toEqual({
      name: 'svc',
      dns: {
        zone: 'svc.example.internal.',
        ttlSeconds: 300,
        reverse: true,
        target: { route53: { hostedZoneId: 'Z1' } },
      },
    });
  });

  it.each([
    ['a ttl without a zone', ['--dns-ttl', '60'], 'give it with --dns-zone ZONE'],
    ['a target that is not JSON', ['--dns-zone', 'a.', '--dns-target', 'route53'], 'Expected a JSON object'],
    ['a ttl past a day', ['--dns-zone', 'a.', '--dns-ttl', '25h'], 'Expected a duration of at most'],
  ])('refuses %s with exit code 2 and sends nothing', async (_case, flags, message) => {
    const server = echo({});
    const result = await runCli(['create', 'pool', 'pods', ...flags], { fetch: server.fetch });
    expect(result.code).toBe(ExitCode.Usage);
    expect(result.err).toContain(message);
    expect(server.requests).toEqual([]);
  });

  it('sends --grow PARENT --grow-below-free N [--grow-max-blocks M] as the grow rule and says so', async () => {
    const server = echo({});
    const full = await runCli(
      'create pool node-1 --block /26 --grow region --grow-below-free 4 --grow-max-blocks 2'.split(' '),
      { fetch: server.fetch },
    );
    const plain = await runCli(['create', 'pool', 'pods', '--grow', 'region', '--grow-below-free', '1'], {
      fetch: server.fetch,
    });
    expect(full).toMatchObject({
      code: ExitCode.Ok,
      out: 'pool/node-1 created, blocks IPv4 /26, grows from region: one more block when fewer than 4 blocks are free (at most 2 blocks a family)\n',
      err: '',
    });
    expect(plain.out).toBe(
      'pool/pods created, grows from region: one more block when fewer than 1 address is free (at most 16 blocks a family)\n',
    );
    expect(server.requests.map((r) => JSON.parse(r.body!) as unknown)).toEqual([
      { name: 'node-1', blockPrefixLength: { IPv4: 26 }, grow: { pool: 'region', belowFree: 4, maxBlocks: 2 } },
      { name: 'pods', grow: { pool: 'region', belowFree: 1 } },
    ]);
  });

  it.each([
    ['a threshold without a parent', ['--grow-below-free', '4'], 'give the parent pool with --grow PARENT'],
    ['a bound without a parent', ['--grow-max-blocks', '2'], 'give the parent pool with --grow PARENT'],
    ['a parent without a threshold', ['--grow', 'region'], '--grow needs --grow-below-free N'],
    ['a threshold of 0', ['--grow', 'region', '--grow-below-free', '0'], 'Expected a whole number from 1 to'],
    ['a threshold not a number', ['--grow', 'region', '--grow-below-free', 'four'], 'Expected a whole number'],
    ['a fractional threshold', ['--grow', 'region', '--grow-below-free', '2.5'], 'Expected a whole number'],
    [
      'more than 64 blocks',
      ['--grow', 'region', '--grow-below-free', '4', '--grow-max-blocks', '65'],
      'Expected a whole number from 1 to 64.',
    ],
  ])('refuses %s with exit code 2 and sends nothing', async (_case, flags, message) => {
    const server = echo({});
    const result = await runCli(['create', 'pool', 'node-1', '--block', '/26', ...flags], { fetch: server.fetch });
    expect(result.code).toBe(ExitCode.Usage);
    expect(result.err).toContain(message);
    expect(result.err).toContain('Usage: ipam create pool [options] <name>');
    expect(server.requests).toEqual([]);
  });

  it('sends --source POOL/CLAIM as the range source, and refuses one without a claim', async () => {
    const server = fakeFetch((request) => ({
      status: 201,
      body: {
        name: 'r',
        family: 'IPv4',
        state: 'Ready',
        legacy: false,
        size: 256,
        used: 0,
        releasing: 0,
        free: 256,
        ...JSON.parse(request.body!),
      },
    }));
    const made = await runCli(['create', 'range', 'eu-west', '10.17.0.0/16', '--source', 'org/eu-west'], {
      fetch: server.fetch,
    });
    const bad = await runCli(['create', 'range', 'eu-west', '10.17.0.0/16', '--source', 'org'], {
      fetch: server.fetch,
    });
    expect(made.code).toBe(ExitCode.Ok);
    expect(JSON.parse(server.requests[0]!.body!)).toEqual({
      cidr: '10.17.0.0/16',
      source: { pool: 'org', claim: 'eu-west' },
    });
    expect(bad.code).toBe(ExitCode.Usage);
    expect(bad.err).toContain('POOL/CLAIM');
    expect(server.requests).toHaveLength(1);
  });

  /** A server answering a claim request with a preview of it (the request's fields, and `extra`). */
  const previewing = (extra: Record<string, unknown>) =>
    fakeFetch((request) => ({
      status: 200,
      body: {
        uid: 'u',
        ipFamilyPolicy: 'SingleStack',
        ipFamilies: ['IPv4'],
        labels: {},
        createdAt: '2026-04-02T09:59:00Z',
        version: 1,
        detail: 'not a hold',
        ...JSON.parse(request.body!),
        ...extra,
      },
    }));

  it("shows a preview's growth: the blocks a real claim would first take from the parent", async () => {
    const server = previewing({
      addresses: [{ address: '10.9.0.9', family: 'IPv4', range: 'g4-1' }],
      grows: [{ pool: 'top', claim: 'pods-g4-1', range: 'g4-1', cidr: '10.9.0.8/29' }],
    });
    const result = await runCli(['claim', 'pods', '--name', 'p1', '--owner', 'Pod/p1/x', '--dry-run'], {
      fetch: server.fetch,
    });
    expect(result).toMatchObject({
      code: ExitCode.Ok,
      out:
        'claim/p1 would be made (dry run, nothing written, not a hold): 10.9.0.9 (g4-1)\n' +
        'The pool would first grow: block 10.9.0.8/29 of pool top (its claim pods-g4-1) as range g4-1.\n',
    });
  });

  it('sends --prefix and --dry-run, and shows a preview with its block as a CIDR', async () => {
    const server = previewing({
      addresses: [{ address: '10.244.0.64', family: 'IPv4', range: 'r', prefix: '10.244.0.64/26' }],
    });
    const result = await runCli(
      ['claim', 'nodes', '--name', 'n1', '--owner', 'Node/n1/x', '--prefix', '10.244.0.64/26', '--dry-run'],
      { fetch: server.fetch },
    );
    expect(result).toMatchObject({
      code: ExitCode.Ok,
      out: 'claim/n1 would be made (dry run, nothing written, not a hold): 10.244.0.64/26 (r)\n',
    });
    expect(JSON.parse(server.requests[0]!.body!)).toMatchObject({ prefixes: ['10.244.0.64/26'], dryRun: true });
  });
});
