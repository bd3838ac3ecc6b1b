import { describe, expect, it } from 'vitest';
import { ConfigError, ConnectionError, HttpStatusError, ProblemError } from '../../cli/errors.ts';
import { claimName, labelValue, ownerOf, parseCniArgs } from '../../cni/attachment.ts';
import { coverInterval, parseIpamConfig, parseNetworkConfig } from '../../cni/config.ts';
import { CniCode, CniError, toCniError } from '../../cni/errors.ts';
import { run } from '../../cni/main.ts';
import {
  checkVersion,
  commandAllowed,
  encodeResult,
  prevResultAddresses,
  type IpamResult,
} from '../../cni/versions.ts';

const ENDPOINT = 'http://127.0.0.1:1';

/** The CNI error a call throws (fails the test when it does not throw one). */
function cniErrorOf(fn: () => unknown): CniError {
  try {
    fn();
  } catch (error) {
    if (error instanceof CniError) return error;
    throw error;
  }
  throw new Error('expected a CniError');
}

describe('Config: parseIpamConfig', () => {
  it('reads a minimal config: the pool is the network name, single stack, defaults elsewhere', () => {
    // Act
    const ipam = parseIpamConfig({ type: 'ipam-cni', endpoint: ENDPOINT }, 'net-a');
    // Assess
    expect(ipam).toMatchObject({
      pool: 'net-a',
      ipFamilyPolicy: 'SingleStack',
      ipFamilies: [],
      timeoutMs: 10_000,
      ranges: [],
      exclude: [],
      logLevel: 'info',
      stateDir: '/run/ipam-cni',
      reuseDelaySeconds: 0,
    });
    expect(ipam.region).toBeUndefined();
  });

  it('names the pool from pool, else network_name, else the network name', () => {
    expect(parseIpamConfig({ type: 'ipam-cni', endpoint: ENDPOINT, pool: 'p1', network_name: 'n1' }, 'net').pool).toBe(
      'p1',
    );
    expect(parseIpamConfig({ type: 'ipam-cni', endpoint: ENDPOINT, network_name: 'n1' }, 'net').pool).toBe('n1');
  });

  it('refuses a pool name that is not a DNS-1123 label with code 7 asking for ipam.pool', () => {
    const error = cniErrorOf(() => parseIpamConfig({ type: 'ipam-cni', endpoint: ENDPOINT }, 'My_Net'));
    expect(error.code).toBe(CniCode.InvalidConfig);
    expect(error.details).toContain('set ipam.pool');
  });

  it('refuses unknown fields with code 7 naming them, and accepts whereabouts storage settings it ignores', () => {
    const error = cniErrorOf(() =>
      parseIpamConfig({ type: 'ipam-cni', endpoint: ENDPOINT, rnage: '10.0.0.0/24' }, 'n'),
    );
    expect(error.code).toBe(7);
    expect(error.details).toBe('unknown field ipam.rnage');
    expect(() =>
      parseIpamConfig(
        {
          type: 'ipam-cni',
          endpoint: ENDPOINT,
          kubernetes: { kubeconfig: '/x' },
          configuration_path: '/y',
          enable_overlapping_ranges: true,
        },
        'n',
      ),
    ).not.toThrow();
    expect(
      cniErrorOf(() => parseIpamConfig({ type: 'ipam-cni', endpoint: ENDPOINT, node_slice_size: '/28' }, 'n')).details,
    ).toBe('unknown field ipam.node_slice_size');
  });

  it('turns range_start and range_end into the fewest exclusions covering the rest of the range', () => {
    // Act
    const ipam = parseIpamConfig(
      { type: 'ipam-cni', endpoint: ENDPOINT, range: '10.1.0.0/24', range_start: '10.1.0.10', range_end: '10.1.0.200' },
      'n',
    );
    // Assess
    expect(ipam.ranges).toEqual([{ cidr: '10.1.0.0/24', family: 'IPv4', prefix: 24 }]);
    expect(ipam.exclude).toEqual(
      [
        '10.1.0.0/29',
        '10.1.0.201/32',
        '10.1.0.202/31',
        '10.1.0.204/30',
        '10.1.0.208/28',
        '10.1.0.224/27',
        '10.1.0.8/31',
      ].sort(),
    );
    expect(ipam.ipFamilyPolicy).toBe('SingleStack');
    expect(ipam.ipFamilies).toEqual(['IPv4']);
  });

  it('reads host bits in range as an implicit range_start, as whereabouts does', () => {
    const ipam = parseIpamConfig({ type: 'ipam-cni', endpoint: ENDPOINT, range: '192.168.2.225/28' }, 'n');
    expect(ipam.ranges[0]?.cidr).toBe('192.168.2.224/28');
    expect(ipam.exclude).toEqual(['192.168.2.224/32']);
  });

  it('excludes the gateway and the exclude list, canonically and sorted', () => {
    const ipam = parseIpamConfig(
      {
        type: 'ipam-cni',
        endpoint: ENDPOINT,
        range: '10.2.0.0/24',
        gateway: '10.2.0.1',
        exclude: ['10.2.0.129/25', '10.2.0.7'],
      },
      'n',
    );
    expect(ipam.exclude).toEqual(['10.2.0.1/32', '10.2.0.128/25', '10.2.0.7/32']);
    expect(ipam.gateways).toEqual({ IPv4: '10.2.0.1' });
  });

  it('makes ipRanges of two families a RequireDualStack claim, and refuses two ranges of one family', () => {
    const ipam = parseIpamConfig(
      {
        type: 'ipam-cni',
        endpoint: ENDPOINT,
        ipRanges: [{ range: 'fd00::/120' }, { range: '10.3.0.0/24', exclude: ['10.3.0.5'] }],
      },
      'n',
    );
    expect(ipam.ipFamilyPolicy).toBe('RequireDualStack');
    expect(ipam.ipFamilies).toEqual(['IPv6', 'IPv4']);
    expect(ipam.exclude).toEqual(['10.3.0.5/32']);
    const twice = cniErrorOf(() =>
      parseIpamConfig(
        { type: 'ipam-cni', endpoint: ENDPOINT, ipRanges: [{ range: '10.3.0.0/24' }, { range: '10.4.0.0/24' }] },
        'n',
      ),
    );
    expect(twice.code).toBe(7);
    expect(
      cniErrorOf(() =>
        parseIpamConfig(
          {
            type: 'ipam-cni',
            endpoint: ENDPOINT,
            ipFamilyPolicy: 'SingleStack',
            ipRanges: [{ range: 'fd00::/120' }, { range: '10.3.0.0/24' }],
          },
          'n',
        ),
      ).code,
    ).toBe(7);
  });

  it.each([
    [{ range: '10.0.0.0/24', range_start: '10.0.1.1' }, 'is not inside 10.0.0.0/24'],
    [{ range: '10.0.0.0/24', range_start: '10.0.0.9', range_end: '10.0.0.8' }, 'is after'],
    [{ range: '10.0.0.0/33' }, 'invalid prefix length'],
    [{ range: 'ten' }, 'must be a CIDR'],
    [{ range_start: '10.0.0.1' }, 'need ipam.range'],
    [{ range: '10.0.0.0/24', ipRanges: [] }, 'not both'],
    [{ exclude: ['10.0.0.1'] }, 'needs ipam.range'],
    [{ timeoutMs: 5 }, 'timeoutMs'],
    [{ ipFamilyPolicy: 'Dual' }, 'ipFamilyPolicy'],
    [{ logLevel: 'loud' }, 'logLevel'],
    [{ routes: [{ dst: '0.0.0.0/0', via: 'x' }] }, 'unknown field "via"'],
    [{ dns: { nameservers: ['nope'] } }, 'not a valid IPv4 address'],
    [{ gateway: ['10.0.0.1', '10.0.0.2'] }, 'two IPv4 gateways'],
  ])('refuses %j with code 7 (%s)', (fields, phrase) => {
    const error = cniErrorOf(() => parseIpamConfig({ type: 'ipam-cni', endpoint: ENDPOINT, ...fields }, 'n'));
    expect(error.code).toBe(CniCode.InvalidConfig);
    expect(error.details).toContain(phrase);
  });

  it('signs https endpoints for the execute-api host region, else ipam.region or AWS_REGION, else refuses', () => {
    expect(
      parseIpamConfig({ type: 'ipam-cni', endpoint: 'https://abc123.execute-api.eu-west-1.amazonaws.com/prod' }, 'n')
        .region,
    ).toBe('eu-west-1');
    expect(
      parseIpamConfig({ type: 'ipam-cni', endpoint: 'https://ipam.example.com', region: 'us-east-2' }, 'n').region,
    ).toBe('us-east-2');
    expect(
      parseIpamConfig({ type: 'ipam-cni', endpoint: 'https://ipam.example.com' }, 'n', { AWS_REGION: 'ap-south-1' })
        .region,
    ).toBe('ap-south-1');
    expect(
      cniErrorOf(() => parseIpamConfig({ type: 'ipam-cni', endpoint: 'https://ipam.example.com' }, 'n')).details,
    ).toContain('ipam.region');
    expect(cniErrorOf(() => parseIpamConfig({ type: 'ipam-cni', endpoint: 'ftp://x' }, 'n')).code).toBe(7);
    expect(cniErrorOf(() => parseIpamConfig({ type: 'ipam-cni' }, 'n')).details).toContain('ipam.endpoint is required');
  });

  it('reads whereabouts log_file and log_level, with its level names', () => {
    const ipam = parseIpamConfig(
      { type: 'ipam-cni', endpoint: ENDPOINT, log_file: '/tmp/x.log', log_level: 'verbose' },
      'n',
    );
    expect(ipam.logFile).toBe('/tmp/x.log');
    expect(ipam.logLevel).toBe('info');
  });
});

