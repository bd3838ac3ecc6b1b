import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { LocalStack } from '../../scripts/local-stack.ts';
import { startTestStack } from '../support/local-stack.ts';
import { responseServer } from '../support/response-server.ts';

const bin = fileURLToPath(new URL('../../cli/bin/ipam.js', import.meta.url));

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the `ipam` executable as a user would, as a child process, and returns its exit code and output. */
function ipam(endpoint: string, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args],
      // NO_COLOR and no IPAM_POOL from the developer's shell: the output is the same on every machine.
      { env: { ...process.env, IPAM_ENDPOINT: endpoint, IPAM_POOL: '', NO_COLOR: '1' }, timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
  });
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('ipam against the local stack', () => {
  let stack: LocalStack;
  let dir: string;
  const run = (...args: string[]) => ipam(stack.apiUrl, ...args);
  /**
   * Runs a command until its output contains `expected`, for 20 s at most: utilization and the map come from the
   * occupancy summary, which the stack's stream poller brings up to date a moment after each write.
   */
  const runUntil = async (expected: string | RegExp, ...args: string[]) => {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const result = await run(...args);
      const seen = typeof expected === 'string' ? result.stdout.includes(expected) : expected.test(result.stdout);
      if (seen || Date.now() > deadline) return result;
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  beforeAll(async () => {
    // With the stream poller: utilization and the map read the occupancy summary, which the stream function keeps.
    stack = await startTestStack({ streamPoller: true });
    dir = mkdtempSync(join(tmpdir(), 'ipam-cli-e2e-'));
  });

  afterAll(async () => {
    await stack?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('creates, claims, lists in every format, describes, maps and releases', async () => {
    // Prepare: a dual-stack pool whose first ten IPv4 addresses are excluded.
    expect(
      await run('create', 'pool', 'services', '--exclude', '10.96.0.0/29', '--exclude', '10.96.0.8,10.96.0.9'),
    ).toEqual({ code: 0, stdout: 'pool/services created\n', stderr: '' });
    expect((await run('create', 'range', 'services', '10.96.0.0/24')).stdout).toBe('range/10.96.0.0-24 created\n');
    expect((await run('create', 'range', 'services', 'fd00:10:96::/112')).stdout).toBe(
      'range/fd00:10:96::-112 created\n',
    );

    // Act 1: three claims, one dual-stack, one at a chosen address, one leased under a generated name.
    const web = await run(
      'claim',
      'services',
      '--name',
      'web',
      '--owner',
      'Service/web/3f1c',
      '--dual-stack',
      'require',
      '-l',
      'app=web',
      '-l',
      'tier=front',
    );
    const dns = await run(
      'claim',
      'services',
      '--name',
      'dns',
      '--owner',
      'Service/dns/77aa',
      '--address',
      '10.96.0.10',
      '-o',
      'json',
    );
    const vpn = await run(
      'claim',
      'services',
      '--generate-name',
      'vpn',
      '--owner',
      'Client/laptop/c-19',
      '--ttl',
      '5m',
      '-o',
      'name',
    );

    // Assess 1
    expect(web.code).toBe(0);
    expect(web.stdout).toMatch(
      /^claim\/web created: 10\.96\.0\.\d+ \(10\.96\.0\.0-24\), fd00:10:96::[0-9a-f]+ \(fd00:10:96::-112\)\n$/,
    );
    expect(JSON.parse(dns.stdout)).toMatchObject({
      name: 'dns',
      version: 1,
      addresses: [{ address: '10.96.0.10', family: 'IPv4', range: '10.96.0.0-24' }],
    });
    expect(vpn.stdout).toMatch(/^claim\/vpn-[a-z0-9]{5}\n$/);
    const vpnName = vpn.stdout.trim().slice('claim/'.length);

    // Act 2: the same list in every output format, at once.
    const get = (...output: string[]) => run('get', 'claims', '-p', 'services', ...output);
    const [table, wide, json, yaml, names, selected] = await Promise.all([
      get(),
      get('-o', 'wide'),
      get('-o', 'json'),
      get('-o', 'yaml'),
      get('-o', 'name'),
      get('-l', 'tier=front,app=web', '-o', 'name'),
    ]);

    // Assess 2
    for (const result of [table, wide, json, yaml, names, selected])
      expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(table.stdout.split('\n')[0]).toMatch(/^NAME +ADDRESSES +OWNER +EXPIRES +AGE$/);
    expect(table.stdout).toMatch(
      new RegExp(`\\n${vpnName} +10\\.96\\.0\\.\\d+ +Client/laptop +in [45]m\\d*s? +\\d+s\\n`),
    );
    expect(wide.stdout.split('\n')[0]).toMatch(
      /^NAME +ADDRESSES +RANGES +POLICY +OWNER +OWNER-UID +VERSION +LABELS +EXPIRES +AGE$/,
    );
    expect(wide.stdout).toMatch(
      /\nweb +10\.96\.0\.\d+,fd00:10:96::[0-9a-f]+ +10\.96\.0\.0-24,fd00:10:96::-112 +RequireDualStack +Service\/web +3f1c +1 +app=web,tier=front +- +\d+s\n/,
    );
    expect(selected.stdout).toBe('claim/web\n');
    expect((JSON.parse(json.stdout) as { items: { name: string }[] }).items.map((c) => c.name)).toEqual([
      'dns',
      vpnName,
      'web',
    ]);
    expect(parse(yaml.stdout)).toEqual(JSON.parse(json.stdout));
    expect(names.stdout).toBe(`claim/dns\nclaim/${vpnName}\nclaim/web\n`);

    // Act 3: one page, an address's holder, the pool described, the range mapped (text and SVG).
    const page = await run('get', 'addresses', '-p', 'services', '--limit', '2');
    const holder = await run('get', 'address', '10.96.0.10', '-p', 'services', '-o', 'yaml');
    const described = await runUntil('3 used of 245', 'describe', 'pool', 'services');
    const svg = join(dir, 'map.svg');
    const map = await runUntil('3 held', 'map', 'services', '10.96.0.0-24', '--svg', svg);

    // Assess 3
    expect(page.stdout.trim().split('\n')).toHaveLength(3);
    expect(page.stderr).toMatch(/^\(more: --cursor \S+\)\n$/);
    expect(parse(holder.stdout)).toMatchObject({
      address: '10.96.0.10',
      claim: 'dns',
      owner: { kind: 'Service', name: 'dns', uid: '77aa' },
    });
    expect(described.stdout).toContain('Exclude:     10.96.0.0/29, 10.96.0.8/32, 10.96.0.9/32\n');
    // The pool counts the 245 addresses a claim may be given; its range, every host of its CIDR.
    expect(described.stdout).toMatch(/\n {2}IPv4 {2}\[█░+\] +1\.2% {3}3 used of 245, 242 free\n/);
    expect(described.stdout).toMatch(/\n {2}10\.96\.0\.0-24 +10\.96\.0\.0\/24 +IPv4 +Ready +false +3 +251\n/);
    expect(map).toMatchObject({ code: 0, stderr: `wrote ${svg}\n` });
    expect(map.stdout).toContain('254 usable: 3 held, 242 free, 9 excluded\n');
    // .0 network, .1-.9 excluded, .10 held by dns, then the lower band to .16.
    expect(map.stdout).toMatch(/\n {2}10\.96\.0\.0 {2}-x{9}█:{6}[·█]{47}\n/);
    expect(readFileSync(svg, 'utf8')).toContain('254 usable: 3 held, 242 free, 9 excluded');

    // Act 4: a release with a stale version, then the right one; the owner of the VPN claim goes away.
    const stale = await run('release', 'services', 'dns', '--if-version', '2');
    const released = await run('release', 'services', 'dns', '--if-version', '1');
    const gone = await run('get', 'claim', 'dns', '-p', 'services');
    const owner = await run('release-owner', 'services', 'c-19');
    const notEmpty = await run('delete', 'pool', 'services');

    // Assess 4
    expect(stale.code).toBe(1);
    expect(stale.stderr).toMatch(/^error: PreconditionFailed: .+\n$/);
    expect(released).toEqual({ code: 0, stdout: 'claim/dns released\n', stderr: '' });
    expect(gone).toMatchObject({ code: 1, stdout: '', stderr: 'error: NotFound: claim "dns" was not found.\n' });
    expect(owner).toEqual({ code: 0, stdout: `claim/${vpnName} released\n`, stderr: '' });
    expect(notEmpty.code).toBe(1);
    expect(notEmpty.stderr).toMatch(/^error: PoolNotEmpty: .+\n$/);
    expect((await runUntil('1 held', 'map', 'services', '10.96.0.0-24')).stdout).toContain(
      '254 usable: 1 held, 244 free, 9 excluded\n',
    );
  });

  it('claims a batch, makes a leased claim permanent, and shows an address held for its previous owner in a pool with a reuse delay', async () => {
    // Prepare: a pool whose released addresses stay held for 10 minutes.
    expect(await run('create', 'pool', 'pods', '--reuse-delay', '10m')).toEqual({
      code: 0,
      stdout: 'pool/pods created, reuse delay 10m\n',
      stderr: '',
    });
    expect((await run('create', 'range', 'pods', '10.244.0.0/24')).code).toBe(0);

    // Act 1: four addresses in one claim; a leased claim confirmed, then its owner gone.
    const workers = await run(
      'claim',
      'pods',
      '--name',
      'workers',
      '--owner',
      'Deployment/workers/9b2e',
      '--count',
      '4',
      '-o',
      'json',
    );
    const web = JSON.parse(
      (await run('claim', 'pods', '--generate-name', 'web-0', '--owner', 'Pod/web-0/a1', '--ttl', '5m', '-o', 'json'))
        .stdout,
    ) as { name: string; addresses: { address: string }[] };
    const address = web.addresses[0]!.address;
    const permanent = await run('renew', 'pods', web.name, '--permanent');
    const confirmed = await run('get', 'claim', web.name, '-p', 'pods');
    const released = await run('release-owner', 'pods', 'a1');

    // Assess 1
    expect(JSON.parse(workers.stdout)).toMatchObject({ name: 'workers', count: 4, addresses: [{}, {}, {}, {}] });
    expect(permanent).toEqual({
      code: 0,
      stdout: `claim/${web.name} made permanent: ${address} (10.244.0.0-24)\n`,
      stderr: '',
    });
    expect(confirmed.stdout).toMatch(
      new RegExp(`\\n${web.name} +${address.replace(/\./g, '\\.')} +Pod/web-0 +- +\\d+s\\n`),
    );
    expect(released).toEqual({ code: 0, stdout: `claim/${web.name} released\n`, stderr: '' });

    // Act 2: the held address as listed, described and refused to another owner; the pool's counts.
    const listed = await run('get', 'address', address, '-p', 'pods');
    const described = await run('describe', 'address', address, '-p', 'pods');
    const taken = await run('claim', 'pods', '--name', 'other', '--owner', 'Pod/db-0/d4', '--address', address);
    const pool = await runUntil('1 releasing', 'describe', 'pool', 'pods');
    const ranges = await run('get', 'ranges', '-p', 'pods');

    // Assess 2
    expect(listed.stdout.split('\n')[0]).toMatch(/^ADDRESS +STATE +RANGE +CLAIM +OWNER +EXPIRES +AGE$/);
    expect(listed.stdout).toMatch(
      new RegExp(
        `\\n${address.replace(/\./g, '\\.')} +Released +10\\.244\\.0\\.0-24 +${web.name} +Pod/web-0 +in (10m|9m\\d+s) +\\d+s\\n`,
      ),
    );
    expect(described.stdout).toContain('State:          Released\n');
    expect(described.stdout).toContain('Previous owner: Pod/web-0 (uid a1)\n');
    expect(described.stdout).toMatch(/\nReusable at: +\S+ \(in (10m|9m\d+s)\)\n/);
    expect(taken).toMatchObject({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(/^error: AddressReleasing: .+\n$/) as unknown as string,
    });
    expect(pool.stdout).toContain(
      'Reuse delay: 10m (600s): a released address stays held for its previous owner (kind, name, creator)\n',
    );
    expect(pool.stdout).toMatch(/\n {2}IPv4 {2}\[█░+\] +1\.5% {3}4 used of 254, 1 releasing, 249 free\n/);
    expect(pool.stdout).toMatch(/\n {2}10\.244\.0\.0-24 +10\.244\.0\.0\/24 +IPv4 +Ready +false +4 +1 +249\n/);
    expect(ranges.stdout).toMatch(
      /^NAME +CIDR +FAMILY +STATE +USED +RELEASING +FREE +AGE\n10\.244\.0\.0-24 +10\.244\.0\.0\/24 +IPv4 +Ready +4 +1 +249 +\d+s\n$/,
    );
  });

  it('creates a pool that grows from a block pool, claims from it, and shows its blocks and its grow rule (issue 35)', async () => {
    // Prepare: region hands out /28 blocks of a /26.
    expect(await run('create', 'pool', 'region', '--block', '/28', '--open-to-child-pools')).toEqual({
      code: 0,
      stdout: 'pool/region created, blocks IPv4 /28, open to child pools\n',
      stderr: '',
    });
    expect((await run('create', 'range', 'region', '10.9.0.0/26')).code).toBe(0);

    // Act: node-1 grows from region; a claim in node-1, which has no range yet.
    const made = await run(...'create pool node-1 --grow region --grow-below-free 4 --grow-max-blocks 2'.split(' '));
    const claimed = await run('claim', 'node-1', '--name', 'p0', '--owner', 'Pod/p0/u0');
    const pools = await run('get', 'pools', '-o', 'wide');
    const described = await runUntil('region/node-1-g4-1', 'describe', 'pool', 'node-1');

    // Assess: the rule was sent; the claim took one block of region as node-1's range.
    expect(made).toEqual({
      code: 0,
      stdout:
        'pool/node-1 created, grows from region: one more block when fewer than 4 addresses are free (at most 2 blocks a family)\n',
      stderr: '',
    });
    expect(claimed.stdout).toMatch(/^claim\/p0 created: 10\.9\.0\.\d+ \(g4-1\)\n$/);
    expect(pools.stdout.split('\n')[0]).toMatch(/^NAME +EXCLUDE +REUSE-DELAY +BLOCKS +GROWS-FROM +AGE$/);
    expect(pools.stdout).toMatch(/\nregion +<none> +- +\/28 +- +\d+s\n/);
    expect(pools.stdout).toMatch(/\nnode-1 +<none> +- +- +region +\d+s\n/);
    expect(described.stdout).toContain(
      'Grows from:  region: one more block when fewer than 4 addresses are free (at most 2 blocks a family)\n',
    );
    expect(described.stdout).toMatch(
      /\n {2}g4-1 +10\.9\.0\.\d+\/28 +IPv4 +Ready +false +\d+ +\d+ +region\/node-1-g4-1\n/,
    );
  });

  it("claims a stack's /16 through the Custom::IpamClaim provider, shows the stack as its owner, and releases it on Delete", async () => {
    // Prepare: an organisation pool of /16 blocks, and a local server in place of the pre-signed ResponseURL
    expect((await run('create', 'pool', 'org', '--block', '/16')).code).toBe(0);
    expect((await run('create', 'range', 'org', '10.0.0.0/8')).code).toBe(0);
    const server = await responseServer();
    const stackId = 'arn:aws:cloudformation:us-east-1:123456789012:stack/network/0f0e0d0c-0b0a-4909-8807-060504030201';
    const request = (type: string, extra: Record<string, unknown>) => ({
      RequestType: type,
      RequestId: `e2e-${type}`,
      ResponseURL: server.url(type),
      ResourceType: 'Custom::IpamClaim',
      LogicalResourceId: 'VpcCidr',
      StackId: stackId,
      ResourceProperties: { ServiceToken: 'arn:aws:lambda:us-east-1:123456789012:function:x', Pool: 'org' },
      ...extra,
    });
    try {
      // Act: Create through the stack's Lambda API (the bundle, as deployed), then list the pool's claims
      await stack.invoke('claimResource', request('Create', {}));
      const created = server.answered()[0]!.body;
      const listed = await run('get', 'claims', '-p', 'org', '-o', 'json');
      await stack.invoke('claimResource', request('Delete', { PhysicalResourceId: created.PhysicalResourceId }));
      const deleted = server.answered()[1]!.body;
      const after = await run('get', 'claims', '-p', 'org', '-o', 'name');
      // Assess
      expect(created).toMatchObject({ Status: 'SUCCESS', StackId: stackId, RequestId: 'e2e-Create' });
      expect(created.Data!.Cidr).toMatch(/^10\.\d+\.0\.0\/16$/);
      expect(server.received[0]!.contentType).toBe('');
      const claims = (JSON.parse(listed.stdout) as { items: { name: string; owner: unknown }[] }).items;
      expect(claims.map((c) => [`org/${c.name}`, c.owner])).toEqual([
        [created.PhysicalResourceId, { kind: 'CloudFormationStack', name: 'network', uid: stackId }],
      ]);
      expect(deleted).toMatchObject({ Status: 'SUCCESS', PhysicalResourceId: created.PhysicalResourceId });
      expect(after).toEqual({ code: 0, stdout: '', stderr: '' });
    } finally {
      await server.close();
    }
  });

  it('answers a full range, a wrong command line and an endpoint with nothing behind it with the documented exit codes', async () => {
    // Prepare: a /30 holds two addresses.
    expect((await run('create', 'pool', 'tiny')).code).toBe(0);
    expect((await run('create', 'range', 'tiny', '192.168.7.0/30')).code).toBe(0);
    for (const name of ['a', 'b'])
      expect((await run('claim', 'tiny', '--name', name, '--owner', `Pod/${name}/u-${name}`)).code).toBe(0);

    // Act
    const full = await run('claim', 'tiny', '--name', 'c', '--owner', 'Pod/c/u-c');
    const usage = await run('claim', 'tiny', '--owner', 'Pod/c');
    const port = await closedPort();
    const refused = await ipam(`http://127.0.0.1:${port}`, 'get', 'pools');

    // Assess
    expect(full).toEqual({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(/^error: RangeFull: .+\n$/) as unknown as string,
    });
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("error: option '--owner <kind/name/uid>' argument 'Pod/c' is invalid.");
    expect(usage.stderr).toContain('Usage: ipam claim [options] <pool>');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `error: cannot connect to http://127.0.0.1:${port} (connection refused): is the local stack running? Start it with \`npm start\`, or pass --endpoint URL (or set IPAM_ENDPOINT).\n`,
    );
  });
});
