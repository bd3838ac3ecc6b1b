import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { TestEngine } from '../support/engines.ts';
import { tableStores, type Stores } from '../../shared/adapters/dynamodb/stores.ts';
import { keys } from '../../shared/adapters/dynamodb/keys.ts';
import { ITEM_BYTES_LIMIT, queryAll, type Table } from '../../shared/adapters/dynamodb/table.ts';
import { plainItemSize } from '../../aws-emulation/item-size.ts';
import { leaseOfClaim, type Claim, type ClaimAddress, type Hold, type Range } from '../../shared/core/model.ts';
import { events } from '../../shared/core/reconciler/plan.ts';
import { BandReading, countersOf, partsOf, type Band } from '../../shared/core/used-up/rule.ts';
import { TUNING } from '../../shared/core/allocator/tuning.ts';
import { capacity, formatCidr, lowerBandSize, parseCidr } from '../../shared/core/ip/cidr.ts';
import { ClaimHasChildrenError } from '../../shared/core/errors.ts';
import { ownerIdentity } from '../../shared/core/occupancy/ports.ts';
import { LabelLimits } from '../../shared/core/labels.ts';
import { NameLimits } from '../../shared/core/names.ts';
import { MAX_BATCH_COUNT } from '../../shared/core/use-cases/claims.ts';
import { T0 } from '../support/reconciler.ts';

/**
 * Issue 33: every write shape at its widest input stays within DynamoDB's limits (100 operations and 4 MB a
 * transaction, 400 KB an item), on both engines: the stores' writes of a dual-stack claim of MAX_BATCH_COUNT
 * addresses a family whose addresses lie in up to 64 ranges of 100-character names, with 32 labels of the longest
 * keys and values, owner fields of 253 characters (ASCII, three-byte or four-byte ones), a generateName of 63 and
 * the longest pool and claim names: its commit, a renewal to an earlier expiry, its release (a client's, into a reuse
 * delay, the reconciler's with its event), a commit replacing it when expired (another owner), and the seals of a
 * /16's 34 parts listing 32 such owners. The engines refuse what passes a limit (MemoryTable as DynamoDB does), so a
 * run passes only if every write was taken.
 */
interface Widest {
  /** Distinct ranges the 64 addresses lie in. */
  readonly ranges: number;
  /** The character owner fields and label values repeat (1, 3 or 4 bytes in UTF-8). */
  readonly char: string;
  readonly generated: boolean;
  readonly hold: boolean;
}

const widest: fc.Arbitrary<Widest> = fc.record({
  ranges: fc.oneof(fc.constant(2 * MAX_BATCH_COUNT), fc.integer({ min: 1, max: 2 * MAX_BATCH_COUNT })),
  char: fc.constantFrom('o', '\u20AC', '\u{1F600}'),
  generated: fc.boolean(),
  hold: fc.boolean(),
});

/** `n` characters of `char` after `tag` (a four-byte character counts two, as JavaScript and the API count it). */
const filled = (tag: string, char: string, n: number): string =>
  tag + char.repeat(Math.floor((n - tag.length) / char.length));
const dns = (tag: string, n: number): string => tag + 'a'.repeat(n - tag.length);

/** A claim of pool `pool` at its widest: 64 addresses over `input.ranges` ranges, its owner `who`. */
function wideClaim(pool: string, name: string, who: string, input: Widest, at: number, offset: number): Claim {
  const rangeName = (i: number) => `r${i % input.ranges}`.padEnd(NameLimits.rangeName, 'x');
  const addresses: ClaimAddress[] = [
    ...Array.from(
      { length: MAX_BATCH_COUNT },
      (_, i): ClaimAddress => ({ address: `10.${offset}.${i}.1`, family: 'IPv4', range: rangeName(i) }),
    ),
    ...Array.from(
      { length: MAX_BATCH_COUNT },
      (_, i): ClaimAddress => ({
        address: `fd00:${offset}::${(i + 1).toString(16)}`,
        family: 'IPv6',
        range: rangeName(MAX_BATCH_COUNT + i),
      }),
    ),
  ];
  const labels = Object.fromEntries(
    Array.from({ length: LabelLimits.count }, (_, i) => [
      `${dns(`l${i}.`, LabelLimits.prefix)}/${dns(`k${i}`, LabelLimits.name)}`,
      filled(`v${i}`, input.char === 'o' ? 'v' : 'v', LabelLimits.value),
    ]),
  );
  const field = (tag: string) => filled(`${tag}${who}`, input.char, NameLimits.ownerField);
  return {
    pool,
    name,
    uid: field('uid'),
    spec: {
      owner: { kind: field('Kind'), name: field('name'), uid: field('uid') },
      ipFamilyPolicy: 'RequireDualStack',
      ipFamilies: ['IPv4', 'IPv6'],
      addresses: [],
      count: MAX_BATCH_COUNT,
      ttlSeconds: 3600,
      labels,
      ...(input.generated ? { generateName: dns('g', NameLimits.label) } : {}),
    },
    addresses,
    createdAt: new Date(at).toISOString(),
    expiresAt: at + 3_600_000,
    version: 1,
    createdBy: { arn: `arn:aws:iam::123456789012:role/${'r'.repeat(64)}`, session: 's'.repeat(64) },
  };
}

