import { describe, expect, it } from 'vitest';
import { testApi, type ApiResponse, type TestApi } from '../support/api.ts';
import { owner } from '../support/fakes.ts';
import { allItems } from '../support/items.ts';

/**
 * Issue 15, defect 5: dynamic claims racing a DELETE of a range, from warm containers whose cached pool views (the
 * default age) still say Ready. After the DELETE's answer, no claim sent after it holds an address of that range, and
 * no lease is left in a range that is gone.
 *
 * A property check under real concurrency, not a reliable reproduction: in one run against the code before the
 * post-commit check (72c972e) it passed too (the window is a cached view's last second, and timing decides whether a
 * claim lands in it). The deterministic reproduction is in tests/cases/claims.cases.ts ("a range retired under a warm
 * container's view"), which fails on that code.
 */
describe('Terminating under concurrent claims (DynamoDB Local)', () => {
  it('gives no claim sent after the DELETE answered an address of that range, and leaves no lease in a deleted range', async () => {
    // Prepare: ranges 'going' and 'staying'; c0 holds an address of 'going', so the DELETE answers 202
    const api = await testApi();
    expect((await api.call('POST', '/v1/pools', { name: 'p' })).status).toBe(201);
    expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.70.0.0/26', name: 'going' })).status).toBe(201);
    expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.71.0.0/26', name: 'staying' })).status).toBe(201);
    expect((await api.call('POST', '/v1/pools/p/claims', { name: 'c0', owner: owner('u0'), addresses: ['10.70.0.1'] })).status).toBe(201);
    const containers = [api.sibling(), api.sibling(), api.sibling()];
    // Warm views: each container has just allocated once (both ranges Ready in its cache).
    for (const [i, c] of containers.entries()) expect((await c.call('POST', '/v1/pools/p/claims', { name: `warm${i}`, owner: owner(`w${i}`) })).status).toBe(201);
    // Act: claims stream from the warm containers while another container deletes 'going'
    let answeredAt: number | undefined;
    const sent: { at: number; res: Promise<ApiResponse> }[] = [];
    const deletion = api.call('DELETE', '/v1/pools/p/ranges/going').then((res) => {
      answeredAt = Date.now();
      return res;
    });
    let n = 0;
    const deadline = Date.now() + 60_000;
    // Six workers (two per container) send claims one after another until each sent 4 after the DELETE's answer.
    const worker = async (c: TestApi): Promise<void> => {
      let afterAnswer = 0;
      while (afterAnswer < 4 && Date.now() < deadline) {
        n += 1;
        const at = Date.now();
        const res = c.call('POST', '/v1/pools/p/claims', { name: `c${n}`, owner: owner(`u${n}`) });
        sent.push({ at, res });
        await res;
        if (answeredAt !== undefined && at > answeredAt) afterAnswer += 1;
      }
    };
    await Promise.all([...containers, ...containers].map(worker));
    const deleted = await deletion;
    const results = await Promise.all(sent.map(async (s) => ({ at: s.at, res: await s.res })));
    // Assess
    expect([202, 204]).toContain(deleted.status);
    const after = results.filter((r) => r.at > answeredAt!);
    expect(after.length).toBeGreaterThanOrEqual(24);
    for (const { res } of after) {
      expect(res.status).toBe(201);
      const addresses = res.body.addresses as { address: string; range: string }[];
      expect(addresses.every((a) => a.range === 'staying' && a.address.startsWith('10.71.0.'))).toBe(true);
    }
    const items = await allItems(api.container.table);
    const ranges = new Set(items.filter((x) => x.entity === 'range').map((x) => x.name as string));
    const strays = items.filter((x) => x.entity === 'lease' && !ranges.has(x.range as string));
    expect(strays).toEqual([]);
    // Every claim answered 201 holds its lease, and the only lease in 'going' that outlived the race may be one that committed before the mark.
    const going = items.filter((x) => x.entity === 'lease' && x.range === 'going').map((x) => x.claim);
    expect(going).toContain('c0');
  }, 120_000);
});
