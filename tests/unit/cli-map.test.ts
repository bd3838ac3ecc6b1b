import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseAddress } from '../../shared/core/ip/address.ts';
import { parseCidr, slotted } from '../../shared/core/ip/cidr.ts';
import { exclusionIntervals, layoutMap, Zone, zoneOf } from '../../cli/map/layout.ts';
import { addressValue } from '../../cli/map/occupancy.ts';
import { renderSvgMap } from '../../cli/map/render-svg.ts';
import { glyphOf, renderTextMap } from '../../cli/map/render-text.ts';
import { fakeFetch, runCli } from '../support/cli.ts';

const v4 = (text: string) => parseAddress(text).value;
const meta = { pool: 'services', range: 'r', family: 'IPv4', state: 'Ready', legacy: false };

describe('Map layout: a small range, one cell per address', () => {
  // 10.96.0.0/27: 30 hosts, of which the lower band is min(max(16, 30/16), 256) = 16.
  const cidr = parseCidr('10.96.0.0/27');
  const model = layoutMap({
    cidr,
    held: [v4('10.96.0.3'), v4('10.96.0.20'), v4('10.96.0.31'), v4('10.97.0.1')],
    exclude: exclusionIntervals(['10.96.0.0/29', '10.96.0.8/32', 'fd00::/64'], 'IPv4'),
    maxCells: 1024,
    maxColumns: 16,
  });

  it('draws every address of the block in rows of 16, network and broadcast included', () => {
    expect(model.cellSize).toBe(1n);
    expect(model.rows.map((row) => row.length)).toEqual([16, 16]);
    expect(model.lowerBand).toBe(16n);
  });

  it('counts held, free and excluded usable addresses; held outside the block or excluded-and-held are not double counted', () => {
    // Excluded usable: .1-.8 (8); .3 of them is held, so 7 excluded and free of claims. .31 is broadcast: not held.
    expect(model.counts).toEqual({ usable: 30n, held: 2n, excluded: 7n, free: 21n });
  });

  it('marks reserved, excluded, held, lower band and upper band cells with their glyphs', () => {
    const glyphs = model.rows.map((row) => row.map(glyphOf).join(''));
    //                 .0 reserved, .1-.8 excluded (.3 held), .9-.16 lower band, .17-.30 upper (.20 held), .31 broadcast
    expect(glyphs).toEqual(['-xx█xxxxx:::::::', ':···█··········-']);
  });

  it('prints the heading, rows labelled with their first address, and a legend of the glyphs used', () => {
    expect(renderTextMap(model, meta, { colour: false })).toBe(
      [
        'pool services, range r (10.96.0.0/27, IPv4, Ready)',
        '30 usable: 2 held, 21 free, 7 excluded',
        'lower band 10.96.0.1 - 10.96.0.16 (16), upper band 10.96.0.17 - 10.96.0.30 (14)',
        '1 cell = 1 address, 16 per row',
        '',
        ' 10.96.0.0  -xx█xxxxx:::::::',
        '10.96.0.16  :···█··········-',
        '',
        'legend: █ held (the address)   · free   : free, lower band   x excluded   - network/broadcast',
        '',
      ].join('\n'),
    );
  });

  it('colours zones only when asked (a terminal without NO_COLOR)', () => {
    expect(renderTextMap(model, meta, { colour: true })).toContain('\x1b[');
    expect(renderTextMap(model, meta, { colour: false })).not.toContain('\x1b[');
  });
});

