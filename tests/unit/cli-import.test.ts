/**
 * `ipam import whereabouts` against the real handler in process (MemoryTable): whereabouts' IPPool and
 * OverlappingRangeIPReservation objects in the shapes its CRDs define, as `kubectl get ... -A -o yaml` prints them.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HttpClient } from '../../cli/api/http-client.ts';
import { IpamApi } from '../../cli/api/ipam-api.ts';
import { claimName } from '../../cni/attachment.ts';
import { del } from '../../cni/commands.ts';
import { fileCache } from '../../cni/node-cache.ts';
import { networkConfigOf } from '../../cli/commands/import.ts';
import { planImport, readWhereabouts } from '../../cli/whereabouts.ts';
import { testApi, type TestApi } from '../support/api.ts';
import { runCli } from '../support/cli.ts';
import { memoryEngine } from '../support/engines.ts';
import { cliFetch, pluginFetch } from '../support/in-process-fetch.ts';

const dir = mkdtempSync(join(tmpdir(), 'ipam-import-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Two overlapping ranges (a /24 and the /25 inside it), as two IPPools of whereabouts. */
const IPPOOLS = `apiVersion: v1
items:
- apiVersion: whereabouts.cni.cncf.io/v1alpha1
  kind: IPPool
  metadata:
    name: storage-10.70.0.0-24
    namespace: kube-system
  spec:
    range: 10.70.0.0/24
    allocations:
      "5":
        id: c-web-0
        podref: default/web-0
        ifname: net1
      "6":
        id: c-db-old
        podref: default/db-0
        ifname: net1
      "7":
        id: c-db-new
        podref: default/db-0
        ifname: net1
      "9":
        id: c-a
        podref: default/a
        ifname: net1
- apiVersion: whereabouts.cni.cncf.io/v1alpha1
  kind: IPPool
  metadata:
    name: storage-10.70.0.0-25
    namespace: kube-system
  spec:
    range: 10.70.0.0/25
    allocations:
      "5":
        id: c-web-0
        podref: default/web-0
        ifname: net1
      "9":
        id: c-b
        podref: default/b
        ifname: net1
      "12":
        id: c-legacy
        podref: default/legacy
kind: List
metadata:
  resourceVersion: ""
`;

const RESERVATIONS = `apiVersion: v1
items:
- apiVersion: whereabouts.cni.cncf.io/v1alpha1
  kind: OverlappingRangeIPReservation
  metadata:
    name: 10.70.0.5
    namespace: kube-system
  spec:
    containerid: c-web-0
    ifname: net1
    podref: default/web-0
- apiVersion: whereabouts.cni.cncf.io/v1alpha1
  kind: OverlappingRangeIPReservation
  metadata:
    name: storage-10.70.0.20
    namespace: kube-system
  spec:
    containerid: c-cache
    ifname: net1
    podref: default/cache
- apiVersion: whereabouts.cni.cncf.io/v1alpha1
  kind: OverlappingRangeIPReservation
  metadata:
    name: 10.70.0.30
    namespace: kube-system
  spec:
    containerid: c-taken
    ifname: net1
    podref: default/taken
kind: List
`;

const CONFLIST = JSON.stringify({
  cniVersion: '1.0.0',
  name: 'storage',
  plugins: [
    {
      type: 'macvlan',
      master: 'eth1',
      ipam: { type: 'ipam-cni', endpoint: 'http://ipam.test', range: '10.70.0.0/24', network_name: 'storage' },
    },
  ],
});

function files(): { config: string; pools: string; reservations: string } {
  const paths = {
    config: join(dir, 'storage.conflist'),
    pools: join(dir, 'pools.yaml'),
    reservations: join(dir, 'reservations.yaml'),
  };
  writeFileSync(paths.config, CONFLIST);
  writeFileSync(paths.pools, IPPOOLS);
  writeFileSync(paths.reservations, RESERVATIONS);
  return paths;
}

const attachmentClaim = (containerID: string) => claimName('storage', { containerID, ifname: 'net1' });