describe('Config: coverInterval', () => {
  it('covers an interval exactly with aligned blocks', () => {
    expect(coverInterval('IPv4', 0x0a000000n, 0x0a000009n)).toEqual(['10.0.0.0/29', '10.0.0.8/31']);
    expect(coverInterval('IPv4', 0x0a000001n, 0x0a000001n)).toEqual(['10.0.0.1/32']);
    expect(coverInterval('IPv6', 0n, (1n << 128n) - 1n)).toEqual(['::/0']);
  });
});

describe('Config: parseNetworkConfig', () => {
  it.each([
    ['not json', 6],
    ['[]', 6],
    ['{"name":"n","ipam":{}}', 7],
    ['{"cniVersion":"0.2.0","name":"n"}', 1],
    ['{"cniVersion":"1.0.0"}', 7],
    ['{"cniVersion":"1.0.0","name":"bad name"}', 7],
    [
      '{"cniVersion":"1.1.0","name":"n","ipam":{"type":"ipam-cni","endpoint":"http://x"},"cni.dev/valid-attachments":[{"containerID":1}]}',
      6,
    ],
  ])('refuses %s with code %i', (stdin, code) => {
    expect(cniErrorOf(() => parseNetworkConfig(stdin)).code).toBe(code);
  });

  it('reads valid attachments and prevResult', () => {
    const config = parseNetworkConfig(
      JSON.stringify({
        cniVersion: '1.1.0',
        name: 'n',
        ipam: { type: 'ipam-cni', endpoint: ENDPOINT },
        prevResult: { ips: [] },
        'cni.dev/valid-attachments': [{ containerID: 'c1', ifname: 'eth0' }],
      }),
    );
    expect(config.validAttachments).toEqual([{ containerID: 'c1', ifname: 'eth0' }]);
    expect(config.prevResult).toEqual({ ips: [] });
  });
});