describe('Map layout: a /16, one cell per 64 addresses', () => {
  const cidr = parseCidr('10.64.0.0/16');
  // Full except the second cell (10.64.0.64-127), which is half held, and the last row, which is empty.
  const held: bigint[] = [];
  for (let offset = 1n; offset < 65535n; offset += 1n) {
    const value = cidr.base + offset;
    const inSecondCell = offset >= 64n && offset < 128n;
    if (offset >= 61440n) continue;
    if (inSecondCell && offset % 2n === 1n) continue;
    held.push(value);
  }
  const model = layoutMap({ cidr, held, exclude: [], maxCells: 1024, maxColumns: 64 });

  it('is 16 rows of 64 cells, each row a /20', () => {
    expect(model.cellSize).toBe(64n);
    expect(model.rows).toHaveLength(16);
    expect(model.rows.every((row) => row.length === 64)).toBe(true);
    expect(
      renderTextMap(model, meta, { colour: false })
        .split('\n')
        .filter((l) => /^ *10\.64\./.test(l))
        .map((l) => l.trim().split(' ')[0]),
    ).toEqual(Array.from({ length: 16 }, (_, i) => `10.64.${i * 16}.0`));
  });

  it('shades cells by fill: full, half, empty; the first and last cells lose network and broadcast', () => {
    const first = model.rows[0]!;
    expect(first[0]!.usable).toBe(63n);
    expect(glyphOf(first[0]!)).toBe('█');
    expect(glyphOf(first[1]!)).toBe('▒');
    expect(glyphOf(first[2]!)).toBe('█');
    expect(model.rows[15]!.map(glyphOf).join('')).toBe(`${'·'.repeat(63)}·`);
    expect(model.rows[15]![63]!.usable).toBe(63n);
    expect(model.counts).toEqual({
      usable: 65534n,
      held: BigInt(held.length),
      excluded: 0n,
      free: 65534n - BigInt(held.length),
    });
  });

  it('names every shade in the legend, the full cell █ included', () => {
    expect(renderTextMap(model, meta, { colour: false })).toContain('legend: ▒█ held (some ░ ▒ ▓ █ all of the cell)');
  });

  it('marks the lower band (256 addresses of a /16: the first 4 cells) when free', () => {
    const empty = layoutMap({ cidr, held: [], exclude: [], maxCells: 1024, maxColumns: 64 });
    expect(empty.rows[0]!.slice(0, 6).map(glyphOf).join('')).toBe('::::··');
  });
});

describe('Map layout: an IPv6 /64, 2^64 addresses', () => {
  // Work follows cells and held addresses, never addresses: a per-address loop would not end here. How fast the map
  // is lives in bench/cli-map.ts.
  it('lays out by cells and counts usable, held, excluded and free addresses without visiting them', () => {
    const cidr = parseCidr('fd00:1::/64');
    const model = layoutMap({
      cidr,
      held: [cidr.base + 5n, cidr.base + (1n << 63n)],
      exclude: exclusionIntervals(['fd00:1::/120'], 'IPv6'),
      maxCells: 16_384,
      maxColumns: 128,
    });
    expect(model.cellSize).toBe(1n << 50n);
    expect(model.rows.map((row) => row.length)).toEqual(Array.from({ length: 128 }, () => 128));
    // Usable: all but the network address. Excluded: the /120's 256 less the network address and the held ::5.
    const usable = (1n << 64n) - 1n;
    expect(model.counts).toEqual({ usable, held: 2n, excluded: 254n, free: usable - 2n - 254n });
  });
});

describe('Map layout: a legacy IPv6 /108 and its bitmap window', () => {
  it('leaves addresses beyond the first 65,535 hosts outside the window', () => {
    const cidr = parseCidr('fd00:10:96::/108');
    const model = layoutMap({ cidr, held: [], exclude: [], window: 65_535n, maxCells: 1024, maxColumns: 32 });
    expect(model.cellSize).toBe(1024n);
    const zones = model.rows.flat().map(zoneOf);
    expect(zones.slice(0, 64).every((z) => z === Zone.Lower || z === Zone.Upper)).toBe(true);
    expect(zones.slice(64).every((z) => z === Zone.Outside)).toBe(true);
    expect(renderTextMap(model, { ...meta, family: 'IPv6', legacy: true }, { colour: false })).toContain(
      'legacy bitmap window fd00:10:96::1 - fd00:10:96::ffff (65535); dynamic picks stay inside it',
    );
  });
});