async function claimsOf(
  api: TestApi,
): Promise<{ name: string; addresses: string[]; owner: { name: string }; labels: Record<string, string> }[]> {
  const page = await api.call('GET', '/v1/pools/storage/claims');
  return (page.body.items ?? []).map((c) => ({
    name: String(c.name),
    addresses: (c.addresses as { address: string }[]).map((a) => a.address),
    owner: c.owner as { name: string },
    labels: c.labels as Record<string, string>,
  }));
}

describe('Import from whereabouts: the plan', () => {
  it('reads IPPools by offset and reservations by name, keeps one holding per address, and merges an attachment', () => {
    // Act
    const state = readWhereabouts([IPPOOLS, RESERVATIONS]);
    const plan = planImport(state, { network: 'storage' });
    // Assess
    expect(state.unreadable).toEqual([]);
    expect(plan.claims.map((c) => [c.spec.addresses.join(','), c.podref, c.attachment])).toEqual([
      ['10.70.0.12', 'default/legacy', 'c-legacy/eth0'],
      ['10.70.0.20', 'default/cache', 'c-cache/net1'],
      ['10.70.0.30', 'default/taken', 'c-taken/net1'],
      ['10.70.0.5', 'default/web-0', 'c-web-0/net1'],
      ['10.70.0.6', 'default/db-0', 'c-db-old/net1'],
      ['10.70.0.7', 'default/db-0', 'c-db-new/net1'],
      ['10.70.0.9', 'default/a', 'c-a/net1'],
    ]);
    expect(plan.skipped).toEqual([
      expect.stringMatching(/^10\.70\.0\.9: whereabouts holds it for default\/a .* and for default\/b /),
    ]);
    expect(plan.notes).toEqual(
      expect.arrayContaining([
        expect.stringContaining(
          '10.70.0.12: IPPool kube-system/storage-10.70.0.0-25 offset 12 names no ifname; eth0 was assumed',
        ),
        expect.stringContaining('default/db-0 holds addresses under 2 attachments'),
      ]),
    );
  });

  it('makes one dual-stack claim of an attachment with an address of each family, and an extra claim for a second address of a family', () => {
    // Prepare
    const pools = `kind: IPPool
metadata: { name: v4, namespace: kube-system }
spec: { range: 10.71.0.0/24, allocations: { "3": { id: c1, podref: ns/p, ifname: net1 }, "4": { id: c1, podref: ns/p, ifname: net1 } } }
---
kind: IPPool
metadata: { name: v6, namespace: kube-system }
spec: { range: "fd71::/64", allocations: { "16": { id: c1, podref: ns/p, ifname: net1 } } }
`;
    // Act
    const plan = planImport(readWhereabouts([pools]), { network: 'n', clusterId: 'east' });
    // Assess
    const own = plan.claims.find((c) => c.releasedByDel)!;
    expect(own.spec).toMatchObject({
      name: claimName('n', { containerID: 'c1', ifname: 'net1' }),
      ipFamilyPolicy: 'RequireDualStack',
      ipFamilies: ['IPv4', 'IPv6'],
      addresses: ['10.71.0.3', 'fd71::10'],
    });
    expect(own.spec.labels).toEqual({
      'cni.ipam/network': 'n',
      'cni.ipam/container-id': 'c1',
      'cni.ipam/ifname': 'net1',
      'cni.ipam/cluster': 'east',
    });
    const extra = plan.claims.filter((c) => !c.releasedByDel);
    expect(extra.map((c) => c.spec.addresses)).toEqual([['10.71.0.4']]);
    expect(plan.notes).toEqual([expect.stringContaining('10.71.0.4: a second IPv4 address of ns/p')]);
  });

  it('reads the ipam-cni plugin of a conflist and of a NetworkAttachmentDefinition', () => {
    expect(networkConfigOf(CONFLIST)).toMatchObject({ name: 'storage', ipam: { pool: 'storage' } });
    const nad = `apiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\nmetadata: { name: storage-net }\nspec:\n  config: '${JSON.stringify({ cniVersion: '1.0.0', name: 'storage-net', type: 'macvlan', ipam: { type: 'ipam-cni', endpoint: 'http://x', range: '10.1.0.0/24' } })}'\n`;
    expect(networkConfigOf(nad)).toMatchObject({ name: 'storage-net', ipam: { pool: 'storage-net' } });
    expect(() =>
      networkConfigOf(JSON.stringify({ cniVersion: '1.0.0', name: 'n', ipam: { type: 'whereabouts' } })),
    ).toThrow('switch the type');
  });
});

