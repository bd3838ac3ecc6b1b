/**
 * What a new user's first day tried through `ipam` against the real handler in process (MemoryTable): a typo in a
 * release is NotFound, not success (also under kubectl's `delete claim`); a batch refusal says what was asked and what
 * is free.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { testApi, type TestApi } from '../support/api.ts';
import { runCli } from '../support/cli.ts';
import { memoryEngine } from '../support/engines.ts';
import { cliFetch } from '../support/in-process-fetch.ts';

describe('ipam on the first day', () => {
  let api: TestApi;
  let cli: (argv: string[]) => ReturnType<typeof runCli>;

  beforeEach(async () => {
    api = await testApi({}, {}, undefined, memoryEngine);
    const { fetch } = cliFetch(api);
    cli = (argv) => runCli(argv, { fetch, env: { IPAM_ENDPOINT: 'http://127.0.0.1:3000' } });
    for (const argv of [
      ['create', 'pool', 'services'],
      ['create', 'range', 'services', '10.96.0.0/24'],
      ['claim', 'services', '--name', 'dns', '--owner', 'Service/dns/77aa', '--address', '10.96.0.10'],
    ])
      expect((await cli(argv)).code, argv.join(' ')).toBe(0);
  });

  it('answers NotFound (exit 1) for the release of an unknown claim, exit 0 and nothing printed with --ignore-not-found', async () => {
    const typo = await cli(['release', 'services', 'nosuch']);
    const ignored = await cli(['release', 'services', 'nosuch', '--ignore-not-found']);
    const real = await cli(['release', 'services', 'dns']);
    expect([typo.code, typo.out, typo.err]).toEqual([1, '', 'error: NotFound: claim "nosuch" was not found.\n']);
    expect([ignored.code, ignored.out, ignored.err]).toEqual([0, '', '']);
    expect([real.code, real.out]).toEqual([0, 'claim/dns released\n']);
    expect((await api.call('GET', '/v1/pools/services/claims/dns')).status).toBe(404);
  });

  it("releases a claim with `delete claim` (release under kubectl's verb), NotFound the same way", async () => {
    const deleted = await cli(['delete', 'claim', 'services', 'dns']);
    const again = await cli(['delete', 'claim', 'services', 'dns']);
    expect([deleted.code, deleted.out]).toEqual([0, 'claim/dns released\n']);
    expect([again.code, again.err]).toEqual([1, 'error: NotFound: claim "dns" was not found.\n']);
  });

  it('says, when a batch is refused, how many addresses were asked for and how many are free', async () => {
    expect((await cli(['create', 'pool', 'tiny'])).code).toBe(0);
    expect((await cli(['create', 'range', 'tiny', '10.97.0.0/28'])).code).toBe(0); // 14 hosts
    expect((await cli(['claim', 'tiny', '--name', 'three', '--owner', 'Service/a/a1', '--count', '3'])).code).toBe(0);
    const batch = await api.call('POST', '/v1/pools/tiny/claims', {
      name: 'big',
      owner: { kind: 'Deployment', name: 'big', uid: 'b1' },
      count: 32,
    });
    expect(batch.status).toBe(409);
    expect(batch.body).toMatchObject({
      code: 'RangeFull',
      detail: '32 IPv4 addresses were asked for and 11 are free in pool "tiny".',
    });
  });

  it('prints its version with `ipam version`, as `ipam --version` does', async () => {
    const version = await cli(['version']);
    const flag = await cli(['--version']);
    expect([version.code, version.out]).toEqual([0, 'ipam 0.1.0\n']);
    expect(flag.out).toBe('0.1.0\n');
  });

  it("makes a nested range from --source POOL/CLAIM alone: the claim's block is the CIDR", async () => {
    for (const argv of [
      ['create', 'pool', 'org', '--block', '/16', '--open-to-child-pools'],
      ['create', 'range', 'org', '10.0.0.0/8'],
      ['claim', 'org', '--name', 'eu-west', '--owner', 'Region/eu-west/eu-west-1'],
      ['create', 'pool', 'region-eu-west', '--block', '/24'],
    ])
      expect((await cli(argv)).code, argv.join(' ')).toBe(0);
    const block = String(
      ((await api.call('GET', '/v1/pools/org/claims/eu-west')).body.addresses as { prefix: string }[])[0]!.prefix,
    );
    const made = await cli(['create', 'range', 'region-eu-west', '--source', 'org/eu-west', '--name', 'main']);
    const neither = await cli(['create', 'range', 'region-eu-west']);
    expect([made.code, made.out, made.err]).toEqual([0, 'range/main created\n', '']);
    expect((await api.call('GET', '/v1/pools/region-eu-west/ranges/main')).body).toMatchObject({ cidr: block });
    expect(neither.code).toBe(2);
    expect(neither.err).toContain('a CIDR, or --source POOL/CLAIM to take its block');
  });

  it('lists claims of every pool with -A (a POOL column), and finds an address across pools without -p', async () => {
    expect((await cli(['create', 'pool', 'pods'])).code).toBe(0);
    expect((await cli(['create', 'range', 'pods', '10.244.0.0/24'])).code).toBe(0);
    expect(
      (await cli(['claim', 'pods', '--name', 'web-0', '--owner', 'Pod/web-0/p1', '--address', '10.244.0.7'])).code,
    ).toBe(0);
    const all = await cli(['get', 'claims', '-A']);
    const named = await cli(['get', 'claims', '-A', '-o', 'name']);
    const found = await cli(['get', 'address', '10.244.0.7', '-o', 'json']);
    const nowhere = await cli(['get', 'address', '10.99.0.1']);
    const withoutPool = await cli(['get', 'claims']);
    const rows = all.out.trimEnd().split('\n');
    expect(all.code).toBe(0);
    expect(rows[0]).toMatch(/^POOL\s+NAME\s+ADDRESSES/);
    expect(rows.slice(1).map((r) => r.split(/\s+/).slice(0, 3))).toEqual([
      ['pods', 'web-0', '10.244.0.7'],
      ['services', 'dns', '10.96.0.10'],
    ]);
    expect([named.code, named.out]).toEqual([0, 'claim/web-0\nclaim/dns\n']);
    expect(found.code).toBe(0);
    expect(JSON.parse(found.out)).toMatchObject({ address: '10.244.0.7', claim: 'web-0', pool: 'pods' });
    expect([nowhere.code, nowhere.err]).toEqual([1, 'error: NotFound: address 10.99.0.1 is held in no pool.\n']);
    expect(withoutPool.code).toBe(2);
  });
});