describe('Map layout: a block pool range, one cell per block', () => {
  // 10.244.0.0/24 in /26 blocks: four blocks, the first (at the range's network address) and the third held.
  const cidr = slotted(parseCidr('10.244.0.0/24'), 26);
  const model = layoutMap({
    cidr,
    held: [v4('10.244.0.0'), v4('10.244.0.128')],
    exclude: exclusionIntervals(['10.244.0.200/32'], 'IPv4'),
    maxCells: 1024,
    maxColumns: 64,
  });

  it('counts blocks, none reserved, and widens an exclusion to the block it touches', () => {
    expect(model.cellSize).toBe(1n);
    expect(model.rows.map((row) => row.map(glyphOf).join(''))).toEqual(['█·█x']);
    expect(model.counts).toEqual({ usable: 4n, held: 2n, excluded: 1n, free: 1n });
  });

  it('labels rows and spans with block CIDRs and says the cell is a block', () => {
    expect(renderTextMap(model, meta, { colour: false })).toBe(
      [
        'pool services, range r (10.244.0.0/24, IPv4, Ready)',
        '4 blocks of /26: 2 held, 1 free, 1 excluded',
        'one band 10.244.0.0/26 - 10.244.0.192/26 (4) (16 blocks or fewer have no lower band)',
        '1 cell = 1 block, 4 per row',
        '',
        '10.244.0.0/26  █·█x',
        '',
        'legend: █ held (the block)   · free   x excluded',
        '',
      ].join('\n'),
    );
    expect(renderSvgMap(model, meta, new Date(0))).toContain('4 blocks of /26: 2 held, 1 free, 1 excluded');
  });

  it('draws a /16 of /24 blocks as 256 cells, one per block', () => {
    const wide = layoutMap({
      cidr: slotted(parseCidr('10.0.0.0/16'), 24),
      held: [v4('10.0.5.0')],
      exclude: [],
      maxCells: 1024,
      maxColumns: 64,
    });
    expect(wide.cellSize).toBe(1n);
    expect(wide.rows.flat()).toHaveLength(256);
    expect(wide.rows.flat()[5]!.held).toBe(1n);
    expect(wide.counts).toMatchObject({ usable: 256n, held: 1n, free: 255n });
  });
});

describe('Map SVG', () => {
  it('draws a title, the counts, the time, a legend and one rect per cell plus one per held cell', () => {
    const cidr = parseCidr('10.96.0.0/24');
    const model = layoutMap({
      cidr,
      held: [v4('10.96.0.10'), v4('10.96.0.200')],
      exclude: [],
      maxCells: 16_384,
      maxColumns: 128,
    });
    const svg = renderSvgMap(model, meta, new Date('2026-04-02T10:00:00Z'));
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg" width="\d+" height="\d+"/);
    expect(svg).toContain('254 usable: 2 held, 252 free, 0 excluded');
    expect(svg).toContain('read at 2026-04-02T10:00:00.000Z');
    expect(svg).toContain('>free, lower band</text>');
    expect(svg.match(/<rect /g)).toHaveLength(1 + 256 + 2 + 5);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
  });

  it('escapes names in text', () => {
    const svg = renderSvgMap(
      layoutMap({ cidr: parseCidr('10.0.0.0/30'), held: [], exclude: [], maxCells: 4, maxColumns: 4 }),
      { ...meta, pool: 'a<b&"c' },
      new Date(0),
    );
    expect(svg).toContain('a&lt;b&amp;&quot;c');
    expect(svg).not.toContain('a<b');
  });
});

