import { expect, it } from 'vitest';
import fc from 'fast-check';
import { testApi, type TestApi } from '../support/api.ts';
import type { TestEngine } from '../support/engines.ts';
import { ManualClock, owner } from '../support/fakes.ts';
import { allItems } from '../support/items.ts';
import { parseCidr, lastAddress } from '../../shared/core/ip/cidr.ts';
import { parseAddress } from '../../shared/core/ip/address.ts';
import { afterPoolRead } from './blocks.cases.ts';

// A pool tree: `top` hands out /26 blocks of a /24 (4 of them); child pools c0 and c1 hand out /28 blocks (4 per /26)
// of ranges made from top's claims. Steps: claim in top (any block or an explicit one, with or without a TTL), release
// it, make a child range from a top claim (its block, or another block, which must be refused), delete a child range,
// claim and release in a child pool, and let time pass (TTL claims expire; their blocks are then free to take).
// A third child pool `g` grows from top (one /26 block at a time, at most 2): claims and releases in it, and removal
// of a grown range (g4-1 or g4-2), whose parent claim must then be given back; and (one step at a time) two claims in
// g from two containers, the second run just after the first reads top (its growth, if it grows). Growth must never
// overshoot: g takes a block from top only when its claims could have used up its free space (checkGrowth).
// The steps run one at a time, and in batches run at once whose storage calls fast-check's scheduler orders (its
// draws shrink like any input); a third property races a parent claim's release against a child range's creation.
type Step =
  | { op: 'claimTop'; who: number; explicit: number | null; ttl: boolean }
  | { op: 'releaseTop'; who: number }
  | { op: 'makeChild'; child: number; who: number; wrong: boolean }
  | { op: 'deleteChild'; child: number }
  | { op: 'claimChild'; child: number; who: number; explicit: number | null }
  | { op: 'releaseChild'; child: number; who: number }
  | { op: 'expire'; seconds: number }
  | { op: 'claimGrow'; who: number }
  | { op: 'raceGrow'; who: number }
  | { op: 'releaseGrow'; who: number }
  | { op: 'deleteGrown'; k: number };

const child = fc.integer({ min: 0, max: 1 });
/**
 * A step, among owners 0..`owners - 1`: few owners make steps meet on the same claim (a release beside a child range's
 * creation from it), which is what concurrent batches are for.
 */
const stepAmong = (owners: number): fc.Arbitrary<Step> => {
  const who = fc.integer({ min: 0, max: owners - 1 });
  return fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        op: fc.constant('claimTop' as const),
        who,
        explicit: fc.option(fc.integer({ min: 0, max: 3 })),
        ttl: fc.boolean(),
      }),
    },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('releaseTop' as const), who }) },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('makeChild' as const), child, who, wrong: fc.boolean() }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('deleteChild' as const), child }) },
    {
      weight: 4,
      arbitrary: fc.record({
        op: fc.constant('claimChild' as const),
        child,
        who,
        explicit: fc.option(fc.integer({ min: 0, max: 3 })),
      }),
    },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('releaseChild' as const), child, who }) },
    {
      weight: 1,
      arbitrary: fc.record({ op: fc.constant('expire' as const), seconds: fc.integer({ min: 1, max: 90 }) }),
    },
    { weight: 3, arbitrary: fc.record({ op: fc.constant('claimGrow' as const), who }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('releaseGrow' as const), who }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('deleteGrown' as const), k: fc.integer({ min: 1, max: 2 }) }) },
  );
};
/** One step at a time, also two claims in g raced on top's read (a batch of steps at once has its own races). */
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 23, arbitrary: stepAmong(5) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('raceGrow' as const), who: fc.integer({ min: 0, max: 4 }) }) },
);

type Item = Record<string, unknown>;
const span = (address: string, prefixLength: number): [bigint, bigint] => {
  const cidr = parseCidr(`${address}/${prefixLength}`);
  return [cidr.base, lastAddress(cidr)];
};
const overlap = (a: [bigint, bigint], b: [bigint, bigint]) => a[0] <= b[1] && b[0] <= a[1];

