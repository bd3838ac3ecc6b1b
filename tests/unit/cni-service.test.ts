/**
 * The plugin's commands against the real HTTP handler in process (MemoryTable), through the plugin's own client and a
 * fetch that hands each request to the handler: what the plugin and the service do together, without a network.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HttpClient, type FetchLike } from '../../cli/api/http-client.ts';
import { IpamApi } from '../../cli/api/ipam-api.ts';
import { add, del, gc, status, type CommandContext } from '../../cni/commands.ts';
import { parseNetworkConfig, parseStaticAddresses, type NetworkConfig } from '../../cni/config.ts';
import { run } from '../../cni/main.ts';
import { CniError } from '../../cni/errors.ts';
import { fileCache } from '../../cni/node-cache.ts';
import { MemoryTable } from '../../shared/adapters/memory/memory-table.ts';
import type { Query, QueryPage } from '../../shared/adapters/dynamodb/table.ts';
import { testApi, type TestApi } from '../support/api.ts';
import { pluginFetch } from '../support/in-process-fetch.ts';
import { conflictOnceOn, type TestEngine } from '../support/engines.ts';
import { owner } from '../support/fakes.ts';
import { FollowedTable } from '../support/stream-follower.ts';

const ENDPOINT = 'http://ipam.test';
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Table calls and items read, counted below the handler. */
interface Reads {
  calls: number;
  items: number;
}

/** The memory engine, its reads counted. */
function countedEngine(reads: Reads): TestEngine {
  return {
    name: 'memory, counted',
    fresh: async () => {
      const inner = new MemoryTable({ name: 'counted' });
      const counted = new Proxy(inner, {
        get(target, key, receiver) {
          const value = Reflect.get(target, key, receiver) as unknown;
          if (typeof value !== 'function') return value;
          if (key === 'query') {
            return async (query: Query): Promise<QueryPage> => {
              reads.calls += 1;
              const page = await inner.query(query);
              reads.items += page.scanned;
              return page;
            };
          }
          if (key === 'get' || key === 'batchGet' || key === 'describe') {
            return (...args: unknown[]) => {
              reads.calls += 1;
              return (value as (...a: unknown[]) => unknown).apply(target, args);
            };
          }
          return (value as (...a: unknown[]) => unknown).bind(target);
        },
      });
      return { table: new FollowedTable(counted), env: { TABLE_NAME: 'counted', LOCAL_STACK: 'true' } };
    },
  };
}

function configOf(network: string, ipam: Record<string, unknown>, extra: Record<string, unknown> = {}): NetworkConfig {
  return parseNetworkConfig(
    JSON.stringify({
      cniVersion: '1.1.0',
      name: network,
      type: 'bridge',
      ipam: { type: 'ipam-cni', endpoint: ENDPOINT, ...ipam },
      ...extra,
    }),
  );
}

function contextOf(
  api: TestApi,
  options: { node?: string; timeoutMs?: number; fetch?: FetchLike; stateDir?: string } = {},
): CommandContext {
  const stateDir = options.stateDir ?? mkdtempSync(join(tmpdir(), 'ipam-cni-node-'));
  dirs.push(stateDir);
  const http = new HttpClient({
    endpoint: new URL(ENDPOINT),
    fetch: options.fetch ?? pluginFetch(api).fetch,
    timeoutMs: options.timeoutMs ?? 10_000,
  });
  return {
    api: new IpamApi(http),
    node: options.node ?? 'node-1',
    log: () => undefined,
    cache: fileCache(stateDir, () => undefined, 10_000),
  };
}

const attachment = (id: string) => ({ containerID: id, ifname: 'eth0' });

async function claimNames(api: TestApi, pool: string): Promise<string[]> {
  const page = await api.call('GET', `/v1/pools/${pool}/claims`);
  return (page.body.items ?? []).map((c) => String(c.name)).sort();
}

describe('ipam-cni with the service: an ADD the plugin gave up on never leaves a claim', () => {
  it('lets no claim commit after the plugin gave up and the runtime ran DEL, however late the requests arrive', async () => {
    // Prepare: claim requests are held on the way to the service; the plugin times each attempt out after 300 ms.
    const api = await testApi({}, {}, undefined, countedEngine({ calls: 0, items: 0 }));
    const slow = pluginFetch(api, (method, url) => method === 'POST' && url.pathname.endsWith('/claims'));
    const config = configOf('late', { range: '10.60.0.0/24', timeoutMs: 300 });
    const ctx = contextOf(api, { fetch: slow.fetch, timeoutMs: 300 });
    // Act: ADD gives up (code 11) after its attempts, the runtime's DEL finds nothing, then the requests arrive.
    const added = await add(ctx, config, attachment('c-late'), owner('pod-late')).catch((e: unknown) => e);
    const removed = await del(contextOf(api), config, attachment('c-late')).then(() => 'ok');
    slow.release();
    const answers = await Promise.all(slow.held);
    // Assess
    expect(added).toBeInstanceOf(CniError);
    expect((added as CniError).code).toBe(11);
    expect(removed).toBe('ok');
    expect(slow.held.length).toBeGreaterThan(0);
    expect(answers.map((a) => a.status)).toEqual(slow.held.map(() => 408));
    expect(await claimNames(api, 'late')).toEqual([]);
    expect((await api.call('GET', '/v1/pools/late/addresses')).body.items).toEqual([]);
  });
});

