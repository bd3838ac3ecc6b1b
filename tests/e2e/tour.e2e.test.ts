import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { LocalStack } from '../../scripts/local-stack.ts';
import { callApi, startTestStack } from '../support/local-stack.ts';

const scheduleEvent: unknown = JSON.parse(readFileSync(new URL('../../events/schedule.json', import.meta.url), 'utf8'));
type Body = Record<string, unknown> & { items?: Record<string, unknown>[]; addresses?: { address: string; family: string }[] };

/**
 * The whole service over HTTP on the local stack, with the real handlers: the API writes leases, the stream poller
 * feeds them to the mirror (the legacy bitmaps follow), and the reconciler releases what expired.
 */
describe('Local stack: allocation, stream mirror and reconciler end to end', () => {
  let stack: LocalStack;
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await callApi(stack, method, path, body);
    return { status: res.status, body: (res.body ?? {}) as Body };
  };

  beforeAll(async () => {
    stack = await startTestStack({ params: { reconcileExpiredGraceSeconds: '0' } });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('mirrors a dual-stack claim into both legacy bitmaps, and the reconciler releases it once expired', async () => {
    // Prepare: a pool whose two ranges are the legacy (bitmap-mirrored) ranges of their families.
    expect((await call('POST', '/v1/pools', { name: 'tour' })).status).toBe(201);
    expect((await call('POST', '/v1/pools/tour/ranges', { cidr: '10.96.0.0/24', legacy: true })).status).toBe(201);
    expect((await call('POST', '/v1/pools/tour/ranges', { cidr: 'fd00:10:96::/112', legacy: true })).status).toBe(201);

    // Act 1: a leased dual-stack claim through the API.
    const claim = await call('POST', '/v1/pools/tour/claims', {
      name: 'web',
      owner: { kind: 'Service', name: 'web', uid: 'svc-1' },
      ipFamilyPolicy: 'RequireDualStack',
      addresses: ['10.96.0.10', 'fd00:10:96::a'],
      ttlSeconds: 1,
    });
    expect(claim.status).toBe(201);
    expect(claim.body.addresses!.map((a) => a.address)).toEqual(['10.96.0.10', 'fd00:10:96::a']);

    // Assess 1: the mirror, fed by the table's stream, sets bit 9 (address network+10) in each bitmap.
    // Bit 9 of a big-endian big.Int is 0x02 in the second-to-last byte: bytes [0x02, 0x00], base64 "AgA=".
    for (const range of ['10.96.0.0-24', 'fd00:10:96::-112']) {
      await vi.waitFor(
        async () => {
          const bitmap = await call('GET', `/v1/pools/tour/ranges/${range}/allocation`);
          expect(bitmap.status).toBe(200);
          expect(bitmap.body.data).toBe('AgA=');
          expect(bitmap.body.version).toBeGreaterThan(0);
        },
        { timeout: 30_000, interval: 250 },
      );
    }

    // Act 2: once the TTL has passed, one reconciler run (the scheduled function, through offline's Lambda API).
    await vi.waitFor(async () => expect((await call('GET', '/v1/pools/tour/claims/web')).status).toBe(404), { timeout: 10_000, interval: 200 });
    await stack.invoke('reconciler', scheduleEvent);

    // Assess 2: the claim was released with an event, and the mirror cleared both bitmaps.
    await vi.waitFor(
      async () => {
        const events = await call('GET', '/v1/pools/tour/events');
        expect((events.body.items ?? []).map((e) => e.reason)).toContain('ClaimExpired');
      },
      { timeout: 30_000, interval: 250 },
    );
    for (const range of ['10.96.0.0-24', 'fd00:10:96::-112']) {
      await vi.waitFor(async () => expect((await call('GET', `/v1/pools/tour/ranges/${range}/allocation`)).body.data).toBe(''), {
        timeout: 30_000,
        interval: 250,
      });
    }
    expect((await call('GET', '/v1/pools/tour/addresses')).body.items).toEqual([]);
    expect(stack.poller!.failures()).toEqual([]);
  });
});