/**
 * The pool tree's invariants, read from the table: no two live leases overlap within a pool; every live lease lies in
 * a range of its pool (Ready or Terminating); every child range is the block of a live claim of top that lists it,
 * whose lease is live, and no two child ranges overlap; so no two live claims anywhere in the tree overlap except a
 * child pool's claims inside the one parent claim their range was made from; and every block top holds for the growing
 * pool g (owner Pool/g) is the source of a range of g: none is left held once its range is gone.
 */
function checkTree(items: readonly Item[], nowMs: number): void {
  const live = (i: Item) => i.expiresAt === undefined || (i.expiresAt as number) > nowMs;
  const leases = items.filter((i) => i.entity === 'lease' && i.state !== 'Released' && live(i));
  const ranges = items.filter((i) => i.entity === 'range');
  const claims = items.filter((i) => i.entity === 'claim' && live(i));
  for (const pool of ['top', 'c0', 'c1', 'g']) {
    const held = leases
      .filter((l) => l.pool === pool)
      .map((l) => ({ key: `${l.address}/${l.prefixLength}`, at: span(l.address as string, l.prefixLength as number) }));
    for (const [i, a] of held.entries())
      for (const b of held.slice(i + 1))
        expect(overlap(a.at, b.at), `${pool}: ${a.key} and ${b.key} overlap`).toBe(false);
    for (const l of held) {
      const inRange = ranges
        .filter((r) => r.pool === pool)
        .some((r) => {
          const c = parseCidr(r.cidr as string);
          return c.base <= l.at[0] && l.at[1] <= lastAddress(c);
        });
      expect(inRange, `${pool}: ${l.key} lies in no range of its pool`).toBe(true);
    }
  }
  for (const grown of claims.filter((c) => c.pool === 'top' && (c.spec as { owner: Item }).owner.kind === 'Pool'))
    expect(grown.children, `top's grown claim ${grown.name as string} outlived its range`).toBeDefined();
  const children = ranges.filter((r) => r.source !== undefined);
  for (const [i, r] of children.entries()) {
    const source = r.source as { pool: string; claim: string };
    const parent = claims.find((c) => c.pool === source.pool && c.name === source.claim);
    expect(parent, `range ${r.pool}/${r.name} outlived its source claim ${source.claim}`).toBeDefined();
    expect((parent!.children as Item[]).some((c) => c.pool === r.pool && c.range === r.name && c.cidr === r.cidr)).toBe(
      true,
    );
    expect(parent!.expiresAt).toBeUndefined();
    const base = parseAddress((r.cidr as string).split('/')[0]!).value;
    expect(
      leases.some(
        (l) => l.pool === 'top' && l.claim === source.claim && parseAddress(l.address as string).value === base,
      ),
      `the block of ${r.pool}/${r.name} is not held`,
    ).toBe(true);
    for (const other of children.slice(i + 1)) {
      const a = parseCidr(r.cidr as string);
      const b = parseCidr(other.cidr as string);
      expect(
        overlap([a.base, lastAddress(a)], [b.base, lastAddress(b)]),
        `child ranges ${r.pool}/${r.name} and ${other.pool}/${other.name} overlap`,
      ).toBe(false);
    }
  }
}

/**
 * The growing pool g as the table holds it: the blocks top holds for it, and its free /28 blocks (those of its Ready
 * ranges, 4 in each grown /26, less its live leases there).
 */
