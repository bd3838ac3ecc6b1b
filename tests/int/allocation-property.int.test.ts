import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { testApi } from '../support/api.ts';
import { ManualClock } from '../support/fakes.ts';
import { allItems } from '../support/items.ts';

// One step of a client population: claim (one address, or a batch of up to 3; as the owner identity's first or second
// incarnation, so a recreated owner re-claims in a pool with a reuse delay), release, renew, confirm a hold (renew
// with ttlSeconds null), or let time pass (which expires TTL claims and ends reuse delays).
type Step =
  | { op: 'claim'; who: number; incarnation: number; ttl: boolean; explicit: number | null; count: number; via: number }
  | { op: 'release'; who: number; via: number }
  | { op: 'renew'; who: number; via: number }
  | { op: 'confirm'; who: number; via: number }
  | { op: 'expire'; seconds: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    op: fc.constant('claim' as const),
    who: fc.integer({ min: 0, max: 7 }),
    incarnation: fc.integer({ min: 0, max: 1 }),
    ttl: fc.boolean(),
    explicit: fc.option(fc.integer({ min: 1, max: 6 })),
    count: fc.integer({ min: 1, max: 3 }),
    via: fc.integer({ min: 0, max: 2 }),
  }),
  fc.record({
    op: fc.constant('release' as const),
    who: fc.integer({ min: 0, max: 7 }),
    via: fc.integer({ min: 0, max: 2 }),
  }),
  fc.record({
    op: fc.constant('renew' as const),
    who: fc.integer({ min: 0, max: 7 }),
    via: fc.integer({ min: 0, max: 2 }),
  }),
  fc.record({
    op: fc.constant('confirm' as const),
    who: fc.integer({ min: 0, max: 7 }),
    via: fc.integer({ min: 0, max: 2 }),
  }),
  fc.record({ op: fc.constant('expire' as const), seconds: fc.integer({ min: 1, max: 40 }) }),
);