describe('ipam-cni with the service: GC', () => {
  it('refuses a GC without cni.dev/valid-attachments with code 7 and releases nothing', async () => {
    // Prepare
    const api = await testApi({}, {}, undefined, countedEngine({ calls: 0, items: 0 }));
    const config = configOf('gcn', { range: '10.61.0.0/24' });
    const ctx = contextOf(api);
    for (const id of ['a', 'b']) await add(ctx, config, attachment(id), owner(id));
    const before = await claimNames(api, 'gcn');
    // Act
    const outcome = await gc(ctx, config).catch((e: unknown) => e);
    // Assess
    expect(outcome).toBeInstanceOf(CniError);
    expect((outcome as CniError).code).toBe(7);
    expect((outcome as CniError).message).toContain('cni.dev/valid-attachments');
    expect(before).toHaveLength(2);
    expect(await claimNames(api, 'gcn')).toEqual(before);
  });

  it('releases only the claims of its own node identity: a cluster id keeps two clusters with the same host names apart', async () => {
    // Prepare: two clusters share the pool; a node of each is called ip-10-0-1-23.
    const api = await testApi({}, {}, undefined, countedEngine({ calls: 0, items: 0 }));
    const ipam = { pool: 'shared', range: '10.62.0.0/24' };
    const east = configOf('pods', { ...ipam, clusterId: 'east' });
    const west = configOf('pods', { ...ipam, clusterId: 'west' });
    const eastNode = contextOf(api, { node: 'ip-10-0-1-23' });
    const westNode = contextOf(api, { node: 'ip-10-0-1-23' });
    await add(eastNode, east, attachment('e1'), owner('e1'));
    await add(westNode, west, attachment('w1'), owner('w1'));
    await add(westNode, west, attachment('w2'), owner('w2'));
    const westClaims = (await claimNames(api, 'shared')).length;
    // Act: east's node has no pods left.
    const result = await gc(
      eastNode,
      configOf('pods', { ...ipam, clusterId: 'east' }, { 'cni.dev/valid-attachments': [] }),
    );
    // Assess
    expect(westClaims).toBe(3);
    expect(result.released).toHaveLength(1);
    const left = (await api.call('GET', '/v1/pools/shared/claims')).body.items ?? [];
    expect(left.map((c) => (c.labels as Record<string, string>)['cni.ipam/container-id']).sort()).toEqual(['w1', 'w2']);
    expect(left.every((c) => (c.labels as Record<string, string>)['cni.ipam/cluster'] === 'west')).toBe(true);
  });

  it('labels claims with the configured node name instead of the host name, and GC selects by it', async () => {
    // Prepare
    const api = await testApi({}, {}, undefined, countedEngine({ calls: 0, items: 0 }));
    const config = configOf('named', { range: '10.63.0.0/24', nodeName: 'worker-7' });
    const ctx = contextOf(api, { node: 'ip-10-0-9-9' });
    // Act
    await add(ctx, config, attachment('n1'), owner('n1'));
    const claims = (await api.call('GET', '/v1/pools/named/claims')).body.items ?? [];
    const result = await gc(
      ctx,
      configOf('named', { range: '10.63.0.0/24', nodeName: 'worker-7' }, { 'cni.dev/valid-attachments': [] }),
    );
    // Assess
    expect((claims[0]?.labels as Record<string, string>)['cni.ipam/node']).toBe('worker-7');
    expect(result.released).toHaveLength(1);
  });
});