function growing(items: readonly Item[], nowMs: number): { held: number; free: number } {
  const live = (i: Item) => i.expiresAt === undefined || (i.expiresAt as number) > nowMs;
  const held = items.filter(
    (i) => i.entity === 'claim' && i.pool === 'top' && live(i) && (i.spec as { owner: Item }).owner.kind === 'Pool',
  ).length;
  const ready = items
    .filter((i) => i.entity === 'range' && i.pool === 'g' && i.state === 'Ready')
    .map((r) => parseCidr(r.cidr as string));
  const used = items.filter((i) => {
    if (i.entity !== 'lease' || i.pool !== 'g' || i.state === 'Released' || !live(i)) return false;
    const at = parseAddress(i.address as string).value;
    return ready.some((c) => c.base <= at && at <= lastAddress(c));
  }).length;
  return { held, free: ready.length * 4 - used };
}

/** The claims a step makes in g. */
const claimsInG = (s: Step) => (s.op === 'claimGrow' ? 1 : s.op === 'raceGrow' ? 2 : 0);

/**
 * Growth never overshoots: `claims` claims in g take a block (4 /28s) from top only each time they could have used up
 * g's free /28s (belowFree 1: when a claim leaves none free, or finds none): at most 1 + (claims - free) / 4 blocks,
 * rounded down, when claims >= free, else none. Releases in between only make room.
 */
function checkGrowth(before: { held: number; free: number }, after: { held: number }, claims: number): void {
  const most = claims >= before.free ? 1 + Math.floor((claims - before.free) / 4) : 0;
  expect(
    after.held - before.held,
    `g took too many blocks for ${claims} claim(s) with ${before.free} free`,
  ).toBeLessThanOrEqual(most);
}

/** The pool tree every run starts from (see the top of the file). */
async function openTree(engine: TestEngine): Promise<{ api: TestApi; clock: ManualClock }> {
  const clock = new ManualClock();
  const api: TestApi = await testApi({ clock }, {}, undefined, engine);
  await api.call('POST', '/v1/pools', { name: 'top', openToChildPools: true, blockPrefixLength: { IPv4: 26 } });
  await api.call('POST', '/v1/pools/top/ranges', { cidr: '10.0.0.0/24' });
  for (const c of ['c0', 'c1']) await api.call('POST', '/v1/pools', { name: c, blockPrefixLength: { IPv4: 28 } });
  const grow = { pool: 'top', belowFree: 1, maxBlocks: 2 };
  await api.call('POST', '/v1/pools', { name: 'g', blockPrefixLength: { IPv4: 28 }, grow });
  return { api, clock };
}

const blockOf = (body: Record<string, unknown>) => (body.addresses as { prefix: string }[])[0]!.prefix;
const claimG = (api: TestApi, who: number) =>
  api.call('POST', '/v1/pools/g/claims', { name: `g${who}`, owner: owner(`g${who}`) });

/**
 * Runs one step. `alone`: no other step runs at once, so each answer can be asserted exactly; with others at once, an
 * answer may be any client error the race explains (a claim released under a child range's creation, say), never a
 * 5xx, and never the acceptance of a child range of the wrong block. The tree's invariants are what must hold.
 */