describe('Property: random interleavings against the real store', () => {
  it('never holds an address twice, utilization always equals the live lease items, and the summary the lease items', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(0, 60),
        fc.array(fc.array(step, { minLength: 1, maxLength: 4 }), { minLength: 4, maxLength: 10 }),
        async (delaySeconds, rounds) => {
          // Prepare: a /29 (6 addresses) shared by 8 would-be owners, three warm containers, one clock; a pool with or
          // without a reuse delay.
          const clock = new ManualClock();
          const api = await testApi({ clock });
          const containers = [api, api.sibling({ clock }), api.sibling({ clock })];
          await api.call('POST', '/v1/pools', { name: 'p', reuseDelaySeconds: delaySeconds });
          await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.0.0.0/29' });
          // What the previous round left held for a previous owner (address -> identity and until when), and its claims.
          let heldBefore = new Map<string, { kind: string; name: string; until: number }>();
          let claimsBefore = new Set<string>();
          for (const round of rounds) {
            // Act: the steps of a round run concurrently.
            await Promise.all(
              round.map(async (s) => {
                if (s.op === 'expire') return clock.advance(s.seconds * 1000);
                const via = containers[s.via]!;
                const res =
                  s.op === 'claim'
                    ? await via.call('POST', '/v1/pools/p/claims', {
                        name: `c${s.who}`,
                        owner: { kind: 'Pod', name: `pod-${s.who}`, uid: `u${s.who}-${s.incarnation}` },
                        ...(s.ttl ? { ttlSeconds: 30 } : {}),
                        ...(s.explicit
                          ? { addresses: [`10.0.0.${s.explicit}`] }
                          : s.count > 1
                            ? { count: s.count }
                            : {}),
                      })
                    : s.op === 'release'
                      ? await via.call('DELETE', `/v1/pools/p/claims/c${s.who}`)
                      : await via.call(
                          'POST',
                          `/v1/pools/p/claims/c${s.who}/renew`,
                          s.op === 'confirm' ? { ttlSeconds: null } : {},
                        );
                // Every answer is a success or a well-formed client-facing refusal; never a 500.
                expect(res.status).toBeLessThan(500);
              }),
            );
            // Assess the invariants after every round.
            const now = clock.nowMs();
            const items = await allItems(api.container.table);
            const live = items.filter(
              (i) => i.entity === 'lease' && (i.expiresAt === undefined || (i.expiresAt as number) > now),
            );
            const allocated = live.filter((l) => l.state !== 'Released');
            const released = live.filter((l) => l.state === 'Released');
            const claimItems = items.filter((i) => i.entity === 'claim');
            const claims = claimItems.filter((i) => i.expiresAt === undefined || (i.expiresAt as number) > now);
            // Each held address is held by exactly one live claim that lists it.
            const holders = new Map<string, string[]>();
            for (const c of claims)
              for (const a of c.addresses as { address: string }[])
                holders.set(a.address, [...(holders.get(a.address) ?? []), c.name as string]);
            for (const [address, names] of holders) expect({ address, names }).toEqual({ address, names: [names[0]] });
            // A live Allocated lease belongs to a claim item of its incarnation that lists it. In a pool with a delay
            // the claim may have expired, and even been replaced by a new claim of the same name (the claim item is
            // then the new incarnation's): its TTL lease holds the address until the claim's expiry plus the delay,
            // for no live claim.
            for (const lease of allocated) {
              const claim = claimItems.find((c) => c.uid === lease.claimUid);
              if (claim)
                expect((claim.addresses as { address: string }[]).map((a) => a.address)).toContain(lease.address);
              else {
                expect(delaySeconds).toBeGreaterThan(0);
                // Its claim expired: a claim is replaced only then, and its lease runs to the claim's expiry plus the delay.
                expect((lease.expiresAt as number) - delaySeconds * 1000).toBeLessThanOrEqual(now);
                expect(holders.get(lease.address as string)).toBeUndefined();
              }
            }
            // A Released lease (held for its previous owner) is listed by no live claim, and ends within the delay.
            for (const lease of released) {
              expect(holders.get(lease.address as string)).toBeUndefined();
              expect(lease.expiresAt as number).toBeLessThanOrEqual(now + delaySeconds * 1000);
            }
            // No partial claim: every live claim holds a lease of its own incarnation for each of its addresses, with
            // the claim's expiry plus the delay (none for a confirmed or permanent claim).
            for (const c of claims) {
              const spec = c.spec as { count?: number };
              expect((c.addresses as unknown[]).length).toBe(spec.count ?? 1);
              for (const a of c.addresses as { address: string }[]) {
                expect(live.find((l) => l.address === a.address)).toMatchObject({ claim: c.name, claimUid: c.uid });
                expect(live.find((l) => l.address === a.address)?.expiresAt).toBe(
                  c.expiresAt === undefined ? undefined : (c.expiresAt as number) + delaySeconds * 1000,
                );
              }
            }
            // An address held for a previous owner went, in this round, to no claim of another identity: the hold lasted
            // the whole round when it still lasts now (time only moves forward).
            for (const c of claims.filter((c) => !claimsBefore.has(c.uid as string))) {
              const identity = (c.spec as { owner: { kind: string; name: string } }).owner;
              for (const a of c.addresses as { address: string }[]) {
                const hold = heldBefore.get(a.address);
                if (hold && hold.until > now)
                  expect({ address: a.address, kind: identity.kind, name: identity.name }).toEqual({
                    address: a.address,
                    kind: hold.kind,
                    name: hold.name,
                  });
              }
            }
            heldBefore = new Map(
              released.map((l) => [
                l.address as string,
                { kind: l.ownerKind as string, name: l.ownerName as string, until: l.expiresAt as number },
              ]),
            );
            claimsBefore = new Set(claims.map((c) => c.uid as string));
            const utilization = (await api.call('GET', '/v1/pools/p')).body.utilization as {
              IPv4: { used: number; releasing: number; free: number };
            };
            expect(utilization.IPv4).toEqual({
              size: 6,
              used: allocated.length,
              releasing: released.length,
              free: 6 - live.length,
            });
            // The occupancy summary (kept by the stream function on every write here) shows every lease item, expired
            // ones included, and nothing else.
            const occupancy = (await api.call('GET', '/v1/pools/p/ranges/10.0.0.0-29/occupancy')).body as {
              slices: { first: string; count: number; bits: string }[];
            };
            const shown = occupancy.slices.flatMap((slice) => {
              const bytes = Buffer.from(slice.bits, 'base64');
              const base = Number(slice.first.split('.')[3]);
              return Array.from({ length: slice.count }, (_, i) => i)
                .filter((i) => bytes[i >> 3]! & (1 << (i & 7)))
                .map((i) => `10.0.0.${base + i}`);
            });
            expect(shown.sort()).toEqual(
              items
                .filter((i) => i.entity === 'lease')
                .map((i) => i.address as string)
                .sort(),
            );
          }
        },
      ),
      { numRuns: 12 },
    );
  }, 180_000);
});