describe('ipam-cni with the service: STATUS', () => {
  /** A pool with a reuse delay, `held` claims and `released` released ones, made through the API. */
  async function poolWithLeases(
    api: TestApi,
    pool: string,
    cidr: string,
    held: number,
    released: number,
  ): Promise<void> {
    expect((await api.call('POST', '/v1/pools', { name: pool, reuseDelaySeconds: 600 })).status).toBe(201);
    expect((await api.call('POST', `/v1/pools/${pool}/ranges`, { cidr })).status).toBe(201);
    for (let i = 0; i < held + released; i += 1)
      expect(
        (await api.call('POST', `/v1/pools/${pool}/claims`, { name: `c${i}`, owner: owner(`u${i}`) })).status,
      ).toBe(201);
    for (let i = 0; i < released; i += 1)
      expect((await api.call('DELETE', `/v1/pools/${pool}/claims/c${i}`)).status).toBe(204);
  }

  it('costs the service the same reads for a /24 and a /16 pool with a reuse delay', async () => {
    // Prepare
    const small: Reads = { calls: 0, items: 0 };
    const large: Reads = { calls: 0, items: 0 };
    const smallApi = await testApi({}, {}, undefined, countedEngine(small));
    const largeApi = await testApi({}, {}, undefined, countedEngine(large));
    await poolWithLeases(smallApi, 'pods', '10.64.0.0/24', 4, 4);
    await poolWithLeases(largeApi, 'pods', '10.64.0.0/16', 150, 150);
    const ipam = { range: '10.64.0.0/24', reuseDelaySeconds: 600 };
    const smallCtx = contextOf(smallApi);
    const largeCtx = contextOf(largeApi);
    await status(smallCtx, configOf('pods', ipam));
    await status(largeCtx, configOf('pods', { ...ipam, range: '10.64.0.0/16' }));
    small.calls = small.items = large.calls = large.items = 0;
    // Act: a readiness poll on each, warm as a node's are.
    await status(smallCtx, configOf('pods', ipam));
    await status(largeCtx, configOf('pods', { ...ipam, range: '10.64.0.0/16' }));
    // Assess
    expect(large).toEqual(small);
    expect(small.items).toBeLessThanOrEqual(2);
  });

  it('answers 50 once an ADD of this node found the pool exhausted, and ready again after a DEL of this node', async () => {
    // Prepare: a /30 holds two addresses.
    const api = await testApi({}, {}, undefined, countedEngine({ calls: 0, items: 0 }));
    const config = configOf('tiny', { range: '10.65.0.0/30' });
    const ctx = contextOf(api);
    for (const id of ['t1', 't2']) await add(ctx, config, attachment(id), owner(id));
    await status(ctx, config);
    // Act
    const third = await add(ctx, config, attachment('t3'), owner('t3')).catch((e: unknown) => e);
    const full = await status(ctx, config).catch((e: unknown) => e);
    await del(ctx, config, attachment('t1'));
    const again = await status(ctx, config).then(() => 'ready');
    // Assess
    expect((third as CniError).code).toBe(100);
    expect(full).toBeInstanceOf(CniError);
    expect((full as CniError).code).toBe(50);
    expect((full as CniError).details).toContain('IPv4');
    expect(again).toBe('ready');
  });

  it("answers 50 from the service's warning (GET pool's warnings) when the family the network needs is full, though no ADD of this node failed; ready once it recovered (issue 37)", async () => {
    // Prepare: a /29 (6 addresses) filled by other callers, the stream function's check deciding "full"
    const api = await testApi(
      { announcer: { announce: async () => undefined } },
      {},
      undefined,
      countedEngine({ calls: 0, items: 0 }),
    );
    const config = configOf('busy', { range: '10.66.0.0/29' });
    const names = Array.from({ length: 6 }, (_, i) => `c${i}`);
    expect((await api.call('POST', '/v1/pools', { name: 'busy' })).status).toBe(201);
    expect((await api.call('POST', '/v1/pools/busy/ranges', { cidr: '10.66.0.0/29' })).status).toBe(201);
    for (const name of names)
      expect((await api.call('POST', '/v1/pools/busy/claims', { name, owner: owner(name) })).status).toBe(201);
    await api.container.mirror.exhaustion!.check('busy');
    const polls = (ctx: CommandContext) =>
      status(ctx, config).then(
        () => 'ready',
        (e: unknown) => e,
      );
    // Act 1: a node that never ADDed to the pool
    const full = await polls(contextOf(api, { node: 'node-a' }));
    // ... then the pool emptied and checked again, and another node's first poll
    for (const name of names) expect((await api.call('DELETE', `/v1/pools/busy/claims/${name}`)).status).toBe(204);
    await api.container.mirror.exhaustion!.check('busy');
    const recovered = await polls(contextOf(api, { node: 'node-b' }));
    // Assess
    expect(full).toBeInstanceOf(CniError);
    expect({ code: (full as CniError).code, msg: (full as CniError).msg }).toEqual({
      code: 50,
      msg: 'the pool has no free address',
    });
    expect((full as CniError).details).toMatch(
      /^pool busy: no free IPv4 address \(the service's warning: IPv4 space full since \S+\)$/,
    );
    expect(recovered).toBe('ready');
  });

  it("reads the service's warning at most once per node in EXHAUSTED_MEMORY_MS, and not for a family the network does not need (issue 37)", async () => {
    // Prepare: a dual-stack pool whose IPv6 /126 is full; the network asks for IPv4 only
    const reads: Reads = { calls: 0, items: 0 };
    const api = await testApi({ announcer: { announce: async () => undefined } }, {}, undefined, countedEngine(reads));
    expect((await api.call('POST', '/v1/pools', { name: 'mixed' })).status).toBe(201);
    expect((await api.call('POST', '/v1/pools/mixed/ranges', { cidr: '10.67.0.0/24' })).status).toBe(201);
    expect((await api.call('POST', '/v1/pools/mixed/ranges', { cidr: 'fd00:67::/126' })).status).toBe(201);
    for (
      let i = 0;
      (await api.call('POST', '/v1/pools/mixed/claims', { name: `v${i}`, owner: owner(`v${i}`), ipFamilies: ['IPv6'] }))
        .status === 201;
      i += 1
    )
      expect(i).toBeLessThan(4);
    await api.container.mirror.exhaustion!.check('mixed');
    expect((await api.call('GET', '/v1/pools/mixed')).body.warnings).toMatchObject({ IPv6: { below: 'full' } });
    const ctx = contextOf(api);
    const v4 = configOf('mixed', { range: '10.67.0.0/24' });
    const v6 = configOf('mixed', { range: 'fd00:67::/126' });
    // Act
    const first = await status(ctx, v4).then(
      () => 'ready',
      (e: unknown) => e,
    );
    reads.calls = reads.items = 0;
    const second = await status(ctx, v4).then(
      () => 'ready',
      (e: unknown) => e,
    );
    const warm = { ...reads };
    const needsV6 = await status(contextOf(api), v6).then(
      () => 'ready',
      (e: unknown) => (e as CniError).code,
    );
    // Assess: the warm poll costs what it cost before the warnings (the health route's read)
    expect([first, second, needsV6]).toEqual(['ready', 'ready', 50]);
    expect(warm.items).toBeLessThanOrEqual(2);
  });
});

describe('ipam-cni with the service: a static address (runtimeConfig.ips)', () => {
  it('gives two racing ADDs for one free static address one win and tells the other it is taken only because it is', async () => {
    // Prepare: the first commit writing the address meets another transaction in flight (TransactionConflict), as
    // two ADDs racing for one address can both be.
    const race = conflictOnceOn('10.66.0.10');
    const api = await testApi({}, {}, undefined, race.engine);
    const config = configOf('static', { range: '10.66.0.0/24' }, { runtimeConfig: { ips: ['10.66.0.10/24'] } });
    const ctx = contextOf(api);
    // Act
    const outcomes = await Promise.all(
      ['s1', 's2'].map((id) => add(ctx, config, attachment(id), owner(id)).catch((e: unknown) => e)),
    );
    // Assess
    expect(race.conflicts()).toBe(1);
    const won = outcomes.filter((o) => !(o instanceof CniError));
    const lost = outcomes.filter((o): o is CniError => o instanceof CniError);
    expect(won).toEqual([{ ips: [{ address: '10.66.0.10/24', version: '4' }], routes: [] }]);
    expect(lost).toHaveLength(1);
    expect(lost[0]!.code).toBe(101);
    expect(lost[0]!.details).toMatch(/^AlreadyAllocated: Address 10\.66\.0\.10 is already allocated to claim "cni-/);
  });

  it('refuses runtimeConfig.ips that are not addresses, or two of one family, with code 7', () => {
    expect(() => configOf('n', { range: '10.66.0.0/24' }, { runtimeConfig: { ips: ['ten'] } })).toThrow(
      'is not an IP address',
    );
    expect(() =>
      configOf('n', { range: '10.66.0.0/24' }, { runtimeConfig: { ips: ['10.66.0.1', '10.66.0.2'] } }),
    ).toThrow('one address per family');
  });

  it('reads CNI_ARGS IP= (Podman 4 sends --ip so) and refuses one that is not an address with code 7', async () => {
    const stateDir = mkdtempSync(join(tmpdir(), 'ipam-cni-args-'));
    dirs.push(stateDir);
    const stdin = JSON.stringify({
      cniVersion: '1.0.0',
      name: 'n',
      ipam: { type: 'ipam-cni', endpoint: 'http://127.0.0.1:1', range: '10.66.0.0/24', stateDir },
    });
    const env = { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c1', CNI_NETNS: '/x', CNI_IFNAME: 'eth0', CNI_PATH: '/x' };
    const bad = await run({ ...env, CNI_ARGS: 'IgnoreUnknown=1;IP=ten' }, stdin);
    expect(bad.exitCode).toBe(1);
    expect(JSON.parse(bad.stdout)).toMatchObject({ code: 7, details: expect.stringContaining('"ten"') });
    expect(parseStaticAddresses('10.66.0.77/24,fd00::7'.split(','))).toEqual(['10.66.0.77', 'fd00::7']);
  });
});
