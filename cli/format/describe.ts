import { formatAddress } from '../../shared/core/ip/address.ts';
import { capacity, hostAt, lowerBandSize, parseCidr } from '../../shared/core/ip/cidr.ts';
import { legacyWindow } from '../../shared/core/bitmap/bitmap.ts';
import { formatLabels } from '../../shared/core/labels.ts';
import {
  isReleased,
  type Claim,
  type Lease,
  type Pool,
  type PoolDetails,
  type Range,
  type RepairEvent,
  type Utilization,
} from '../api/types.ts';
import { blockSizesText, growText, held } from './blocks.ts';
import { bar, percent, toBigInt } from './resources.ts';
import { renderTable } from './table.ts';
import { age, ago, expiry, formatSeconds, relative } from './time.ts';

type Field = readonly [label: string, value: string];

/** `Label:` columns aligned as kubectl describe aligns them; a multi-line value is indented under its label. */
function fields(entries: readonly Field[]): string {
  const width = Math.max(...entries.map(([label]) => label.length)) + 2;
  return entries
    .map(([label, value]) => {
      if (value.includes('\n')) return `${label}:\n${indent(value)}`;
      return `${`${label}:`.padEnd(width)}${value}`;
    })
    .join('\n')
    .concat('\n');
}

function indent(text: string): string {
  return text
    .trimEnd()
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
}

/** A time with its age: `2026-04-02T10:00:00.000Z (3m ago)`. */
function when(iso: string | undefined, nowMs: number): string {
  return iso === undefined ? '<unknown>' : `${iso} (${ago(iso, nowMs)})`;
}

/**
 * `[████░░░░]  37%  93 used of 253, 160 free`; in a pool with a reuse delay (or whenever some are held)
 * `93 used of 253, 2 releasing, 158 free`. The bar and the per cent are the used addresses; a block pool's counts are
 * blocks, followed by its addresses: `1 used of 4, 3 free (addresses: 64 used of 256, 192 free)`.
 */
export function utilizationLine(u: Utilization, pool?: Pool): string {
  const releasing = hasReleasing(pool, [u]) ? ` ${u.releasing} releasing,` : '';
  const addresses = u.addresses
    ? ` (addresses: ${u.addresses.used} used of ${u.addresses.size}, ${u.addresses.free} free)`
    : '';
  return `${bar(u.used, u.size)} ${percent(u.used, u.size).padStart(6)}   ${u.used} used of ${u.size},${releasing} ${u.free} free${addresses}`;
}

/**
 * Whether describe speaks of releasing addresses: in a pool with a reuse delay, or when some are held anyway. A pool
 * without a delay never holds any, so its output stays as it was before the reuse delay.
 */
function hasReleasing(pool: Pool | undefined, counts: readonly Utilization[]): boolean {
  return (pool?.reuseDelaySeconds ?? 0) > 0 || counts.some((u) => toBigInt(u.releasing) > 0n);
}

/** `10m (600s): a released address stays held for its previous owner (kind, name, creator)`, or `<none>`. */
function reuseDelay(pool: Pool): string {
  const seconds = pool.reuseDelaySeconds ?? 0;
  if (seconds === 0) return '<none>';
  return `${formatSeconds(seconds)}${seconds >= 60 ? ` (${seconds}s)` : ''}: a released address stays held for its previous owner (kind, name, creator)`;
}

function eventsBlock(events: readonly RepairEvent[], nowMs: number): Field {
  if (events.length === 0) return ['Events', '<none>'];
  return [
    'Events',
    renderTable(
      ['LAST SEEN', 'REASON', 'OBJECT', 'MESSAGE'],
      events.map((e) => [age(e.time, nowMs), e.reason, e.object, e.message]),
    ),
  ];
}