describe('Versions', () => {
  const result: IpamResult = {
    ips: [
      { address: '10.0.0.5/24', version: '4', gateway: '10.0.0.1' },
      { address: 'fd00::5/120', version: '6' },
    ],
    routes: [{ dst: '0.0.0.0/0', gw: '10.0.0.1', mtu: 1400 }],
    dns: { nameservers: ['10.0.0.53'] },
  };

  it('writes ips[].version below 1.0.0 and 1.1.0 route fields only from 1.1.0', () => {
    expect(encodeResult(result, '0.3.1')).toEqual({
      cniVersion: '0.3.1',
      ips: [
        { version: '4', address: '10.0.0.5/24', gateway: '10.0.0.1' },
        { version: '6', address: 'fd00::5/120' },
      ],
      routes: [{ dst: '0.0.0.0/0', gw: '10.0.0.1' }],
      dns: { nameservers: ['10.0.0.53'] },
    });
    expect(encodeResult(result, '1.0.0')).toEqual({
      cniVersion: '1.0.0',
      ips: [{ address: '10.0.0.5/24', gateway: '10.0.0.1' }, { address: 'fd00::5/120' }],
      routes: [{ dst: '0.0.0.0/0', gw: '10.0.0.1' }],
      dns: { nameservers: ['10.0.0.53'] },
    });
    expect((encodeResult(result, '1.1.0').routes as unknown[])[0]).toEqual({
      dst: '0.0.0.0/0',
      gw: '10.0.0.1',
      mtu: 1400,
    });
    expect(encodeResult({ ips: [], routes: [] }, '1.1.0')).toEqual({ cniVersion: '1.1.0', ips: [] });
  });

  it('knows which commands each version allows', () => {
    expect(commandAllowed('CHECK', '0.3.1')).toBe(false);
    expect(commandAllowed('CHECK', '0.4.0')).toBe(true);
    expect(commandAllowed('GC', '1.0.0')).toBe(false);
    expect(commandAllowed('STATUS', '1.1.0')).toBe(true);
  });

  it('refuses versions it does not speak with code 1 and a missing one with code 7', () => {
    expect(cniErrorOf(() => checkVersion('0.1.0')).code).toBe(1);
    expect(cniErrorOf(() => checkVersion('2.0.0')).code).toBe(1);
    expect(cniErrorOf(() => checkVersion(undefined)).code).toBe(7);
  });

  it('reads prevResult addresses of any version, and refuses a malformed one with code 6', () => {
    expect(
      prevResultAddresses({ cniVersion: '0.3.1', ips: [{ version: '4', address: '10.0.0.5/24', interface: 0 }] }),
    ).toEqual(['10.0.0.5/24']);
    expect(cniErrorOf(() => prevResultAddresses({ ips: [{}] })).code).toBe(6);
    expect(cniErrorOf(() => prevResultAddresses('x')).code).toBe(6);
  });
});