/** Every item of the pool's claim and leases is within 400 KB (the engines refuse more; this names the offender). */
async function itemsWithin(table: Table, claim: Claim): Promise<void> {
  const items = await table.batchGet([
    keys.claim(claim.pool, claim.name),
    ...claim.addresses.map((a) => keys.lease(claim.pool, a.address)),
  ]);
  for (const item of items) expect(plainItemSize(item), String(item.PK)).toBeLessThanOrEqual(ITEM_BYTES_LIMIT);
}

/**
 * The widest claim as a block claim (issue 35): its 64 addresses made blocks whose CIDRs have the longest texts
 * (IPv4 /30s of 18 characters, IPv6 /120s of 43), no expiry (a claim with child ranges has none).
 */
function wideBlockClaim(pool: string, name: string): Claim {
  const { expiresAt: _, ...claim } = wideClaim(pool, name, 'a', WIDEST, T0, 1);
  const block = (text: string) => parseCidr(text);
  const addresses = claim.addresses.map((a, i): ClaimAddress => {
    const cidr =
      a.family === 'IPv4'
        ? block(`200.201.${200 + i}.252/30`)
        : block(`fd00:ffff:ffff:ffff:ffff:ffff:ffff:${(0xc000 + ((i - MAX_BATCH_COUNT) << 8)).toString(16)}/120`);
    const [address] = formatCidr(cidr).split('/');
    return { ...a, address: address!, prefixLength: cidr.prefix };
  });
  return { ...claim, addresses };
}

/** The widest of all, tried first on every engine: every address in its own range, four-byte owner characters. */
const WIDEST: Widest = { ranges: 2 * MAX_BATCH_COUNT, char: '\u{1F600}', generated: true, hold: true };