/** `ipam describe pool`: exclusions, utilization per family with a bar, ranges and their states, recent repair events. */
export function describePool(pool: PoolDetails, events: readonly RepairEvent[], nowMs: number): string {
  const utilization = (['IPv4', 'IPv6'] as const)
    .filter((family) => pool.utilization[family] !== undefined)
    .map((family) => `${family}  ${utilizationLine(pool.utilization[family]!, pool)}`)
    .join('\n');
  const releasing = hasReleasing(pool, pool.ranges);
  // A nested range (made from another pool's block claim, or by growth) names its source; other pools show no column.
  const nested = pool.ranges.some((r) => r.source);
  const ranges =
    pool.ranges.length === 0
      ? '<none>'
      : renderTable(
          [
            'NAME',
            'CIDR',
            'FAMILY',
            'STATE',
            'LEGACY',
            'USED',
            ...(releasing ? ['RELEASING'] : []),
            'FREE',
            ...(nested ? ['SOURCE'] : []),
          ],
          pool.ranges.map((r) => [
            r.name,
            r.cidr,
            r.family,
            r.state,
            String(r.legacy),
            String(r.used),
            ...(releasing ? [String(r.releasing)] : []),
            String(r.free),
            ...(nested ? [r.source ? `${r.source.pool}/${r.source.claim}` : '-'] : []),
          ]),
        );
  const blocks = blockSizesText(pool);
  return fields([
    ['Name', pool.name],
    ['Created', when(pool.createdAt, nowMs)],
    ['Exclude', pool.exclude.length ? pool.exclude.join(', ') : '<none>'],
    ['Reuse delay', reuseDelay(pool)],
    // Only a block pool and a growing pool show these, so an address pool reads as before.
    ...(blocks ? [['Blocks', blocks] as const] : []),
    ...(pool.grow ? [['Grows from', `${pool.grow.pool}: ${growText(pool)}`] as const] : []),
    ['Utilization', utilization ? `${utilization}\n` : '<none>'],
    ['Ranges', ranges],
    eventsBlock(events, nowMs),
  ]);
}

/** The first and last address of host offsets [from, to). */
function span(cidrText: string, from: bigint, to: bigint): string {
  const cidr = parseCidr(cidrText);
  const first = formatAddress({ family: cidr.family, value: hostAt(cidr, from) });
  const last = formatAddress({ family: cidr.family, value: hostAt(cidr, to - 1n) });
  return `${first} - ${last} (${to - from})`;
}

/**
 * `ipam describe range`: the range, its utilization and its bands. Dynamic picks take the upper band first and the
 * lower band last (KEP-3070); a legacy range's dynamic picks stay inside its bitmap window.
 */
export function describeRange(pool: PoolDetails, range: Range, nowMs: number): string {
  const cidr = parseCidr(range.cidr);
  const size = capacity(cidr);
  const lower = lowerBandSize(cidr);
  const entries: Field[] = [
    ['Name', range.name],
    ['Pool', pool.name],
    ['CIDR', range.cidr],
    ['Family', range.family],
    [
      'State',
      range.deletionRequestedAt
        ? `${range.state} (deletion requested ${ago(range.deletionRequestedAt, nowMs)})`
        : range.state,
    ],
    ['Legacy', String(range.legacy)],
    ['Created', when(range.createdAt, nowMs)],
    ['Utilization', utilizationLine(range, pool)],
  ];
  if (size === 0n) entries.push(['Bands', '<no usable address>']);
  else if (lower === 0n) entries.push(['Bands', `one band: ${span(range.cidr, 0n, size)}`]);
  else
    entries.push(
      ['Lower band', `${span(range.cidr, 0n, lower)}  static picks; dynamic ones only once the upper band is full`],
      ['Upper band', `${span(range.cidr, lower, size)}  dynamic picks start here`],
    );
  if (range.legacy) {
    const window = legacyWindow(cidr);
    entries.push([
      'Legacy window',
      window < size
        ? `${span(range.cidr, 0n, window)}  the bitmap's addresses; dynamic picks stay inside`
        : 'the whole range',
    ]);
  }
  entries.push(['Exclude', pool.exclude.length ? pool.exclude.join(', ') : '<none>']);
  return fields(entries);
}