describe('ipam import whereabouts', () => {
  it('prints the plan on --dry-run and sends nothing', async () => {
    // Prepare
    const api = await testApi({}, {}, undefined, memoryEngine);
    const fetch = cliFetch(api);
    const paths = files();
    // Act
    const run = await runCli(
      ['import', 'whereabouts', '--config', paths.config, '-f', paths.pools, '-f', paths.reservations, '--dry-run'],
      { fetch: fetch.fetch },
    );
    // Assess
    expect(run.code, run.err).toBe(0);
    expect(fetch.requests()).toBe(0);
    expect(run.out).toContain(
      `claim ${attachmentClaim('c-web-0')} 10.70.0.5 for Pod default/web-0 (c-web-0/net1) in pool storage`,
    );
    expect(run.out).toContain('skipped: 10.70.0.9: whereabouts holds it for default/a');
    expect(run.out).toContain('dry run: 7 claims planned in pool storage, 1 addresses skipped; nothing was sent');
  });

  it('claims every address in use for its pod, skips one held by another owner, changes nothing when run again, and a DEL of the pod releases it', async () => {
    // Prepare: ipam-cni already holds 10.70.0.30 for someone else.
    const api = await testApi({}, {}, undefined, memoryEngine);
    const fetch = cliFetch(api);
    const paths = files();
    const argv = ['import', 'whereabouts', '--config', paths.config, '-f', paths.pools, '-f', paths.reservations];
    expect((await runCli(['create', 'pool', 'storage'], { fetch: fetch.fetch })).code).toBe(0);
    expect((await runCli(['create', 'range', 'storage', '10.70.0.0/24'], { fetch: fetch.fetch })).code).toBe(0);
    expect(
      (
        await api.call('POST', '/v1/pools/storage/claims', {
          name: 'other',
          owner: { kind: 'Service', name: 'x', uid: 'x1' },
          addresses: ['10.70.0.30'],
        })
      ).status,
    ).toBe(201);
    // Act
    const first = await runCli(argv, { fetch: fetch.fetch });
    const afterFirst = await claimsOf(api);
    const second = await runCli(argv, { fetch: fetch.fetch });
    const afterSecond = await claimsOf(api);
    // Assess
    expect(first.code, first.err).toBe(0);
    expect(first.out).toContain('imported into pool storage: 6 created, 0 unchanged, 2 skipped');
    expect(first.out).toMatch(
      /skipped: 10\.70\.0\.30 for Pod default\/taken \(c-taken\/net1\) as claim \S+: held by another owner in ipam-cni/,
    );
    expect(second.out).toContain('imported into pool storage: 0 created, 6 unchanged, 2 skipped');
    expect(afterSecond).toEqual(afterFirst);
    const web = afterFirst.find((c) => c.addresses.includes('10.70.0.5'))!;
    expect(web).toMatchObject({
      name: attachmentClaim('c-web-0'),
      owner: { name: 'default/web-0' },
      labels: { 'cni.ipam/network': 'storage', 'cni.ipam/container-id': 'c-web-0', 'cni.ipam/ifname': 'net1' },
    });
    expect(afterFirst.find((c) => c.addresses.includes('10.70.0.30'))?.name).toBe('other');
    expect(afterFirst.find((c) => c.addresses.includes('10.70.0.9'))?.owner.name).toBe('default/a');
    // A DEL of the pod's attachment, as the plugin runs it after the switch, releases its imported address.
    const config = networkConfigOf(CONFLIST);
    const ctx = {
      api: new IpamApi(new HttpClient({ endpoint: new URL('http://ipam.test'), fetch: pluginFetch(api).fetch })),
      node: 'n1',
      log: () => undefined,
      cache: fileCache(join(dir, 'state'), () => undefined, 1000),
    };
    await del(ctx, config, { containerID: 'c-web-0', ifname: 'net1' });
    expect((await api.call('GET', '/v1/pools/storage/addresses/10.70.0.5')).status).toBe(404);
  });
});
