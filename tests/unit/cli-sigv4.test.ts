import { createHash, createHmac } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { regionFromHost, resolveRegion, sigV4Signer } from '../../cli/api/sigv4.ts';
import { fakeFetch, runCli, type RecordedRequest } from '../support/cli.ts';

/** The credentials and time of AWS's published SigV4 test suite (aws-sig-v4-test-suite). */
const SUITE = {
  credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' },
  region: 'us-east-1',
  service: 'service',
  now: () => new Date('2015-08-30T12:36:00Z'),
};
const SCOPE = 'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request';

describe('SigV4: the published test-suite vectors', () => {
  it.each([
    [
      'get-vanilla',
      'GET',
      'https://example.amazonaws.com/',
      'SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
    ],
    [
      'post-vanilla',
      'POST',
      'https://example.amazonaws.com/',
      'SignedHeaders=host;x-amz-date, Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b',
    ],
    [
      'get-vanilla-query-order-key-case',
      'GET',
      'https://example.amazonaws.com/?Param2=value2&Param1=value1',
      'SignedHeaders=host;x-amz-date, Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500',
    ],
  ])('%s signs as AWS publishes', async (_name, method, url, expected) => {
    const sign = sigV4Signer(SUITE);
    const headers = await sign({ method, url: new URL(url), headers: {} });
    expect(headers.authorization).toBe(`${SCOPE}, ${expected}`);
    expect(headers['x-amz-date']).toBe('20150830T123600Z');
    expect(headers.host).toBeUndefined();
  });
});

/**
 * SigV4 written out step by step with node:crypto from the specification (canonical request, string to sign,
 * derived key), independent of the AWS SDK: the check that what the CLI sends is what API Gateway recomputes.
 * Path segments are URI-encoded twice, as for every service but S3.
 */
function independentSignature(
  request: RecordedRequest,
  secret: string,
  region: string,
): { signedHeaders: string; signature: string; scope: string } {
  const amzDate = request.headers['x-amz-date']!;
  const date = amzDate.slice(0, 8);
  const encode = (s: string) =>
    encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  const canonicalUri = request.url.pathname.split('/').map(encode).join('/');
  const canonicalQuery = [...request.url.searchParams]
    .map(([k, v]) => [encode(k), encode(v)] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const headers: Record<string, string> = { ...request.headers, host: request.url.host };
  delete headers.authorization;
  const names = Object.keys(headers)
    .map((h) => h.toLowerCase())
    .sort();
  const canonicalHeaders = names.map((name) => `${name}:${headers[name]!.trim()}\n`).join('');
  const signedHeaders = names.join(';');
  const payloadHash = createHash('sha256')
    .update(request.body ?? '')
    .digest('hex');
  const canonicalRequest = [
    request.method,
    canonicalUri,
    canonicalQuery,
    canonicalHeaders,
    signedHeaders,
    payloadHash,
  ].join('\n');
  const scope = `${date}/${region}/execute-api/aws4_request`;
  const stringToSign = [
    'AWS4-HMAC-SHA256',
    amzDate,
    scope,
    createHash('sha256').update(canonicalRequest).digest('hex'),
  ].join('\n');
  const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();
  const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), 'execute-api'), 'aws4_request');
  return { signedHeaders, signature: createHmac('sha256', key).update(stringToSign).digest('hex'), scope };
}

const CLAIM = {
  name: 'web',
  uid: 'u',
  owner: { kind: 'Service', name: 'web', uid: '3f1c' },
  ipFamilyPolicy: 'SingleStack',
  ipFamilies: ['IPv4'],
  addresses: [],
  createdAt: '2026-04-02T09:00:00Z',
  version: 1,
};
const HTTPS = 'https://abc123xyz.execute-api.eu-west-1.amazonaws.com';