export function widestCases(engine: TestEngine, numRuns: number, timeoutMs = 60_000): void {
  describe(`Every write shape at its widest input stays within DynamoDB's limits (${engine.name}; issue 33)`, () => {
    let run = 0;
    /** A pool name of 63 characters of its own for each run. */
    const pool = () => dns(`w${(run += 1)}-`, NameLimits.label);

    async function storesOf(): Promise<{ table: Table; stores: Stores }> {
      const { table } = await engine.fresh('widest');
      return { table, stores: tableStores(table, { shards: 4, cursorSecret: 'widest' }) };
    }

    it(
      'commits, renews earlier, releases and replaces a wide claim, and the reconciler releases one with its event',
      async () => {
        const { table, stores } = await storesOf();
        await fc.assert(
          fc.asyncProperty(widest, async (input) => {
            const p = pool();
            const name = dns('c', NameLimits.label);
            const claim = wideClaim(p, name, 'a', input, T0, 1);
            const leases = (c: Claim) => c.addresses.map((a) => leaseOfClaim(c, a));
            // Commit, then renew to an earlier expiry (every range's counter bumped)
            expect(await stores.claims.commitClaim(claim, leases(claim), T0)).toEqual({ kind: 'committed' });
            await itemsWithin(table, claim);
            expect(await stores.claims.renewClaim(claim, T0 + 60_000)).toBe('renewed');
            const renewed = { ...claim, expiresAt: T0 + 60_000, version: 2 };
            // Expired: another owner's claim of the same name replaces it, its leases held for their owner
            const hold: Hold = { reusableAt: T0 + 7_200_000, releasedAt: new Date(T0 + 61_000).toISOString() };
            const next = wideClaim(p, name, 'b', input, T0 + 61_000, 2);
            expect(await stores.claims.commitClaim(next, leases(next), T0 + 61_000, { claim: renewed, hold })).toEqual({
              kind: 'committed',
            });
            const held = await table.batchGet(claim.addresses.map((a) => keys.lease(p, a.address)));
            expect(held.map((l) => l.state)).toEqual(Array(claim.addresses.length).fill('Released'));
            // A client's release of the new one (into a reuse delay or not)
            expect(await stores.claims.releaseClaim(next, 1, input.hold ? hold : undefined)).toBe('released');
            const left = await table.batchGet(next.addresses.map((a) => keys.lease(p, a.address)));
            expect(left.filter((l) => l.state !== 'Released')).toEqual([]);
            // The reconciler's release of an expired one, with its event (the address list and owner in its message)
            const third = wideClaim(p, dns('e', NameLimits.label), 'c', input, T0, 3);
            expect(await stores.claims.commitClaim(third, leases(third), T0)).toEqual({ kind: 'committed' });
            const expired = events.claimExpired(
              third,
              new Date(T0 + 3_700_000).toISOString(),
              input.hold ? hold : undefined,
            );
            expect(
              await stores.reconcile.releaseExpiredClaim(third, T0 + 3_700_000, expired, input.hold ? hold : undefined),
            ).toBe('released');
            const logged = await queryAll(table, { partition: keys.eventsOfClaim(p, third.uid), consistent: true });
            expect(logged.map((e) => e.reason)).toEqual(['ClaimExpired']);
          }),
          { numRuns, examples: [[WIDEST]] },
        );
      },
      timeoutMs,
    );

    it(
      'marks a widest block claim with a child range of the longest names for each of its 64 blocks, and takes marks off by the reconciler finalize and by delete (issue 35)',
      async () => {
        // Prepare: the parent pool and its claim, and a child pool
        const { table, stores } = await storesOf();
        const p = pool();
        const child = pool();
        const name = dns('b', NameLimits.label);
        for (const made of [p, child])
          expect(
            await stores.pools.createPool({ name: made, exclude: [], createdAt: new Date(T0).toISOString() }),
          ).toBe('created');
        const parent = wideBlockClaim(p, name);
        expect(
          await stores.claims.commitClaim(
            parent,
            parent.addresses.map((a) => leaseOfClaim(parent, a)),
            T0,
          ),
        ).toEqual({ kind: 'committed' });
        const ranges: Range[] = parent.addresses.map((a, i) => ({
          pool: child,
          name: `n${i}`.padEnd(NameLimits.rangeName, 'x'),
          cidr: `${a.address}/${a.prefixLength}`,
          family: a.family,
          state: 'Ready',
          legacy: false,
          createdAt: new Date(T0).toISOString(),
          source: { pool: p, claim: name },
        }));
        const current = async () => (await stores.claims.getClaim(p, name))!;
        // Act: one transaction per child range (the range, the two pools' checks, the claim's marker, 16 generation copies)
        for (const range of ranges) expect(await stores.pools.createRange(range, await current())).toBe('created');
        const marked = await current();
        // Assess: 64 children of the longest names on the claim item, within 400 KB
        expect(marked.children).toHaveLength(2 * MAX_BATCH_COUNT);
        expect(JSON.stringify(marked.children).length).toBeGreaterThan(13_000);
        await itemsWithin(table, marked);
        await expect(stores.claims.releaseClaim(marked)).rejects.toBeInstanceOf(ClaimHasChildrenError);
        // The reconciler's finalize (range, bitmap, strikes, usage, event, the claim's mark, 16 copies) and an API
        // delete each take their range's mark off, and the claim stays refused while 62 remain (the release of a
        // claim of 64 entries over many ranges is the first case's; the child pool's deletion unmarks one claim write
        // at a time, blocks.cases.ts)
        const at = new Date(T0 + 1_000).toISOString();
        const finalizing = await stores.pools.markRangeTerminating(ranges[0]!, at);
        expect(await stores.reconcile.finalizeRange(finalizing, events.rangeFinalized(finalizing, at))).toBe(
          'finalized',
        );
        expect(await stores.pools.deleteRange(await stores.pools.markRangeTerminating(ranges[1]!, at))).toBe(true);
        const left = await current();
        expect(left.children).toHaveLength(2 * MAX_BATCH_COUNT - 2);
        await expect(stores.claims.releaseClaim(left)).rejects.toBeInstanceOf(ClaimHasChildrenError);
      },
      timeoutMs,
    );

    it(
      'seals every part of a /16 for 32 holders with the longest owner fields',
      async () => {
        const { table, stores } = await storesOf();
        await fc.assert(
          fc.asyncProperty(fc.constantFrom('o', '\u20AC', '\u{1F600}', '"'), async (char) => {
            const p = pool();
            const cidr = parseCidr('10.40.0.0/16');
            const range = {
              range: {
                pool: p,
                name: 'r'.padEnd(NameLimits.rangeName, 'x'),
                cidr: '10.40.0.0/16',
                family: 'IPv4',
                state: 'Ready',
                legacy: false,
                createdAt: '2035-01-01T00:00:00.000Z',
              },
              cidr,
            } as const;
            const band = (name: 'upper' | 'lower', from: bigint, to: bigint): Band => ({
              name,
              part: name,
              range,
              counters: [range.range.name],
              from,
              to,
              excluded: [],
            });
            const lower = lowerBandSize(cidr);
            const parts = [...partsOf(band('upper', lower, capacity(cidr))), ...partsOf(band('lower', 0n, lower))];
            const read = await stores.seals.readSeals(p, [range.range.name]);
            for (const part of parts) {
              const reading = new BandReading();
              for (let i = 0; i < TUNING.sealHoldersMax; i += 1)
                reading.taken(
                  {
                    expiring: true,
                    expiresAt: T0 + i,
                    heldFor: ownerIdentity({
                      kind: filled(`K${i}`, char, NameLimits.ownerField),
                      name: filled(`n${i}`, char, NameLimits.ownerField),
                    }),
                  },
                  part.counters,
                );
              await stores.seals.seal(p, range.range.name, part.part, reading.sealAt(countersOf(read, part), part));
            }
            const item = await table.get(keys.seals(p, range.range.name));
            expect(Object.keys(item!).filter((a) => a.startsWith('seal_'))).toHaveLength(parts.length);
          }),
          { numRuns: Math.min(numRuns, 4) },
        );
      },
      timeoutMs,
    );
  });
}
