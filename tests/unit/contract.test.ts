import { describe, expect, it } from 'vitest';
import { claimDto, leaseDto, poolDetailsDto, poolDto, rangeDto } from '../../shared/adapters/http/dto.ts';
import type { Claim, Lease, Pool, Range, Utilization } from '../../shared/core/model.ts';
import { contractViolations } from '../support/contract.ts';

// The int tier checks every response it reads against openapi.yaml (tests/support/api.ts); here the DTOs are checked
// with every optional field filled in, which the int tier's answers may not all carry, and the checker itself is
// checked to fail on what it should.

const JSON_TYPE = { 'content-type': 'application/json' };
const BY = { arn: 'arn:aws:iam::123456789012:role/admin', session: 'alice' };
const OWNER = { kind: 'Pod', name: 'web-0', uid: 'u-1' };
const USAGE: Utilization = { size: 254n, used: 1n, releasing: 1n, free: 252n };

const pool: Pool = {
  name: 'p',
  exclude: ['10.0.0.1'],
  createdAt: '2026-11-26T10:00:00.000Z',
  reuseDelaySeconds: 60,
  historyDays: 7,
  access: {
    administrators: ['arn:aws:iam::123456789012:role/admin'],
    allocators: ['arn:aws:iam::123456789012:role/cni-*'],
  },
};
const range: Range = {
  pool: 'p',
  name: 'r',
  cidr: '10.0.0.0/24',
  family: 'IPv4',
  state: 'Terminating',
  legacy: true,
  createdAt: '2026-11-26T10:00:00.000Z',
  deletionRequestedAt: '2026-11-26T11:00:00.000Z',
};
const claim: Claim = {
  pool: 'p',
  name: 'web-abcde',
  uid: 'c-1',
  spec: {
    owner: OWNER,
    ipFamilyPolicy: 'SingleStack',
    ipFamilies: ['IPv4'],
    addresses: [],
    ttlSeconds: 60,
    generateName: 'web-',
    count: 2,
    labels: { app: 'web' },
  },
  addresses: [
    { address: '10.0.0.2', family: 'IPv4', range: 'r' },
    { address: '10.0.0.3', family: 'IPv4', range: 'r' },
  ],
  createdAt: '2026-11-26T10:00:00.000Z',
  expiresAt: Date.parse('2026-11-26T10:01:00.000Z'),
  version: 3,
  createdBy: BY,
};
const allocated: Lease = {
  pool: 'p',
  address: '10.0.0.2',
  family: 'IPv4',
  range: 'r',
  claim: 'web-abcde',
  claimUid: 'c-1',
  owner: OWNER,
  createdAt: '2026-11-26T10:00:00.000Z',
  expiresAt: Date.parse('2026-11-26T10:02:00.000Z'),
  state: 'Allocated',
};
const released: Lease = {
  ...allocated,
  claimUid: '',
  state: 'Released',
  releasedAt: '2026-11-26T10:00:30.000Z',
  releasedBy: BY,
};

const violations = (method: string, path: string, status: number, body: unknown) =>
  contractViolations(method, path, status, JSON_TYPE, body);

describe('Contract: the DTOs against openapi.yaml, every optional field filled in', () => {
  it.each([
    [
      'a pool',
      'GET',
      '/v1/pools/p',
      poolDetailsDto({
        pool,
        ranges: [{ range, utilization: USAGE }],
        utilization: { IPv4: USAGE },
        warnings: {
          IPv4: { below: 5, since: '2035-01-01T00:00:00.000Z' },
          IPv6: { below: 'full', since: '2035-01-01T00:00:00.000Z' },
        },
      }),
    ],
    ['a pool page', 'GET', '/v1/pools', { items: [poolDto(pool)], nextCursor: 'x' }],
    ['a range', 'GET', '/v1/pools/p/ranges/r', rangeDto(range, USAGE)],
    ['a claim', 'GET', '/v1/pools/p/claims/web-abcde', claimDto(claim)],
    ['an Allocated lease', 'GET', '/v1/pools/p/addresses/10.0.0.2', leaseDto(allocated)],
    ['a Released lease', 'GET', '/v1/pools/p/addresses/10.0.0.2', leaseDto(released)],
  ])('%s conforms', (_what, method, path, body) => {
    expect(violations(method, path, 200, body)).toEqual([]);
  });
});

describe('Function: contractViolations', () => {
  it('names a field the schema does not list, also inside an allOf and a oneOf branch', () => {
    expect(violations('GET', '/v1/pools/p/claims/c', 200, { ...claimDto(claim), surprise: 1 }).join()).toContain(
      '(surprise)',
    );
    const details = poolDetailsDto({ pool, ranges: [], utilization: {}, warnings: {} });
    expect(violations('GET', '/v1/pools/p', 200, { ...details, surprise: 1 }).join()).toContain('(surprise)');
    expect(
      violations('GET', '/v1/pools/p/addresses/10.0.0.2', 200, { ...leaseDto(released), claim: 'web-abcde' }),
    ).not.toEqual([]);
  });

  it('names a required field that is missing, and a value of the wrong type', () => {
    const { version: _version, ...noVersion } = claimDto(claim);
    expect(violations('GET', '/v1/pools/p/claims/c', 200, noVersion).join()).toContain(
      "must have required property 'version'",
    );
    expect(
      violations('GET', '/v1/pools/p/claims/c', 200, { ...claimDto(claim), createdAt: 'yesterday' }).join(),
    ).toContain('/createdAt must match format "date-time"');
  });

  it('refuses a status the operation does not document, and a body where it documents none', () => {
    expect(violations('GET', '/v1/pools/p/claims/c', 418, {})).toEqual([
      'GET /v1/pools/p/claims/c -> 418: status 418 is not documented for GET /v1/pools/{pool}/claims/{claim}',
    ]);
    expect(violations('DELETE', '/v1/pools/p/claims/c', 204, { released: true })).toEqual([
      'DELETE /v1/pools/p/claims/c -> 204: a body where openapi.yaml documents none',
    ]);
    expect(violations('DELETE', '/v1/pools/p/claims/c', 204, undefined)).toEqual([]);
    const throttled = { type: 'about:blank', title: 'Not Ready', status: 503, detail: 'Try again.', code: 'NotReady' };
    expect(
      contractViolations(
        'DELETE',
        '/v1/pools/p/owners/u',
        503,
        { 'content-type': 'application/problem+json' },
        throttled,
      ),
    ).toEqual([]);
  });

  it('checks a route the document lacks as a problem document', () => {
    const problem = {
      type: 'about:blank',
      title: 'Not Found',
      status: 404,
      detail: 'No route GET /v2.',
      code: 'NotFound',
    };
    const problemType = { 'content-type': 'application/problem+json' };
    expect(contractViolations('GET', '/v2', 404, problemType, problem)).toEqual([]);
    expect(contractViolations('GET', '/v2', 404, problemType, { message: 'Not Found' })).not.toEqual([]);
    expect(violations('GET', '/v2', 404, problem).join()).toContain(
      'content type "application/json" is not documented',
    );
  });
});
