import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HttpClient } from '../../cli/api/http-client.ts';
import { IpamApi } from '../../cli/api/ipam-api.ts';
import { add, renew, type CommandContext } from '../../cni/commands.ts';
import { parseNetworkConfig, type NetworkConfig } from '../../cni/config.ts';
import { fileCache } from '../../cni/node-cache.ts';
import type { TestEngine } from '../support/engines.ts';
import { pluginFetch } from '../support/in-process-fetch.ts';
import { owner, reconcilerHarness, testSettings, type ReconcilerHarness } from '../support/reconciler.ts';

/**
 * The node's renewer (RENEW): the plugin's claims carry a lease (ipam.leaseSeconds); a live node renews its own, a
 * node that stopped renewing has its claims expire and the reconciler release them, so its addresses come back.
 */
export function cniRenewCases(engine: TestEngine): void {
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
      // One listing page and one renewal per claim: the API renews one claim a request.
      expect(runs.every((r) => r.requests === 1 + liveClaims.length)).toBe(true);
      expect(report.repairs.ClaimExpired).toBe(2);
      expect(Object.values(after).sort()).toEqual(liveClaims);
      expect(await claimsOf('node-dead')).toEqual([]);
      expect((await claimsOf('node-live')).sort()).toEqual(liveClaims);
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