async function runStep(tree: { api: TestApi; clock: ManualClock }, s: Step, alone: boolean): Promise<void> {
  const { api, clock } = tree;
  const answered = (r: { status: number; body: Record<string, unknown> }, exactly: () => void) => {
    expect(r.status, JSON.stringify(r.body)).toBeLessThan(500);
    if (alone) exactly();
  };
  switch (s.op) {
    case 'claimTop': {
      const r = await api.call('POST', '/v1/pools/top/claims', {
        name: `t${s.who}`,
        owner: owner(`t${s.who}`),
        ...(s.explicit !== null ? { prefixes: [`10.0.0.${s.explicit * 64}/26`] } : {}),
        ...(s.ttl ? { ttlSeconds: 60 } : {}),
      });
      answered(r, () => expect([200, 201, 409], JSON.stringify(r.body)).toContain(r.status));
      break;
    }
    case 'releaseTop': {
      const r = await api.call('DELETE', `/v1/pools/top/claims/t${s.who}`);
      answered(r, () => {
        if (r.status === 409) expect(r.body.code).toBe('ClaimHasChildren');
        else expect(r.status).toBe(204);
      });
      break;
    }
    case 'makeChild': {
      const claim = await api.call('GET', `/v1/pools/top/claims/t${s.who}`);
      if (claim.status !== 200) break;
      const block = blockOf(claim.body);
      const [a, b, c] = block.split('.');
      const cidr = s.wrong ? `${a}.${b}.${c}.${(Number(block.split('.')[3]!.split('/')[0]) + 64) % 256}/26` : block;
      const r = await api.call('POST', `/v1/pools/c${s.child}/ranges`, {
        cidr,
        name: 'r',
        source: { pool: 'top', claim: `t${s.who}` },
      });
      // Another block: refused (or, where the child pool already has a range of that name, immutable).
      if (s.wrong) expect(['SourceMismatch', 'Conflict', 'NotFound', 'NotReady']).toContain(r.body.code);
      if (s.wrong && alone) expect(['SourceMismatch', 'Conflict']).toContain(r.body.code);
      answered(r, () => {
        if (!s.wrong) expect([200, 201, 409], JSON.stringify(r.body)).toContain(r.status);
      });
      break;
    }
    case 'deleteChild': {
      if ((await api.call('DELETE', `/v1/pools/c${s.child}/ranges/r`)).status === 202) {
        clock.advance(5_000);
        await api.call('DELETE', `/v1/pools/c${s.child}/ranges/r`);
      }
      break;
    }
    case 'claimChild': {
      const r = await api.call('POST', `/v1/pools/c${s.child}/claims`, {
        name: `k${s.who}`,
        owner: owner(`k${s.who}`),
        ...(s.explicit !== null ? { prefixes: [`10.0.0.${s.explicit * 16}/28`] } : {}),
      });
      expect(r.status, JSON.stringify(r.body)).toBeLessThan(500);
      break;
    }
    case 'releaseChild': {
      const r = await api.call('DELETE', `/v1/pools/c${s.child}/claims/k${s.who}`);
      answered(r, () => expect(r.status).toBe(204));
      break;
    }
    case 'expire':
      clock.advance(s.seconds * 1000);
      break;
    case 'claimGrow': {
      const r = await claimG(api, s.who);
      expect(r.status, JSON.stringify(r.body)).toBeLessThan(500);
      break;
    }
    case 'raceGrow': {
      let second: ReturnType<typeof claimG> | undefined;
      const first = await claimG(
        afterPoolRead(api, 'top', () => (second = claimG(api, (s.who + 1) % 5))),
        s.who,
      );
      for (const r of [first, await (second ?? claimG(api, (s.who + 1) % 5))])
        expect(r.status, JSON.stringify(r.body)).toBeLessThan(500);
      break;
    }
    case 'releaseGrow': {
      const r = await api.call('DELETE', `/v1/pools/g/claims/g${s.who}`);
      answered(r, () => expect(r.status).toBe(204));
      break;
    }
    case 'deleteGrown': {
      if ((await api.call('DELETE', `/v1/pools/g/ranges/g4-${s.k}`)).status === 202) {
        clock.advance(5_000);
        await api.call('DELETE', `/v1/pools/g/ranges/g4-${s.k}`);
      }
      break;
    }
  }
}

/**
 * The property on an engine: `runs` random step sequences one step at a time, and `concurrentRuns` sequences of
 * batches whose steps run at once (their requests interleave at every storage call), the invariants checked after
 * each step or batch.
 */
