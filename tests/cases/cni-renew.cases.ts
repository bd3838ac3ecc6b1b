import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../../cli/api/http-client.ts';
import { IpamApi } from '../../cli/api/ipam-api.ts';
import { claimName } from '../../cni/attachment.ts';
import { add, nodeClaimsKey, renew, type CommandContext } from '../../cni/commands.ts';
import { parseNetworkConfig, type NetworkConfig } from '../../cni/config.ts';
import { fileCache } from '../../cni/node-cache.ts';
import type { TestEngine } from '../support/engines.ts';
import { pluginFetch } from '../support/in-process-fetch.ts';
import { owner, reconcilerHarness, testSettings, type ReconcilerHarness } from '../support/reconciler.ts';

/**
 * The node's renewer (RENEW): the plugin's claims carry a lease (ipam.leaseSeconds); a live node renews its own, a
 * node that stopped renewing has its claims expire and the reconciler release them, so its addresses come back.
 */
export function cniRenewCases(engine: TestEngine, options: { manyPods?: boolean } = {}): void {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  const LEASE_S = 60;

  const config = (extra: Record<string, unknown> = {}): NetworkConfig =>
    parseNetworkConfig(
      JSON.stringify({
        cniVersion: '1.1.0',
        name: 'pods',
        type: 'bridge',
        ipam: {
          type: 'ipam-cni',
          endpoint: 'http://ipam.test',
          range: '10.70.0.0/24',
          leaseSeconds: LEASE_S,
          ...extra,
        },
      }),
    );

  function node(h: ReconcilerHarness, name: string): CommandContext {
    const stateDir = mkdtempSync(join(tmpdir(), 'ipam-cni-renew-'));
    dirs.push(stateDir);
    const http = new HttpClient({
      endpoint: new URL('http://ipam.test'),
      fetch: pluginFetch(h.api).fetch,
      timeoutMs: 10_000,
    });
    return {
      api: new IpamApi(http),
      node: name,
      log: () => undefined,
      cache: fileCache(stateDir, () => undefined, 10_000),
    };
  }

  async function addPods(n: CommandContext, cfg: NetworkConfig, prefix: string, count: number): Promise<void> {
    for (let i = 0; i < count; i++)
      await add(n, cfg, { containerID: `${prefix}${i}`, ifname: 'eth0' }, owner(`${prefix}${i}`));
  }

  /** `count` runs of a node's renewer, one every LEASE_S / 3 (the documented period). */
  async function renewals(h: ReconcilerHarness, n: CommandContext, cfg: NetworkConfig, count: number) {
    const runs: { renewed: string[]; requests: number }[] = [];
    for (let period = 0; period < count; period++) {
      h.clock.advance((LEASE_S * 1000) / 3);
      runs.push(await renew(n, cfg));
    }
    return runs;
  }

  async function held(h: ReconcilerHarness): Promise<Record<string, string>> {
    const page = await h.api.call('GET', '/v1/pools/pods/addresses');
    return Object.fromEntries((page.body.items ?? []).map((l) => [String(l.address), String(l.claim)]));
  }

  describe(`ipam-cni RENEW: a crashed node's addresses come back (${engine.name})`, () => {
    it("keeps a renewing node's claims and releases those of a node that stopped renewing, once expired", async () => {
      // Prepare: the commit deadline ADD sends is wall-clock time, so the service's clock starts at it.
      const h = await reconcilerHarness({ engine, start: Date.now() });
      const live = node(h, 'node-live');
      const dead = node(h, 'node-dead');
      const cfg = config();
      for (const id of ['l1', 'l2']) await add(live, cfg, { containerID: id, ifname: 'eth0' }, owner(id));
      for (const id of ['d1', 'd2']) await add(dead, cfg, { containerID: id, ifname: 'eth0' }, owner(id));
      const claimsOf = async (n: string) =>
        ((await h.api.call('GET', `/v1/pools/pods/claims?labelSelector=cni.ipam/node=${n}`)).body.items ?? []).map(
          (c) => String(c.name),
        );
      const liveClaims = (await claimsOf('node-live')).sort();
      const deadClaims = (await claimsOf('node-dead')).sort();
      const madeAt = h.clock.t;
      const expiry = (await h.api.call('GET', `/v1/pools/pods/claims/${deadClaims[0]}`)).body.expiresAt;
      // Act: the live node renews every LEASE_S / 3 (the documented period); the dead one never does.
      const runs: { renewed: string[]; requests: number }[] = [];
      // Until the dead node's claims are past their expiry and the reconciler's grace.
      const until = madeAt + LEASE_S * 1000 + testSettings.expiredClaimGraceMs;
      while (h.clock.t <= until) {
        h.clock.advance((LEASE_S * 1000) / 3);
        runs.push(await renew(live, cfg));
      }
      const report = await h.run();
      const after = await held(h);
      // Assess
      expect(expiry).toBe(new Date(madeAt + LEASE_S * 1000).toISOString());
      expect(liveClaims).toHaveLength(2);
      expect(deadClaims).toHaveLength(2);
      expect(runs.every((r) => [...r.renewed].sort().join() === liveClaims.join())).toBe(true);
      // The node's first run lists its claims once (a page); every run renews them all in one request.
      expect(runs.map((r) => r.requests)).toEqual([2, ...Array<number>(runs.length - 1).fill(1)]);
      expect(report.repairs.ClaimExpired).toBe(2);
      expect(Object.values(after).sort()).toEqual(liveClaims);
      expect(await claimsOf('node-dead')).toEqual([]);
      expect((await claimsOf('node-live')).sort()).toEqual(liveClaims);
    });

    it('renews 30 pods of a node in one request a run, whatever else the pool holds', async () => {
      // Prepare: node-a holds 30 pods, node-b 5 (the pool's other claims)
      const h = await reconcilerHarness({ engine, start: Date.now() });
      const cfg = config();
      const nodes = { a: node(h, 'node-a'), b: node(h, 'node-b') };
      await addPods(nodes.a, cfg, 'a', 30);
      await addPods(nodes.b, cfg, 'b', 5);
      // Act: three periods of node-a's renewer
      const runs = await renewals(h, nodes.a, cfg, 3);
      // Assess: the node's first run also lists its claims once (one page: 35 claims in the pool).
      expect(runs.map((r) => r.requests)).toEqual([2, 1, 1]);
      expect(runs.map((r) => r.renewed.length)).toEqual([30, 30, 30]);
      // docs/cni.md's figure: renewing every 300 s (leaseSeconds 900), 30 pods cost 3600 / 300 x 1 = 12 an hour.
      expect((3600 / 300) * runs[2]!.requests).toBe(12);
    });

    // The split into requests of 100 is the plugin's and the same on every engine: run where 101 ADDs are cheap.
    if (options.manyPods)
      it('renews 101 pods of a node in two requests a run', async () => {
        // Prepare
        const h = await reconcilerHarness({ engine, start: Date.now() });
        const cfg = config();
        const n = node(h, 'node-a');
        await addPods(n, cfg, 'a', 101);
        // Act
        const runs = await renewals(h, n, cfg, 3);
        // Assess
        expect(runs.map((r) => r.requests)).toEqual([3, 2, 2]);
        expect(runs.map((r) => r.renewed.length)).toEqual([101, 101, 101]);
      });

    it('forgets a claim released elsewhere once the service answers it NotFound, and renews the rest', async () => {
      // Prepare
      const h = await reconcilerHarness({ engine, start: Date.now() });
      const n = node(h, 'node-1');
      const cfg = config();
      for (const id of ['p1', 'p2']) await add(n, cfg, { containerID: id, ifname: 'eth0' }, owner(id));
      const first = await renew(n, cfg);
      const gone = claimName('pods', { containerID: 'p1', ifname: 'eth0' });
      expect((await h.api.call('DELETE', `/v1/pools/pods/claims/${gone}`)).status).toBe(204);
      // Act
      const second = await renew(n, cfg);
      const third = await renew(n, cfg);
      // Assess
      const kept = claimName('pods', { containerID: 'p2', ifname: 'eth0' });
      expect(first.renewed.sort()).toEqual([gone, kept].sort());
      expect([second.renewed, second.requests]).toEqual([[kept], 1]);
      expect([third.renewed, third.requests]).toEqual([[kept], 1]);
      const key = nodeClaimsKey(cfg, { node: 'node-1' });
      expect(n.cache.recordedClaims(key).records.map((r) => r.name)).toEqual([kept]);
    });

    it('fails an ADD whose claim it cannot record for RENEW (code 11), so the runtime releases it', async () => {
      // Prepare: a state folder that is a file
      const h = await reconcilerHarness({ engine, start: Date.now() });
      const dir = mkdtempSync(join(tmpdir(), 'ipam-cni-renew-'));
      dirs.push(dir);
      const stateDir = join(dir, 'not-a-folder');
      writeFileSync(stateDir, '');
      const n = { ...node(h, 'node-1'), cache: fileCache(stateDir, () => undefined, 500) };
      // Act
      const outcome = await add(n, config(), { containerID: 'p1', ifname: 'eth0' }, owner('p1')).catch(
        (e: unknown) => e,
      );
      // Assess
      expect(outcome).toMatchObject({ code: 11, msg: 'cannot record the claim for RENEW' });
    });

    it('refuses RENEW without ipam.leaseSeconds (code 7) and renews nothing', async () => {
      // Prepare
      const h = await reconcilerHarness({ engine, start: Date.now() });
      const n = node(h, 'node-1');
      await add(n, config({ leaseSeconds: undefined }), { containerID: 'p1', ifname: 'eth0' }, owner('p1'));
      // Act
      const outcome = await renew(n, config({ leaseSeconds: undefined })).catch((e: unknown) => e);
      // Assess
      expect(outcome).toMatchObject({ code: 7 });
      expect(String((outcome as Error).message)).toContain('RENEW needs ipam.leaseSeconds');
      const claims = (await h.api.call('GET', '/v1/pools/pods/claims')).body.items ?? [];
      expect(claims.map((c) => c.expiresAt)).toEqual([undefined]);
    });
  });
}
