import { describe, expect, it } from 'vitest';
import { testApi, type ApiResponse, type TestApi } from '../support/api.ts';
import { owner } from '../support/fakes.ts';
import { allItems } from '../support/items.ts';

/**
 * Issue 15, defect 5: dynamic claims racing a DELETE of a range, from warm containers whose cached pool views (the
 * default age) still say Ready. After the DELETE's answer, no claim sent after it holds an address of that range, and
 * no lease is left in a range that is gone.
 *
 * The first test is a property check under real concurrency, not a reliable reproduction: in one run against the
 * code before the post-commit check (72c972e) it passed too (the window is a cached view's last second, and timing
 * decides whether a claim lands in it). The two tests marked "reliably" reproduce it: their containers trust their
 * views for an hour, so every claim they send falls inside the window. On 49d17b2 each failed in every run: all 24
 * claims sent after the 202 got 201 with addresses of 'going'; and after a DELETE that removed 'going' at once, all
 * 12 claims of the burst left their leases in the removed range. tests/cases/claims.cases.ts ("a range retired under
 * a warm container's view") has the sequential version.
 */
/**
 * Pool 'p' with range 'going', three warm containers that trust their cached view for an hour and have each claimed
 * and released once (their views say 'going' is the only range, and no lease holds it), then range 'staying' added
 * by another container, which the warm views do not know.
 */
async function staleViews(): Promise<{ api: TestApi; containers: TestApi[] }> {
  const api = await testApi();
  expect((await api.call('POST', '/v1/pools', { name: 'p' })).status).toBe(201);
  expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.70.0.0/24', name: 'going' })).status).toBe(201);
  const containers = [0, 1, 2].map(() => api.sibling({ viewMaxAgeMs: 3_600_000 }));
  for (const [i, c] of containers.entries()) {
    expect((await c.call('POST', '/v1/pools/p/claims', { name: `warm${i}`, owner: owner(`w${i}`) })).status).toBe(201);
    expect((await c.call('DELETE', `/v1/pools/p/claims/warm${i}`)).status).toBe(204);
  }
  expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.71.0.0/24', name: 'staying' })).status).toBe(201);
  return { api, containers };
}