describe('Errors: toCniError', () => {
  it.each([
    ['unreachable', new ConnectionError('http://x', 'refused', true), 11],
    ['a 503 problem', new ProblemError(503, 'NotReady', 'table not ready'), 11],
    ['a 500 problem', new ProblemError(500, 'Internal', 'oops'), 11],
    ['throttling', new HttpStatusError(429, 'Too Many Requests'), 11],
    ['a gateway 502', new HttpStatusError(502, 'Bad Gateway'), 11],
    ['no credentials', new ConfigError('no AWS credentials'), 11],
    ['an exhausted pool', new ProblemError(409, 'RangeFull', 'no free IPv4 address'), 100],
    [
      'a commit deadline that passed before the commit',
      new ProblemError(408, 'DeadlineExceeded', 'nothing was written'),
      11,
    ],
    ['a conflicting claim', new ProblemError(409, 'Conflict', 'other spec'), 101],
    ['a missing permission', new HttpStatusError(403, 'Forbidden'), 101],
    ['a bug', new TypeError('x is undefined'), 103],
  ])('maps %s to code %i', (_name, error, code) => {
    expect(toCniError(error, 'ADD').code).toBe(code);
  });

  it("carries the service's problem code and detail in details", () => {
    const error = toCniError(new ProblemError(409, 'RangeFull', 'Pool p has no free IPv4 address.'), 'ADD');
    expect(error).toMatchObject({
      code: 100,
      msg: 'ADD: the pool has no free address',
      details: 'RangeFull: Pool p has no free IPv4 address.',
    });
  });
});

