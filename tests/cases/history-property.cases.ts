import { expect, it } from 'vitest';
import fc from 'fast-check';
import type { DynamoDBRecord } from 'aws-lambda';
import { testApi } from '../support/api.ts';
import { ManualClock } from '../support/fakes.ts';
import type { StreamEngine } from '../support/lease-stream.ts';
import { deliverRecords } from '../support/stream.ts';
import { mirrorOf } from '../support/legacy.ts';

// One step of a client population on a /29 (6 addresses): claim (an explicit address or any, with or without a TTL),
// release, let time pass (which expires TTL claims: another claim then takes the address over), or run the stream
// function over what is new, in batches of a random size, then deliver some already-delivered batch again.
type Step =
  | { op: 'claim'; who: number; ttl: boolean; explicit: number | null }
  | { op: 'release'; who: number }
  | { op: 'expire'; seconds: number }
  | { op: 'stream'; batchSize: number; redeliver: number | null };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('claim' as const),
      who: fc.integer({ min: 0, max: 7 }),
      ttl: fc.boolean(),
      explicit: fc.option(fc.integer({ min: 1, max: 6 })),
    }),
  },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('release' as const), who: fc.integer({ min: 0, max: 7 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('expire' as const), seconds: fc.integer({ min: 1, max: 45 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('stream' as const),
      batchSize: fc.integer({ min: 1, max: 7 }),
      redeliver: fc.option(fc.nat()),
    }),
  },
);

/** What the test's answers say held an address: the claim incarnation, from its 201, to its release or expiry. */
interface Expected {
  uid: string;
  claim: string;
  from: string;
  expiresAt?: number;
  endedAt?: number;
  /** When the stream function first ran after the release (the latest the release can be recorded at). */
  seenBy?: number;
}

/**
 * The history property on an engine: whatever the order of claims, releases, expiries and (re)deliveries, every
 * address's history, once the stream is drained, is a sequence of non-overlapping holdings equal to the holdings the
 * answers made: one per 201 that took the address, from its createdAt, ended by the release the test made (between
 * the DELETE and the drain) or at its expiry exactly.
 */
export function historyPropertyCases(makeEngine: (clock: ManualClock) => StreamEngine, runs: number): void {
  it(`keeps every address's history equal to the answers the clients got (${runs} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 30 }), async (steps) => {
        // Prepare
        const clock = new ManualClock();
        const streams = makeEngine(clock);
        const api = await testApi({ clock }, {}, undefined, streams.engine);
        const stream = streams.stream();
        await api.call('POST', '/v1/pools', { name: 'p' });
        await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.0.0.0/29' });
        const expected = new Map<string, Expected[]>();
        const claims = new Map<number, { uid: string; addresses: string[]; expiresAt?: number }>();
        const delivered: DynamoDBRecord[][] = [];
        const handler = mirrorOf(api.container);
        const drain = async (batchSize: number, redeliver: number | null) => {
          for (const list of expected.values())
            for (const e of list) if (e.endedAt !== undefined && e.seenBy === undefined) e.seenBy = clock.nowMs();
          const records = await stream.read();
          for (let i = 0; i < records.length; i += batchSize) delivered.push(records.slice(i, i + batchSize));
          expect(await deliverRecords(records, handler, { batchSize })).toEqual([]);
          if (redeliver !== null && delivered.length > 0)
            expect(await deliverRecords(delivered[redeliver % delivered.length]!, handler)).toEqual([]);
        };
        // Act: steps run one after another, each at least a millisecond after the last (holdings are ordered by their
        // claims' createdAt: two claims of one address within one millisecond, or concurrent ones whose allocation
        // began before the previous holder let go, are the documented limit of that order, not tested here).
        for (const s of steps) {
          clock.advance(1);
          if (s.op === 'expire') clock.advance(s.seconds * 1000);
          else if (s.op === 'stream') await drain(s.batchSize, s.redeliver);
          else if (s.op === 'claim') {
            const res = await api.call('POST', '/v1/pools/p/claims', {
              name: `c${s.who}`,
              owner: { kind: 'Pod', name: `pod-${s.who}`, uid: `u${s.who}` },
              ...(s.ttl ? { ttlSeconds: 30 } : {}),
              ...(s.explicit ? { addresses: [`10.0.0.${s.explicit}`] } : {}),
            });
            expect(res.status).toBeLessThan(500);
            if (res.status !== 201) continue;
            const uid = res.body.uid as string;
            const addresses = (res.body.addresses as { address: string }[]).map((a) => a.address);
            const expiresAt = res.body.expiresAt === undefined ? undefined : Date.parse(res.body.expiresAt as string);
            claims.set(s.who, { uid, addresses, ...(expiresAt !== undefined ? { expiresAt } : {}) });
            for (const address of addresses) {
              const list = expected.get(address) ?? [];
              const previous = list.at(-1);
              // The address was free: the previous holding (if any) ended, by release or by its expiry
              if (previous && previous.endedAt === undefined) previous.endedAt = previous.expiresAt!;
              list.push({
                uid,
                claim: `c${s.who}`,
                from: res.body.createdAt as string,
                ...(expiresAt !== undefined ? { expiresAt } : {}),
              });
              expected.set(address, list);
            }
          } else {
            const held = claims.get(s.who);
            const res = await api.call('DELETE', `/v1/pools/p/claims/c${s.who}`);
            expect(res.status).toBeLessThan(500);
            if (res.status !== 204 || !held) continue;
            claims.delete(s.who);
            for (const address of held.addresses) {
              const h = expected.get(address)?.at(-1);
              if (h && h.uid === held.uid && h.endedAt === undefined)
                h.endedAt = Math.min(h.expiresAt ?? Number.POSITIVE_INFINITY, clock.nowMs());
            }
          }
        }
        await drain(100, null);
        // Assess
        for (const [address, list] of expected) {
          const got: Record<string, unknown>[] = [];
          let cursor: string | undefined;
          do {
            const res = await api.call(
              'GET',
              `/v1/pools/p/addresses/${address}/history?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
            );
            expect(res.status).toBe(200);
            got.push(...(res.body.items as Record<string, unknown>[]));
            cursor = res.body.nextCursor as string | undefined;
          } while (cursor);
          const oldestFirst = got.reverse();
          expect(
            oldestFirst.map((h) => [h.claimUid, h.from]),
            address,
          ).toEqual(list.map((e) => [e.uid, e.from]));
          for (let i = 0; i < oldestFirst.length; i += 1) {
            const h = oldestFirst[i]!;
            const e = list[i]!;
            const next = oldestFirst[i + 1];
            if (next) expect(Date.parse(h.to as string), address).toBeLessThanOrEqual(Date.parse(next.from as string));
            const expiredFirst =
              e.expiresAt !== undefined &&
              e.expiresAt <= clock.nowMs() &&
              (e.endedAt === undefined || e.endedAt >= e.expiresAt);
            if (e.endedAt === undefined && !expiredFirst) expect(h.to, address).toBeUndefined();
            else if (expiredFirst) expect(h.to, address).toBe(new Date(e.expiresAt!).toISOString());
            else {
              // A release the test made (a deletion carries no time): at or after it, no later than when the stream
              // function first ran after it, nor than the next holding's start.
              expect(Date.parse(h.to as string), address).toBeGreaterThanOrEqual(e.endedAt!);
              expect(Date.parse(h.to as string), address).toBeLessThanOrEqual(e.seenBy!);
            }
          }
        }
      }),
      { numRuns: runs },
    );
  }, 300_000);
}