export function blocksPropertyCases(engine: TestEngine, runs: number, concurrentRuns = 0): void {
  it(`never gives two live claims overlapping space in a pool tree, and holds every block inside a range (${runs} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 25 }), async (steps) => {
        const tree = await openTree(engine);
        let items = await allItems(tree.api.container.table);
        for (const s of steps) {
          const before = growing(items, tree.clock.nowMs());
          await runStep(tree, s, true);
          items = await allItems(tree.api.container.table);
          checkTree(items, tree.clock.nowMs());
          if (claimsInG(s) > 0) checkGrowth(before, growing(items, tree.clock.nowMs()), claimsInG(s));
        }
      }),
      { numRuns: runs },
    );
  });

  if (concurrentRuns > 0)
    it(`keeps the same invariants when steps run at once, in orders fast-check's scheduler chooses (${concurrentRuns} runs)`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.scheduler(),
          fc.array(fc.array(stepAmong(2), { minLength: 2, maxLength: 4 }), { minLength: 3, maxLength: 10 }),
          async (scheduler, batches) => {
            const gate: Gate = {};
            const tree = await openTree(scheduledEngine(engine, gate));
            let items = await allItems(tree.api.container.table);
            for (const batch of batches) {
              const before = growing(items, tree.clock.nowMs());
              gate.scheduler = scheduler;
              await scheduler.waitFor(Promise.all(batch.map((s) => runStep(tree, s, false))));
              gate.scheduler = undefined;
              items = await allItems(tree.api.container.table);
              checkTree(items, tree.clock.nowMs());
              // A grown range removed at once may take room the claims counted on: the bound is for the other batches.
              const claims = batch.reduce((sum, s) => sum + claimsInG(s), 0);
              if (claims > 0 && !batch.some((s) => s.op === 'deleteGrown'))
                checkGrowth(before, growing(items, tree.clock.nowMs()), claims);
            }
          },
        ),
        { numRuns: concurrentRuns },
      );
    });
}

/** While `scheduler` is set, every storage call of the table waits for the scheduler to let it run. */
interface Gate {
  scheduler?: fc.Scheduler;
}

/**
 * The engine's tables, each call (read, write, transaction) started only when the scheduler picks it among the calls
 * waiting: the steps of a batch then interleave at every storage call in an order fast-check draws (and shrinks), as
 * concurrent requests on separate containers do, rather than in the one order the event loop gives.
 */
function scheduledEngine(engine: TestEngine, gate: Gate): TestEngine {
  return {
    name: `${engine.name}, scheduled`,
    async fresh(prefix?: string) {
      const fresh = await engine.fresh(prefix);
      const table = new Proxy(fresh.table, {
        get(target, property, receiver) {
          const value: unknown = Reflect.get(target, property, receiver);
          if (typeof value !== 'function') return value;
          return (...args: unknown[]) => {
            const call = () => (value as (...a: unknown[]) => unknown).apply(target, args);
            const scheduler = gate.scheduler;
            return scheduler ? scheduler.schedule(Promise.resolve(), String(property)).then(call) : call();
          };
        },
      });
      return { ...fresh, table };
    },
  };
}

/** A parent claim's release and a child range's creation from it, at once, in every order the scheduler draws. */
export function releaseBesideChildCases(engine: TestEngine, runs: number): void {
  it(`never both releases a claim and makes a range of its block, whatever the order of their storage calls (${runs} runs)`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), async (scheduler) => {
        // Prepare: top's claim t0 holds a block; c0 may make a range of it.
        const gate: Gate = {};
        const tree = await openTree(scheduledEngine(engine, gate));
        const made = await tree.api.call('POST', '/v1/pools/top/claims', { name: 't0', owner: owner('t0') });
        const block = blockOf(made.body);
        // Act: both at once.
        gate.scheduler = scheduler;
        const [released, range] = await scheduler.waitFor(
          Promise.all([
            tree.api.call('DELETE', '/v1/pools/top/claims/t0'),
            tree.api.call('POST', '/v1/pools/c0/ranges', {
              cidr: block,
              name: 'r',
              source: { pool: 'top', claim: 't0' },
            }),
          ]),
        );
        gate.scheduler = undefined;
        // Assess: one of them won; the tree holds.
        expect([released.status, range.status], JSON.stringify([released.body, range.body])).not.toEqual([204, 201]);
        checkTree(await allItems(tree.api.container.table), tree.clock.nowMs());
      }),
      { numRuns: runs },
    );
  });
}
