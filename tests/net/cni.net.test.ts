/**
 * The CNI plugin (cni/, built to one file) under Debian's reference `bridge` plugin in real network namespaces,
 * against the local stack. Every namespace, bridge and network name carries the run's id; afterAll removes them all.
 * bridge 1.1.1 speaks CNI up to 1.0.0 and its CHECK is spuriously broken here, so CHECK, STATUS, GC and 1.1.0 are
 * exercised by calling the plugin directly, as bridge would delegate to it.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { LocalStack } from '../../scripts/local-stack.ts';
import { CniLab, runWithStdin, type PluginRun } from '../support/cni.ts';
import { callApi, startTestStack } from '../support/local-stack.ts';

/** A loopback port nothing listens on: the service, stopped. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function ipsOf(run: PluginRun): string[] {
  expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
  return ((run.json?.ips ?? []) as { address: string }[]).map((ip) => ip.address);
}

function bare(address: string): string {
  return address.slice(0, address.indexOf('/'));
}

describe('ipam-cni under the reference bridge plugin', () => {
  const lab = new CniLab();
  let stack: LocalStack;

  /** A bridge network config whose IPAM is this plugin. */
  const bridgeConfig = (network: string, bridge: string, ipam: Record<string, unknown>, cniVersion = '1.0.0') => ({
    cniVersion,
    name: network,
    type: 'bridge',
    bridge,
    isGateway: false,
    ipam: { type: 'ipam-cni', endpoint: stack.apiUrl, stateDir: lab.dir, ...ipam },
  });

  /** The lease of an address as the API sees it: 200 held, 404 free. */
  const leaseStatus = async (pool: string, address: string) =>
    (await callApi(stack, 'GET', `/v1/pools/${pool}/addresses/${encodeURIComponent(bare(address))}`)).status;

  beforeAll(async () => {
    await lab.build();
    // In process: 64 parallel requests would otherwise start 64 cold workers at once (scripts/local-stack.ts). A
    // longer DynamoDB request timeout than the stack's 3 s: DynamoDB Local shares this 2-core machine with 64 bridges
    // and plugins, and a 503 NotReady would test the machine's load, not the plugin.
    stack = await startTestStack({ inProcess: true, env: { DYNAMODB_REQUEST_TIMEOUT_MS: '30000' } });
  });

  afterAll(async () => {
    try {
      await lab.cleanup();
    } finally {
      await stack?.stop();
    }
  });

  it('is one self-contained executable: an ELF file that answers VERSION with an empty environment (no node, no PATH)', async () => {
    // Act
    const run = await runWithStdin(lab.pluginPath, [], { CNI_COMMAND: 'VERSION' }, '{"cniVersion":"1.0.0"}');
    // Assess
    expect(readFileSync(lab.pluginPath).subarray(0, 4)).toEqual(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
    expect(run.code, run.stderr).toBe(0);
    expect(run.json).toEqual({ cniVersion: '1.0.0', supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] });
  });

  it('attaches two namespaces through bridge with distinct addresses that ping each other', async () => {
    // Prepare
    const network = lab.network('two');
    const config = bridgeConfig(network, lab.bridgeName(), { range: '10.77.0.0/24' });
    const [a, b] = [await lab.netns(), await lab.netns()];
    // Act
    const addA = await lab.reference('bridge', 'ADD', config, {
      containerID: `${a.name}-c`,
      netns: a.path,
      args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-a;K8S_POD_UID=uid-${a.name}`,
    });
    const addB = await lab.reference('bridge', 'ADD', config, { containerID: `${b.name}-c`, netns: b.path });
    // Assess
    const [ipA] = ipsOf(addA);
    const [ipB] = ipsOf(addB);
    expect(ipA).toMatch(/^10\.77\.0\.\d+\/24$/);
    expect(ipB).toMatch(/^10\.77\.0\.\d+\/24$/);
    expect(ipA).not.toBe(ipB);
    expect(await lab.addresses(a.name)).toEqual([ipA]);
    expect(await lab.addresses(b.name)).toEqual([ipB]);
    expect(await lab.ping(a.name, bare(ipB!))).toBe(true);
    expect(await lab.ping(b.name, bare(ipA!))).toBe(true);
    // The pod from CNI_ARGS owns A's claim; B, without CNI_ARGS, is owned by its attachment.
    const leaseA = (await callApi(stack, 'GET', `/v1/pools/${network}/addresses/${bare(ipA!)}`)).body as {
      owner: unknown;
    };
    expect(leaseA.owner).toEqual({ kind: 'Pod', name: 'default/web-a', uid: `uid-${a.name}` });
    const leaseB = (await callApi(stack, 'GET', `/v1/pools/${network}/addresses/${bare(ipB!)}`)).body as {
      owner: unknown;
    };
    expect(leaseB.owner).toEqual({ kind: 'CNIAttachment', name: `${b.name}-c/eth0`, uid: `${b.name}-c/eth0` });
  });

  it('gives a dual-stack network one address per family', async () => {
    // Prepare
    const network = lab.network('dual');
    const config = bridgeConfig(network, lab.bridgeName(), {
      ipRanges: [{ range: '10.78.0.0/24' }, { range: 'fd78::/120' }],
    });
    const ns = await lab.netns();
    // Act
    const ips = ipsOf(await lab.reference('bridge', 'ADD', config, { containerID: `${ns.name}-c`, netns: ns.path }));
    // Assess
    expect(ips).toHaveLength(2);
    expect(ips[0]).toMatch(/^10\.78\.0\.\d+\/24$/);
    expect(ips[1]).toMatch(/^fd78::[0-9a-f]+\/120$/);
    expect((await lab.addresses(ns.name)).sort()).toEqual([...ips].sort());
  });

  it('succeeds on DEL twice, DEL after the namespace is gone and DEL of an attachment never added, and frees the addresses', async () => {
    // Prepare
    const network = lab.network('del');
    const config = bridgeConfig(network, lab.bridgeName(), { range: '10.79.0.0/24' });
    const [a, b] = [await lab.netns(), await lab.netns()];
    const [ipA] = ipsOf(await lab.reference('bridge', 'ADD', config, { containerID: `${a.name}-c`, netns: a.path }));
    const [ipB] = ipsOf(await lab.reference('bridge', 'ADD', config, { containerID: `${b.name}-c`, netns: b.path }));
    expect(await leaseStatus(network, ipA!)).toBe(200);
    expect(await leaseStatus(network, ipB!)).toBe(200);
    // Act
    const del1 = await lab.reference('bridge', 'DEL', config, { containerID: `${a.name}-c`, netns: a.path });
    const del2 = await lab.reference('bridge', 'DEL', config, { containerID: `${a.name}-c`, netns: a.path });
    await lab.deleteNetns(b.name);
    const delGone = await lab.reference('bridge', 'DEL', config, { containerID: `${b.name}-c`, netns: b.path });
    const delNever = await lab.reference('bridge', 'DEL', config, {
      containerID: `never-${lab.id}`,
      unset: ['CNI_NETNS'],
    });
    // Assess
    for (const run of [del1, del2, delGone, delNever]) expect(run.code, `${run.stdout}${run.stderr}`).toBe(0);
    expect(await leaseStatus(network, ipA!)).toBe(404);
    expect(await leaseStatus(network, ipB!)).toBe(404);
  });

  it('gives 64 parallel ADDs on one bridge 64 distinct addresses', async () => {
    // Prepare
    const network = lab.network('par');
    // Generous timeouts: 64 plugins and bridges start at once on a 2-core machine, and the test is about distinct
    // addresses, not speed (that is the benchmark's).
    const config = bridgeConfig(network, lab.bridgeName(), { range: '10.80.0.0/24', timeoutMs: 180_000 });
    const namespaces = await Promise.all(Array.from({ length: 64 }, () => lab.netns()));
    // Act
    const runs = await Promise.all(
      namespaces.map((ns) =>
        lab.reference('bridge', 'ADD', config, { containerID: `${ns.name}-c`, netns: ns.path, timeoutMs: 240_000 }),
      ),
    );
    // Assess
    const ips = runs.flatMap(ipsOf);
    expect(ips).toHaveLength(64);
    expect(new Set(ips).size).toBe(64);
    const page = (await callApi(stack, 'GET', `/v1/pools/${network}/addresses?limit=1000`)).body as {
      items: { address: string }[];
    };
    expect(page.items.map((l) => l.address).sort()).toEqual(ips.map(bare).sort());
  }, 300_000);

  it('fails CHECK when the claim was released behind its back or holds other addresses', async () => {
    // Prepare: the plugin called directly, as bridge delegates to it (bridge 1.1.1's own CHECK is broken here).
    const network = lab.network('chk');
    const config = {
      cniVersion: '1.0.0',
      name: network,
      type: 'bridge',
      ipam: { type: 'ipam-cni', endpoint: stack.apiUrl, stateDir: lab.dir, range: '10.81.0.0/24' },
    };
    const call = { containerID: `chk-${lab.id}`, netns: '/var/run/netns/unused' };
    const add = await lab.plugin('ADD', config, call);
    const [ip] = ipsOf(add);
    const prevResult = add.json;
    // Act
    const healthy = await lab.plugin('CHECK', { ...config, prevResult }, call);
    // Another address than the one ADD picked at random.
    const otherAddress = ip === '10.81.0.200/24' ? '10.81.0.201/24' : '10.81.0.200/24';
    const other = await lab.plugin(
      'CHECK',
      { ...config, prevResult: { cniVersion: '1.0.0', ips: [{ address: otherAddress }] } },
      call,
    );
    const claims = (await callApi(stack, 'GET', `/v1/pools/${network}/claims`)).body as { items: { name: string }[] };
    expect(claims.items).toHaveLength(1);
    expect((await callApi(stack, 'DELETE', `/v1/pools/${network}/claims/${claims.items[0]!.name}`)).status).toBe(204);
    const released = await lab.plugin('CHECK', { ...config, prevResult }, call);
    // Assess
    expect(ip).toMatch(/^10\.81\.0\.\d+\/24$/);
    expect(healthy.code, healthy.stdout).toBe(0);
    expect(other.code).not.toBe(0);
    expect(other.json).toMatchObject({
      cniVersion: '1.0.0',
      code: 102,
      msg: 'the claim holds other addresses than prevResult lists',
    });
    expect(released.code).not.toBe(0);
    expect(released.json).toMatchObject({ cniVersion: '1.0.0', code: 102, msg: 'the attachment holds no claim' });
  });

  it('answers an exhausted pool with the spec error JSON, a plugin code and the service problem, and STATUS 50', async () => {
    // Prepare: a /30 holds two addresses.
    const network = lab.network('full');
    const config = bridgeConfig(network, lab.bridgeName(), { range: '10.82.0.0/30' });
    const namespaces = [await lab.netns(), await lab.netns(), await lab.netns()];
    for (const ns of namespaces.slice(0, 2))
      ipsOf(await lab.reference('bridge', 'ADD', config, { containerID: `${ns.name}-c`, netns: ns.path }));
    // Act
    const third = await lab.reference('bridge', 'ADD', config, {
      containerID: `${namespaces[2]!.name}-c`,
      netns: namespaces[2]!.path,
    });
    // STATUS answers from the node's memory of that RangeFull (the same state folder), so it says 50 at once; polled
    // with a deadline all the same, as a runtime polls it.
    const statusRun = await vi.waitFor(
      async () => {
        const run = await lab.plugin('STATUS', { ...config, cniVersion: '1.1.0' });
        expect(run.code).not.toBe(0);
        return run;
      },
      { timeout: 15_000, interval: 200 },
    );
    // Another node, which never ADDed to the pool (its own state folder), says 50 from the service's warning, once the
    // stack's stream function decided the pool full (issue 37). Its first poll reads the pool and is remembered for
    // 30 s, so it is run once the warning is there.
    await vi.waitFor(
      async () =>
        expect(
          (
            (await callApi(stack, 'GET', `/v1/pools/${config.name}`)).body as {
              warnings?: { IPv4?: { below: unknown } };
            }
          ).warnings?.IPv4?.below,
        ).toBe('full'),
      { timeout: 30_000, interval: 250 },
    );
    const otherRun = await lab.plugin('STATUS', {
      ...config,
      cniVersion: '1.1.0',
      ipam: { ...config.ipam, stateDir: join(lab.dir, 'other-node') },
    });
    // Assess
    expect(third.code).not.toBe(0);
    expect(third.json).toMatchObject({ code: 100, msg: 'ADD: the pool has no free address' });
    expect(String(third.json?.details)).toMatch(/^RangeFull: /);
    expect(statusRun.json).toMatchObject({ cniVersion: '1.1.0', code: 50 });
    expect(otherRun.json).toMatchObject({ cniVersion: '1.1.0', code: 50, msg: 'the pool has no free address' });
    expect(String(otherRun.json?.details)).toMatch(
      /^pool \S+: no free IPv4 address \(the service's warning: IPv4 space full since \S+\)$/,
    );
  });

  it('answers a stopped service with code 11 on ADD and DEL, and 50 on STATUS', async () => {
    // Prepare
    const network = lab.network('down');
    const config = bridgeConfig(network, lab.bridgeName(), {
      range: '10.83.0.0/24',
      endpoint: `http://127.0.0.1:${await closedPort()}`,
    });
    const ns = await lab.netns();
    const call = { containerID: `${ns.name}-c`, netns: ns.path };
    // Act
    const added = await lab.reference('bridge', 'ADD', config, call);
    const deleted = await lab.plugin('DEL', config, call);
    const statusRun = await lab.plugin('STATUS', { ...config, cniVersion: '1.1.0' });
    // Assess
    expect(added.code).not.toBe(0);
    expect(added.json).toMatchObject({ code: 11, msg: 'ADD: the IPAM service is unreachable' });
    expect(deleted.code).not.toBe(0);
    expect(deleted.json).toMatchObject({ cniVersion: '1.0.0', code: 11, msg: 'DEL: the IPAM service is unreachable' });
    expect(statusRun.code).not.toBe(0);
    expect(statusRun.json).toMatchObject({ cniVersion: '1.1.0', code: 50 });
  });

  /** A network config for calling the plugin directly (as bridge delegates to it). */
  const directConfig = (network: string, ipam: Record<string, unknown>, cniVersion = '1.0.0') => ({
    cniVersion,
    name: network,
    type: 'bridge',
    ipam: { type: 'ipam-cni', endpoint: stack.apiUrl, stateDir: lab.dir, ...ipam },
  });

  it('answers a retried ADD with the same address, in the cniVersion of the input', async () => {
    // Prepare
    const network = lab.network('ver');
    const call = { containerID: `ver-${lab.id}`, netns: '/var/run/netns/unused' };
    const ipam = {
      range: '10.84.0.0/24',
      gateway: '10.84.0.1',
      routes: [{ dst: '0.0.0.0/0' }],
      dns: { nameservers: ['10.84.0.53'] },
    };
    // Act: the same ipam section under an old and a current CNI version
    const first = await lab.plugin('ADD', directConfig(network, ipam, '0.3.1'), call);
    const retried = await lab.plugin('ADD', directConfig(network, ipam, '1.1.0'), call);
    // Assess
    expect(first.code, first.stdout).toBe(0);
    const [ip] = ipsOf(first);
    expect(first.json).toEqual({
      cniVersion: '0.3.1',
      ips: [{ version: '4', address: ip, gateway: '10.84.0.1' }],
      routes: [{ dst: '0.0.0.0/0' }],
      dns: { nameservers: ['10.84.0.53'] },
    });
    expect(ip).not.toBe('10.84.0.1/24');
    expect(retried.json).toEqual({
      cniVersion: '1.1.0',
      ips: [{ address: ip, gateway: '10.84.0.1' }],
      routes: [{ dst: '0.0.0.0/0' }],
      dns: { nameservers: ['10.84.0.53'] },
    });
  });

  it('checks a new pool with three requests on a fresh node, and then makes one request per ADD: the claim', async () => {
    // Prepare: a node state folder of its own (a fresh node) and the debug log, which lists every request.
    const network = lab.network('reqs');
    const logFile = `${lab.dir}/reqs.log`;
    const config = directConfig(network, {
      range: '10.89.0.0/24',
      stateDir: `${lab.dir}/reqs-node`,
      logFile,
      logLevel: 'debug',
    });
    const attach = (id: string) =>
      lab.plugin('ADD', config, { containerID: `${id}-${lab.id}`, netns: '/var/run/netns/unused' });
    const requests = () =>
      [...readFileSync(logFile, 'utf8').matchAll(/timing: (\S+ \S+ \S+) in \d+ ms/g)].map((m) => m[1]);
    // Act
    ipsOf(await attach('first'));
    const first = requests();
    ipsOf(await attach('second'));
    // Assess
    expect(first).toEqual([
      `GET /v1/pools/${network} 404`,
      'POST /v1/pools 201',
      `POST /v1/pools/${network}/ranges 201`,
      `POST /v1/pools/${network}/claims 201`,
    ]);
    expect(requests().slice(first.length)).toEqual([`POST /v1/pools/${network}/claims 201`]);
  });

  it('gives a recreated StatefulSet pod its old address in a pool with a reuse delay, and a DEL of the old attachment never frees the new one (#621, #176)', async () => {
    // Prepare
    const network = lab.network('sts');
    const config = directConfig(network, { range: '10.85.0.0/24', reuseDelaySeconds: 600 });
    const pod = (container: string, uid: string) => ({
      containerID: container,
      netns: '/var/run/netns/unused',
      args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=db;K8S_POD_NAME=web-0;K8S_POD_UID=${uid}`,
    });
    const old = pod(`old-${lab.id}`, 'uid-1');
    const [before] = ipsOf(await lab.plugin('ADD', config, old));
    ipsOf(await lab.plugin('ADD', config, pod(`other-${lab.id}`, 'uid-9')));
    // Act: the pod is deleted and recreated under the same name with a new uid and a new sandbox.
    expect((await lab.plugin('DEL', config, old)).code).toBe(0);
    const [after] = ipsOf(await lab.plugin('ADD', config, pod(`new-${lab.id}`, 'uid-2')));
    const lateDel = await lab.plugin('DEL', config, old);
    // Assess
    expect(after).toBe(before);
    expect(lateDel.code).toBe(0);
    const lease = (await callApi(stack, 'GET', `/v1/pools/${network}/addresses/${bare(after!)}`)).body as {
      state?: string;
      owner?: { uid: string };
    };
    expect(lease.owner?.uid).toBe('uid-2');
  });

  it('lets a second node with the same config change nothing, and refuses a conflicting config with code 7', async () => {
    // Prepare: each node has its own state folder, so the second one checks the pool itself.
    const network = lab.network('two-nodes');
    const ipam = {
      range: '10.86.0.0/24',
      range_start: '10.86.0.10',
      range_end: '10.86.0.100',
      exclude: ['10.86.0.50/31'],
    };
    const call = (n: number) => ({ containerID: `node${n}-${lab.id}`, netns: '/var/run/netns/unused' });
    const first = await lab.plugin('ADD', directConfig(network, { ...ipam, stateDir: `${lab.dir}/node1` }), call(1));
    const poolBefore = (await callApi(stack, 'GET', `/v1/pools/${network}`)).body as {
      exclude: string[];
      ranges: { cidr: string }[];
    };
    // Act
    const second = await lab.plugin('ADD', directConfig(network, { ...ipam, stateDir: `${lab.dir}/node2` }), call(2));
    const conflicting = await lab.plugin(
      'ADD',
      directConfig(network, { ...ipam, range_start: '10.86.0.20', stateDir: `${lab.dir}/node3` }),
      call(3),
    );
    // Assess
    for (const ip of [...ipsOf(first), ...ipsOf(second)]) {
      const last = Number(bare(ip).split('.')[3]);
      expect(last).toBeGreaterThanOrEqual(10);
      expect(last).toBeLessThanOrEqual(100);
      expect([50, 51]).not.toContain(last);
    }
    const poolAfter = (await callApi(stack, 'GET', `/v1/pools/${network}`)).body as {
      exclude: string[];
      ranges: { cidr: string }[];
    };
    expect(poolAfter.exclude).toEqual(poolBefore.exclude);
    expect(poolAfter.ranges.map((r) => r.cidr)).toEqual(['10.86.0.0/24']);
    expect(conflicting.code).not.toBe(0);
    expect(conflicting.json).toMatchObject({ cniVersion: '1.0.0', code: 7, msg: 'invalid IPAM configuration' });
    expect(String(conflicting.json?.details)).toContain('every node must use the same config');
  });

  it("releases on GC exactly this network's stale claims on this node, and nothing else", async () => {
    // Prepare: three attachments of this network on this node, one on another node, one of another network in the
    // same pool, and one claim made by someone else without labels.
    const network = lab.network('gc');
    const ipam = { pool: network, range: '10.87.0.0/24' };
    const config = directConfig(network, ipam);
    const attach = (id: string, net = config) =>
      lab.plugin('ADD', net, { containerID: `${id}-${lab.id}`, netns: '/var/run/netns/unused' });
    for (const id of ['keep', 'stale1', 'stale2']) ipsOf(await attach(id));
    ipsOf(await attach('other-net', directConfig(`${network}-b`, ipam)));
    const claims = (await callApi(stack, 'GET', `/v1/pools/${network}/claims`)).body as {
      items: { name: string; labels: Record<string, string> }[];
    };
    const keep = claims.items.find((c) => c.labels['cni.ipam/container-id'] === `keep-${lab.id}`)!;
    expect(keep.labels).toMatchObject({ 'cni.ipam/network': network, 'cni.ipam/ifname': 'eth0' });
    const otherNode = await callApi(stack, 'POST', `/v1/pools/${network}/claims`, {
      name: `other-node-${lab.id}`,
      owner: { kind: 'CNIAttachment', name: 'x/eth0', uid: 'x/eth0' },
      labels: { ...keep.labels, 'cni.ipam/node': 'some-other-node', 'cni.ipam/container-id': 'x' },
    });
    expect(otherNode.status).toBe(201);
    expect(
      (
        await callApi(stack, 'POST', `/v1/pools/${network}/claims`, {
          name: `unlabelled-${lab.id}`,
          owner: { kind: 'Service', name: 'dns', uid: 'd1' },
        })
      ).status,
    ).toBe(201);
    const before = claims.items
      .map((c) => c.name)
      .concat(`other-node-${lab.id}`, `unlabelled-${lab.id}`)
      .sort();
    const staleNames = claims.items
      .filter((c) => ['stale1', 'stale2'].some((id) => c.labels['cni.ipam/container-id'] === `${id}-${lab.id}`))
      .map((c) => c.name);
    expect(staleNames).toHaveLength(2);
    // Act
    const gcRun = await lab.plugin(
      'GC',
      {
        ...config,
        cniVersion: '1.1.0',
        'cni.dev/valid-attachments': [{ containerID: `keep-${lab.id}`, ifname: 'eth0' }],
      },
      { unset: ['CNI_CONTAINERID', 'CNI_IFNAME', 'CNI_NETNS'] },
    );
    // Assess
    expect(gcRun.code, gcRun.stdout).toBe(0);
    expect(gcRun.stdout).toBe('');
    const after = (
      (await callApi(stack, 'GET', `/v1/pools/${network}/claims`)).body as { items: { name: string }[] }
    ).items
      .map((c) => c.name)
      .sort();
    expect(after).toEqual(before.filter((name) => !staleNames.includes(name)));
  });

  it('signs requests to an https endpoint with the embedded SigV4 signer (credentials from the environment)', async () => {
    // Prepare: nothing listens there, so the signed request fails to connect, after signing.
    const config = directConfig(lab.network('tls'), {
      range: '10.88.0.0/24',
      endpoint: `https://127.0.0.1:${await closedPort()}`,
      region: 'eu-west-1',
      timeoutMs: 2000,
    });
    const call = { containerID: `tls-${lab.id}`, netns: '/var/run/netns/unused' };
    // Act
    const signed = await lab.plugin('ADD', config, {
      ...call,
      extraEnv: { AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' },
    });
    // Assess
    expect(signed.code).not.toBe(0);
    expect(signed.json).toMatchObject({ cniVersion: '1.0.0', code: 11, msg: 'ADD: the IPAM service is unreachable' });
    expect(String(signed.json?.details)).toContain('connection refused');
  });
});