describe('Terminating under concurrent claims (DynamoDB Local)', () => {
  it('gives no claim sent after the DELETE answered an address of that range, and leaves no lease in a deleted range', async () => {
    // Prepare: ranges 'going' and 'staying'; c0 holds an address of 'going', so the DELETE answers 202
    const api = await testApi();
    expect((await api.call('POST', '/v1/pools', { name: 'p' })).status).toBe(201);
    expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.70.0.0/26', name: 'going' })).status).toBe(201);
    expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.71.0.0/26', name: 'staying' })).status).toBe(201);
    expect(
      (await api.call('POST', '/v1/pools/p/claims', { name: 'c0', owner: owner('u0'), addresses: ['10.70.0.1'] }))
        .status,
    ).toBe(201);
    const containers = [api.sibling(), api.sibling(), api.sibling()];
    // Warm views: each container has just allocated once (both ranges Ready in its cache).
    for (const [i, c] of containers.entries())
      expect((await c.call('POST', '/v1/pools/p/claims', { name: `warm${i}`, owner: owner(`w${i}`) })).status).toBe(
        201,
      );
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

  it('reliably: claims from containers whose cached views still show the range Ready get none of its addresses once the DELETE answered', async () => {
    // Prepare: range 'going' only; three warm containers that trust their cached view for an hour (the 1 s
    // window made wide: every claim they send arrives while their view still says 'going' is Ready and the only range).
    const { api, containers } = await staleViews();
    // Act: six workers (two per warm container) send claims one after another; the DELETE of 'going' goes out once
    // each worker has had a claim answered, and the workers go on until each sent 4 claims after the DELETE answered.
    let answeredAt: number | undefined;
    let started = 0;
    let release: () => void = () => {};
    const allStarted = new Promise<void>((resolve) => (release = resolve));
    const sent: { at: number; name: string; res: Promise<ApiResponse> }[] = [];
    let n = 0;
    const deadline = Date.now() + 60_000;
    const worker = async (c: TestApi): Promise<void> => {
      let afterAnswer = 0;
      let first = true;
      while (afterAnswer < 4 && Date.now() < deadline) {
        n += 1;
        const at = Date.now();
        const name = `c${n}`;
        const res = c.call('POST', '/v1/pools/p/claims', { name, owner: owner(`u${n}`) });
        sent.push({ at, name, res });
        await res;
        if (first) {
          first = false;
          started += 1;
          if (started === 6) release();
        }
        if (answeredAt !== undefined && at > answeredAt) afterAnswer += 1;
      }
    };
    const deletion = allStarted.then(async () => {
      const res = await api.call('DELETE', '/v1/pools/p/ranges/going');
      answeredAt = Date.now();
      return res;
    });
    await Promise.all([...containers, ...containers].map(worker));
    const deleted = await deletion;
    const results = await Promise.all(sent.map(async (s) => ({ ...s, res: await s.res })));
    // Assess: every claim sent after the DELETE answered got 201 with an address of 'staying'
    expect([202, 204]).toContain(deleted.status);
    const after = results.filter((r) => r.at > answeredAt!);
    expect(after.length).toBeGreaterThanOrEqual(24);
    const intoGoing = after.filter(
      (r) => r.res.status !== 201 || (r.res.body.addresses as { range: string }[]).some((a) => a.range !== 'staying'),
    );
    expect(
      intoGoing.map((r) => `${r.name}: ${r.res.status} ${JSON.stringify(r.res.body.addresses ?? r.res.body.code)}`),
    ).toEqual([]);
    // No lease lies in a range that is gone, and every lease left in 'going' is a claim sent before the DELETE answered.
    const items = await allItems(api.container.table);
    const ranges = new Set(items.filter((x) => x.entity === 'range').map((x) => x.name as string));
    expect(items.filter((x) => x.entity === 'lease' && !ranges.has(x.range as string)).map((x) => x.address)).toEqual(
      [],
    );
    const sentBefore = new Set(results.filter((r) => r.at <= answeredAt!).map((r) => r.name));
    expect(
      items
        .filter((x) => x.entity === 'lease' && x.range === 'going' && !sentBefore.has(x.claim as string))
        .map((x) => x.claim),
    ).toEqual([]);
  }, 120_000);

  it('reliably: a burst of claims from warm containers after the DELETE answered leaves no lease in a deleted range', async () => {
    // Prepare: as above, but no claim is in flight when 'going' is deleted, so no lease holds it then
    const { api, containers } = await staleViews();
    // Act: the DELETE, then 12 claims at once, four from each warm container
    const deleted = await api.call('DELETE', '/v1/pools/p/ranges/going');
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        containers[i % 3]!.call('POST', '/v1/pools/p/claims', { name: `c${i}`, owner: owner(`u${i}`) }),
      ),
    );
    // Assess: whatever the DELETE answered, no lease lies in a range that is gone, and no claim holds an address of 'going'
    expect([202, 204]).toContain(deleted.status);
    const items = await allItems(api.container.table);
    const ranges = new Set(items.filter((x) => x.entity === 'range').map((x) => x.name as string));
    expect(
      items
        .filter((x) => x.entity === 'lease' && !ranges.has(x.range as string))
        .map((x) => `${x.address as string} (${x.range as string})`),
    ).toEqual([]);
    expect(
      results.map((r) => [r.status, (r.body.addresses as { range: string }[] | undefined)?.map((a) => a.range)]),
    ).toEqual(results.map(() => [201, ['staying']]));
    expect(items.filter((x) => x.entity === 'lease' && x.range === 'going')).toEqual([]);
  });
});