describe('Attachment', () => {
  it('names a claim from network, container and interface: stable, a DNS label, distinct per interface', () => {
    const a = claimName('net', { containerID: 'c1', ifname: 'eth0' });
    expect(a).toBe(claimName('net', { containerID: 'c1', ifname: 'eth0' }));
    expect(a).toMatch(/^cni-[0-9a-f]{40}$/);
    expect(a).not.toBe(claimName('net', { containerID: 'c1', ifname: 'net1' }));
    expect(a).not.toBe(claimName('net2', { containerID: 'c1', ifname: 'eth0' }));
  });

  it('owns a claim by the pod of CNI_ARGS, else by the attachment', () => {
    const attachment = { containerID: 'c1', ifname: 'eth0' };
    expect(
      ownerOf(parseCniArgs('IgnoreUnknown=1;K8S_POD_NAMESPACE=ns;K8S_POD_NAME=web-0;K8S_POD_UID=u1'), attachment),
    ).toEqual({ kind: 'Pod', name: 'ns/web-0', uid: 'u1' });
    expect(ownerOf(parseCniArgs(''), attachment)).toEqual({ kind: 'CNIAttachment', name: 'c1/eth0', uid: 'c1/eth0' });
    expect(cniErrorOf(() => parseCniArgs('novalue')).code).toBe(4);
  });

  it('keeps label values the label rule allows and hashes the others', () => {
    expect(labelValue('a'.repeat(64))).toBe('a'.repeat(64));
    expect(labelValue('node_1.example')).toBe('node_1.example');
    expect(labelValue('-bad')).toMatch(/^h-[0-9a-f]{40}$/);
    expect(labelValue('x'.repeat(129))).toMatch(/^h-[0-9a-f]{40}$/);
  });
});

describe('Executable: run', () => {
  const env = (command: string, extra: Record<string, string> = {}) => ({
    CNI_COMMAND: command,
    CNI_CONTAINERID: 'c1',
    CNI_NETNS: '/var/run/netns/x',
    CNI_IFNAME: 'eth0',
    CNI_PATH: '/opt/cni/bin',
    ...extra,
  });
  const config = (cniVersion = '1.0.0') =>
    JSON.stringify({ cniVersion, name: 'n', type: 'bridge', ipam: { type: 'ipam-cni', endpoint: ENDPOINT } });

  it('answers VERSION with the input version and every supported version', async () => {
    const outcome = await run({ CNI_COMMAND: 'VERSION' }, '{"cniVersion":"0.4.0"}');
    expect(outcome.exitCode).toBe(0);
    expect(JSON.parse(outcome.stdout)).toEqual({
      cniVersion: '0.4.0',
      supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'],
    });
  });

  it.each([
    ['no CNI_COMMAND', {}, config(), 4, 'required env variables [CNI_COMMAND] missing'],
    ['an unknown command', { CNI_COMMAND: 'FROB' }, config(), 4, 'unknown CNI_COMMAND: FROB'],
    [
      'ADD without CNI_NETNS',
      { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c1', CNI_IFNAME: 'eth0', CNI_PATH: '/x' },
      config(),
      4,
      'required env variables [CNI_NETNS] missing',
    ],
    ['an empty container id', env('ADD', { CNI_CONTAINERID: '' }), config(), 3, 'missing containerID'],
    ['a bad container id', env('DEL', { CNI_CONTAINERID: '-x' }), config(), 4, 'invalid characters in containerID'],
    [
      'a long interface name',
      env('ADD', { CNI_IFNAME: 'a-very-long-ifname' }),
      config(),
      4,
      'interface name is too long',
    ],
    ['malformed CNI_ARGS', env('ADD', { CNI_ARGS: 'oops' }), config(), 4, 'invalid CNI_ARGS'],
    ['undecodable stdin', env('ADD'), '{', 6, 'failed to decode the network configuration'],
    ['CHECK in 0.3.1', env('CHECK'), config('0.3.1'), 1, 'config version does not allow CHECK'],
    ['GC in 1.0.0', env('GC'), config('1.0.0'), 1, 'config version does not allow GC'],
    ['STATUS in 0.4.0', env('STATUS'), config('0.4.0'), 1, 'config version does not allow STATUS'],
  ])('answers %s with the spec error JSON, code %i', async (_name, environment, stdin, code, msg) => {
    const outcome = await run(environment, stdin, 'node-1');
    expect(outcome.exitCode).toBe(1);
    expect(JSON.parse(outcome.stdout)).toMatchObject({ code, msg });
  });
});