describe('Reading addresses for the map', () => {
  it('reads canonical addresses exactly as the shared parser does', () => {
    const v4Address = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((octets) => octets.join('.'));
    const v6Address = fc.ipV6().map((text) => {
      // The API answers RFC 5952 text; the shared formatter makes any spelling canonical.
      const { value } = parseAddress(text);
      return { text, value };
    });
    fc.assert(fc.property(v4Address, (text) => addressValue(text) === parseAddress(text).value));
    fc.assert(fc.property(v6Address, ({ text, value }) => addressValue(text) === value));
  });

  it("reads the range in one request of the occupancy route, its bits LSB first from each slice's first address", async () => {
    // Prepare: a pool with one /28 range holding .1, .2 and .14: one slice from the network address, bits 1, 2, 14
    const range = {
      name: '10.96.0.0-28',
      cidr: '10.96.0.0/28',
      family: 'IPv4',
      state: 'Ready',
      legacy: false,
      size: 14,
      used: 3,
      free: 11,
    };
    const bits = Buffer.from([0b0000_0110, 0b0100_0000]).toString('base64');
    const occupancy = {
      range: range.name,
      cidr: range.cidr,
      used: 3,
      source: 'summary',
      slices: [{ first: '10.96.0.0', count: 16, used: 3, bits, asOf: '' }],
    };
    const server = fakeFetch((request) => {
      const path = request.url.pathname;
      if (path === '/v1/pools')
        return { status: 200, body: { items: [{ name: 'services', exclude: ['10.96.0.4/31'], createdAt: '' }] } };
      if (path === '/v1/pools/services/ranges/10.96.0.0-28') return { status: 200, body: range };
      if (path === '/v1/pools/services/ranges/10.96.0.0-28/occupancy') return { status: 200, body: occupancy };
      return { status: 404, body: { status: 404, code: 'NotFound', detail: path } };
    });

    // Act
    const result = await runCli(['map', 'services', '10.96.0.0-28', '--svg', 'out.svg'], { fetch: server.fetch });

    // Assess
    expect(result.err).toBe('wrote out.svg\n');
    expect(result.code).toBe(0);
    expect(server.requests.filter((r) => r.url.pathname.endsWith('/addresses'))).toEqual([]);
    expect(server.requests.filter((r) => r.url.pathname.endsWith('/occupancy'))).toHaveLength(1);
    expect(result.out).toContain('14 usable: 3 held, 9 free, 2 excluded\n');
    expect(result.out).toContain('10.96.0.0  -██·xx········█-\n');
    expect(result.files.get('out.svg')).toContain('14 usable: 3 held, 9 free, 2 excluded');
  });

  it('draws a block pool range a block to a cell, from the range and the occupancy answer', async () => {
    // Prepare: a /24 of /26 blocks; the answer holds the blocks at .0 and .64 (bits 0 and 64)
    const range = {
      name: 'r',
      cidr: '10.244.0.0/24',
      family: 'IPv4',
      state: 'Ready',
      legacy: false,
      blockPrefixLength: 26,
      size: 4,
      used: 2,
      free: 2,
    };
    const bits = Buffer.from([1, 0, 0, 0, 0, 0, 0, 0, 1]).toString('base64');
    const occupancy = {
      range: 'r',
      cidr: range.cidr,
      blockPrefixLength: 26,
      size: 4,
      used: 2,
      source: 'summary',
      slices: [{ first: '10.244.0.0', count: 256, used: 2, bits, asOf: '' }],
    };
    const server = fakeFetch((request) => {
      const path = request.url.pathname;
      if (path === '/v1/pools') return { status: 200, body: { items: [{ name: 'pods', exclude: [], createdAt: '' }] } };
      if (path === '/v1/pools/pods/ranges/r') return { status: 200, body: range };
      if (path === '/v1/pools/pods/ranges/r/occupancy') return { status: 200, body: occupancy };
      return { status: 404, body: { status: 404, code: 'NotFound', detail: path } };
    });
    // Act
    const result = await runCli(['map', 'pods', 'r'], { fetch: server.fetch });
    // Assess
    expect(result.code).toBe(0);
    expect(result.out).toContain('4 blocks of /26: 2 held, 2 free, 0 excluded\n');
    expect(result.out).toContain('10.244.0.0/26  ██··\n');
  });

  it('says which range is missing', async () => {
    const server = fakeFetch((request) =>
      request.url.pathname.includes('/ranges/')
        ? { status: 404, body: { status: 404, code: 'NotFound', detail: 'range "nope" was not found.' } }
        : { status: 200, body: { items: [] } },
    );
    const result = await runCli(['map', 'services', 'nope'], { fetch: server.fetch });
    expect(result).toMatchObject({ code: 1, err: 'error: NotFound: range "nope" was not found.\n' });
  });
});