/** `ipam describe claim`: owner, policy, every address with its range, TTL and expiry. */
export function describeClaim(pool: string, claim: Claim, nowMs: number): string {
  return fields([
    ['Name', claim.name],
    ['Pool', pool],
    ['UID', claim.uid],
    ['Owner', `${claim.owner.kind}/${claim.owner.name} (uid ${claim.owner.uid})`],
    ['IP family policy', claim.ipFamilyPolicy],
    ...(claim.count !== undefined && claim.count > 1
      ? [['Count', `${claim.count} addresses per family`] as const]
      : []),
    [
      'Addresses',
      claim.addresses.length
        ? renderTable(
            [claim.addresses.some((a) => a.prefix) ? 'BLOCK' : 'ADDRESS', 'FAMILY', 'RANGE'],
            claim.addresses.map((a) => [held(a), a.family, a.range]),
          )
        : '<none>',
    ],
    // Only in a pool with dns: each name the claim publishes and its state (docs/dns.md).
    ...(claim.dns?.length
      ? [
          [
            'DNS',
            renderTable(
              ['NAME', 'STATE', 'REASON'],
              claim.dns.map((d) => [d.name, d.state, d.reason ?? '']),
            ),
          ] as const,
        ]
      : []),
    // Only a block claim that other pools' ranges were made from: the API refuses its release while they live.
    ...(claim.children?.length
      ? [
          [
            'Children',
            renderTable(
              ['POOL', 'RANGE', 'CIDR'],
              claim.children.map((c) => [c.pool, c.range, c.cidr]),
            ),
          ] as const,
        ]
      : []),
    // One label a line: no key or value may hold ','.
    ['Labels', formatLabels(claim.labels).replaceAll(',', '\n') || '<none>'],
    // Only a claim that has consumers shows them: it is released when the last one is removed.
    ...(claim.consumers?.length
      ? [
          [
            'Consumers',
            renderTable(
              ['KIND', 'NAME', 'UID'],
              claim.consumers.map((c) => [c.kind, c.name, c.uid]),
            ),
          ] as const,
        ]
      : []),
    ['TTL', claim.ttlSeconds === undefined ? '<none>' : `${claim.ttlSeconds}s`],
    ['Expires', claim.expiresAt === undefined ? 'never' : `${claim.expiresAt} (${expiry(claim.expiresAt, nowMs)})`],
    ['Created', when(claim.createdAt, nowMs)],
    ['Version', String(claim.version)],
  ]);
}

/** `ipam describe address`: who holds it, or for a Released address whom it is held for and until when. */
export function describeAddress(pool: string, lease: Lease, nowMs: number): string {
  if (isReleased(lease)) {
    return fields([
      ['Address', lease.address],
      ['Pool', pool],
      ['State', 'Released'],
      ['Family', lease.family],
      ['Range', lease.range],
      ['Previous claim', lease.previousClaim],
      ['Previous owner', `${lease.previousOwner.kind}/${lease.previousOwner.name} (uid ${lease.previousOwner.uid})`],
      ['Released', when(lease.releasedAt, nowMs)],
      ['Reusable at', `${lease.reusableAt} (${relative(lease.reusableAt, nowMs)})`],
    ]);
  }
  return fields([
    ['Address', lease.address],
    ['Pool', pool],
    ['State', lease.state ?? 'Allocated'],
    ['Family', lease.family],
    ['Range', lease.range],
    ['Claim', lease.claim],
    ['Holder', `${lease.owner.kind}/${lease.owner.name} (uid ${lease.owner.uid})`],
    ['Created', when(lease.createdAt, nowMs)],
    ['Expires', lease.expiresAt === undefined ? 'never' : `${lease.expiresAt} (${expiry(lease.expiresAt, nowMs)})`],
  ]);
}