describe('SigV4: what ipam sends', () => {
  beforeEach(() => {
    // The credential chain reads the environment first: give it known keys, and nothing else to find.
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'AKIDTESTKEY');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'secret/test+key');
    vi.stubEnv('AWS_SESSION_TOKEN', 'session-token-value');
    vi.stubEnv('AWS_PROFILE', '');
    vi.stubEnv('AWS_REGION', '');
    vi.stubEnv('AWS_DEFAULT_REGION', '');
  });
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('signs a request to an https endpoint so that an independent SigV4 computation agrees', async () => {
    // Prepare
    const server = fakeFetch(() => ({ status: 201, body: CLAIM }));

    // Act: a claim with a body, an IPv6 range name in another path (its ':' verbatim on the wire, encoded once in the canonical request) and a query string.
    const claim = await runCli(
      ['--endpoint', HTTPS, 'claim', 'services', '--name', 'web', '--owner', 'Service/web/3f1c'],
      { fetch: server.fetch },
    );
    const list = await runCli(
      ['--endpoint', HTTPS, 'get', 'addresses', '-p', 'services', '--range', 'fd00:10:96::-112', '--limit', '5'],
      {
        fetch: fakeFetch(() => ({ status: 200, body: { items: [] } })).fetch,
      },
    );
    const listing = fakeFetch(() => ({ status: 200, body: { items: [] } }));
    await runCli(['--endpoint', `${HTTPS}/`, 'delete', 'range', 'services', 'fd00:10:96::-112'], {
      fetch: listing.fetch,
    });

    // Assess
    expect(claim.code).toBe(0);
    expect(list.code).toBe(0);
    for (const request of [server.requests[0]!, listing.requests[0]!]) {
      const expected = independentSignature(request, 'secret/test+key', 'eu-west-1');
      expect(request.headers.authorization).toBe(
        `AWS4-HMAC-SHA256 Credential=AKIDTESTKEY/${expected.scope}, SignedHeaders=${expected.signedHeaders}, Signature=${expected.signature}`,
      );
      expect(request.headers['x-amz-date']).toMatch(/^\d{8}T\d{6}Z$/);
      expect(request.headers['x-amz-security-token']).toBe('session-token-value');
      expect(expected.signedHeaders.split(';')).toEqual(
        expect.arrayContaining(['host', 'x-amz-date', 'x-amz-security-token']),
      );
    }
    expect(listing.requests[0]!.url.pathname).toBe('/v1/pools/services/ranges/fd00:10:96::-112'); // names go verbatim: the API refuses '%' in them
  });

  it('sends no signature and looks up no credentials for an http endpoint', async () => {
    vi.stubEnv('AWS_ACCESS_KEY_ID', '');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', '');
    const server = fakeFetch(() => ({ status: 201, body: CLAIM }));
    const result = await runCli(
      ['--endpoint', 'http://127.0.0.1:3000', 'claim', 'services', '--name', 'web', '--owner', 'Service/web/3f1c'],
      { fetch: server.fetch },
    );
    expect(result.code).toBe(0);
    const headers = server.requests[0]!.headers;
    expect(headers.authorization).toBeUndefined();
    expect(headers['x-amz-date']).toBeUndefined();
    expect(headers['x-amz-security-token']).toBeUndefined();
    expect(headers).toEqual({ accept: 'application/json', 'content-type': 'application/json' });
  });

  it('uses the credentials of --profile from the shared files', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ipam-profile-'));
    try {
      writeFileSync(
        join(dir, 'credentials'),
        '[ops]\naws_access_key_id = AKIDPROFILEOPS\naws_secret_access_key = ops-secret\n',
      );
      writeFileSync(join(dir, 'config'), '');
      vi.stubEnv('AWS_SHARED_CREDENTIALS_FILE', join(dir, 'credentials'));
      vi.stubEnv('AWS_CONFIG_FILE', join(dir, 'config'));
      const server = fakeFetch(() => ({ status: 200, body: { items: [] } }));
      const result = await runCli(['--endpoint', HTTPS, '--profile', 'ops', 'get', 'pools'], { fetch: server.fetch });
      expect(result.code).toBe(0);
      const request = server.requests[0]!;
      const expected = independentSignature(request, 'ops-secret', 'eu-west-1');
      expect(request.headers.authorization).toBe(
        `AWS4-HMAC-SHA256 Credential=AKIDPROFILEOPS/${expected.scope}, SignedHeaders=${expected.signedHeaders}, Signature=${expected.signature}`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('redacts the session token in --verbose output and says what it signs for', async () => {
    const result = await runCli(['--endpoint', HTTPS, '-v', 'get', 'pools'], {
      fetch: fakeFetch(() => ({ status: 200, body: { items: [] } })).fetch,
    });
    expect(result.err).toContain('* signing for execute-api in eu-west-1\n');
    expect(result.err).toContain('> x-amz-security-token: <redacted>\n');
    expect(result.err).not.toContain('session-token-value');
    expect(result.err).toMatch(/> authorization: AWS4-HMAC-SHA256 Credential=AKIDTESTKEY\//);
  });

  it('fails with exit 1 and says what to do when no region can be told for a custom domain', async () => {
    const result = await runCli(['--endpoint', 'https://ipam.example.com', 'get', 'pools'], {
      fetch: fakeFetch(() => ({ status: 200, body: { items: [] } })).fetch,
    });
    expect(result).toMatchObject({
      code: 1,
      err: 'error: cannot tell which AWS region https://ipam.example.com is in: pass --region or set AWS_REGION.\n',
    });
  });
});

describe('SigV4: the region', () => {
  it("reads an execute-api hostname's region", () => {
    expect(regionFromHost('abc123xyz.execute-api.eu-west-1.amazonaws.com')).toBe('eu-west-1');
    expect(regionFromHost('abc123.execute-api.cn-north-1.amazonaws.com.cn')).toBe('cn-north-1');
    expect(regionFromHost('ipam.example.com')).toBeUndefined();
  });

  it('takes --region first, then the hostname, then AWS_REGION and AWS_DEFAULT_REGION', () => {
    const apiGateway = new URL('https://abc.execute-api.eu-west-1.amazonaws.com');
    const custom = new URL('https://ipam.example.com');
    expect(resolveRegion(apiGateway, 'us-east-2', { AWS_REGION: 'ap-south-1' })).toBe('us-east-2');
    expect(resolveRegion(apiGateway, undefined, { AWS_REGION: 'ap-south-1' })).toBe('eu-west-1');
    expect(resolveRegion(custom, undefined, { AWS_REGION: 'ap-south-1', AWS_DEFAULT_REGION: 'sa-east-1' })).toBe(
      'ap-south-1',
    );
    expect(resolveRegion(custom, undefined, { AWS_DEFAULT_REGION: 'sa-east-1' })).toBe('sa-east-1');
    expect(() => resolveRegion(custom, undefined, {})).toThrow('pass --region or set AWS_REGION');
  });
});
