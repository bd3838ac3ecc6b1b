import { stringify } from 'yaml';
import {
  isReleased,
  type Claim,
  type Count,
  type Lease,
  type Page,
  type Pool,
  type Range,
  type RepairEvent,
} from '../api/types.ts';
import { formatLabels } from '../../shared/core/labels.ts';
import { blockLengths, held } from './blocks.ts';
import { renderTable } from './table.ts';
import { age, expiresColumn, formatSeconds } from './time.ts';

/** `-o` values; the table is the default. */
export const OutputFormat = { Table: 'table', Wide: 'wide', Json: 'json', Yaml: 'yaml', Name: 'name' } as const;
export type OutputFormat = (typeof OutputFormat)[keyof typeof OutputFormat];
export const OUTPUT_CHOICES = ['wide', 'json', 'yaml', 'name'] as const;

interface Column<T> {
  readonly header: string;
  readonly value: (item: T, nowMs: number) => string;
  /** `wide`: only with `-o wide`; `narrow`: only without it (a short form the wide table replaces). Both by default. */
  readonly only?: 'wide' | 'narrow';
}

/** How one kind of resource is shown: its kubectl-style name and its table columns. */
export interface ResourceView<T> {
  readonly kind: string;
  readonly name: (item: T) => string;
  readonly columns: readonly Column<T>[];
}

const owner = (o: { kind: string; name: string }) => `${o.kind}/${o.name}`;

export const poolView: ResourceView<Pool> = {
  kind: 'pool',
  name: (p) => p.name,
  columns: [
    { header: 'NAME', value: (p) => p.name },
    { header: 'EXCLUDE', value: (p) => summarize(p.exclude, 2), only: 'narrow' },
    { header: 'EXCLUDE', value: (p) => (p.exclude.length ? p.exclude.join(',') : '<none>'), only: 'wide' },
    {
      header: 'REUSE-DELAY',
      value: (p) => (p.reuseDelaySeconds ? formatSeconds(p.reuseDelaySeconds) : '-'),
      only: 'wide',
    },
    { header: 'BLOCKS', value: (p) => blockLengths(p).join(',') || '-', only: 'wide' },
    { header: 'GROWS-FROM', value: (p) => p.grow?.pool ?? '-', only: 'wide' },
    { header: 'AGE', value: (p, now) => age(p.createdAt, now) },
  ],
};

export const rangeView: ResourceView<Range> = {
  kind: 'range',
  name: (r) => r.name,
  columns: [
    { header: 'NAME', value: (r) => r.name },
    { header: 'CIDR', value: (r) => r.cidr },
    { header: 'FAMILY', value: (r) => r.family },
    { header: 'STATE', value: (r) => r.state },
    { header: 'LEGACY', value: (r) => String(r.legacy), only: 'wide' },
    { header: 'SIZE', value: (r) => String(r.size), only: 'wide' },
    { header: 'USED', value: (r) => String(r.used) },
    { header: 'RELEASING', value: (r) => String(r.releasing) },
    { header: 'FREE', value: (r) => String(r.free) },
    { header: 'UTILIZATION', value: (r) => `${bar(r.used, r.size, 10)} ${percent(r.used, r.size)}`, only: 'wide' },
    { header: 'AGE', value: (r, now) => age(r.createdAt, now) },
  ],
};

export const claimView: ResourceView<Claim> = {
  kind: 'claim',
  name: (c) => c.name,
  columns: [
    { header: 'NAME', value: (c) => c.name },
    // A batch claim (count) holds up to 64 addresses: the table shows two and how many more, -o wide all of them.
    {
      header: 'ADDRESSES',
      value: (c) => summarize(c.addresses.map(held), 2),
      only: 'narrow',
    },
    { header: 'ADDRESSES', value: (c) => c.addresses.map(held).join(',') || '<none>', only: 'wide' },
    {
      header: 'RANGES',
      value: (c) => [...new Set(c.addresses.map((a) => a.range))].join(',') || '<none>',
      only: 'wide',
    },
    { header: 'POLICY', value: (c) => c.ipFamilyPolicy, only: 'wide' },
    { header: 'OWNER', value: (c) => owner(c.owner) },
    { header: 'OWNER-UID', value: (c) => c.owner.uid, only: 'wide' },
    { header: 'VERSION', value: (c) => String(c.version), only: 'wide' },
    { header: 'LABELS', value: (c) => formatLabels(c.labels) || '<none>', only: 'wide' },
    { header: 'EXPIRES', value: (c, now) => expiresColumn(c.expiresAt, now) },
    { header: 'AGE', value: (c, now) => age(c.createdAt, now) },
  ],
};

/**
 * Addresses. A Released one (held for its previous owner during the pool's reuse delay) shows its previous claim and
 * owner in CLAIM and OWNER, when it becomes reusable in EXPIRES, and the time since its release in AGE.
 */
export const leaseView: ResourceView<Lease> = {
  kind: 'address',
  name: (l) => l.address,
  columns: [
    { header: 'ADDRESS', value: (l) => l.address },
    { header: 'FAMILY', value: (l) => l.family, only: 'wide' },
    { header: 'STATE', value: (l) => l.state ?? 'Allocated' },
    { header: 'RANGE', value: (l) => l.range },
    { header: 'CLAIM', value: (l) => (isReleased(l) ? l.previousClaim : l.claim) },
    { header: 'OWNER', value: (l) => owner(isReleased(l) ? l.previousOwner : l.owner) },
    { header: 'OWNER-UID', value: (l) => (isReleased(l) ? l.previousOwner : l.owner).uid, only: 'wide' },
    { header: 'EXPIRES', value: (l, now) => expiresColumn(isReleased(l) ? l.reusableAt : l.expiresAt, now) },
    { header: 'AGE', value: (l, now) => age(isReleased(l) ? l.releasedAt : l.createdAt, now) },
  ],
};

export const eventView: ResourceView<RepairEvent> = {
  kind: 'event',
  name: (e) => `${e.reason}.${Date.parse(e.time) || e.time}`,
  columns: [
    { header: 'LAST SEEN', value: (e, now) => age(e.time, now) },
    { header: 'TIME', value: (e) => e.time, only: 'wide' },
    { header: 'REASON', value: (e) => e.reason },
    { header: 'OBJECT', value: (e) => e.object },
    { header: 'MESSAGE', value: (e) => e.message },
    { header: 'LABELS', value: (e) => formatLabels(e.labels) || '<none>', only: 'wide' },
  ],
};

/**
 * Renders what `get` read. A list (no NAME given) prints as `{items, nextCursor?}` in JSON and YAML, one object as
 * itself; tables and names look the same for both. An empty table says so on stderr, as kubectl does.
 */
export function renderResources<T>(
  view: ResourceView<T>,
  read: { page: Page<T> } | { item: T },
  format: OutputFormat,
  nowMs: number,
): { out: string; err?: string } {
  const items: readonly T[] = 'item' in read ? [read.item] : read.page.items;
  switch (format) {
    case OutputFormat.Json:
      return { out: `${JSON.stringify('item' in read ? read.item : read.page, null, 2)}\n` };
    case OutputFormat.Yaml:
      return { out: stringify('item' in read ? read.item : read.page) };
    case OutputFormat.Name:
      return { out: items.map((item) => `${view.kind}/${view.name(item)}\n`).join('') };
    default: {
      const wide = format === OutputFormat.Wide;
      const columns = view.columns.filter((c) => c.only === undefined || c.only === (wide ? 'wide' : 'narrow'));
      const out = renderTable(
        columns.map((c) => c.header),
        items.map((item) => columns.map((c) => c.value(item, nowMs))),
      );
      const more = 'page' in read && read.page.nextCursor ? `(more: --cursor ${read.page.nextCursor})\n` : undefined;
      if (out === '') return { out, err: 'No resources found.\n' };
      return more ? { out, err: more } : { out };
    }
  }
}

/** The first `n` entries and how many more: `10.96.0.0/29,10.96.0.8 +1 more`; `<none>` when empty. */
function summarize(values: readonly string[], n: number): string {
  if (values.length === 0) return '<none>';
  const shown = values.slice(0, n).join(',');
  return values.length > n ? `${shown} +${values.length - n} more` : shown;
}

/** Counts are exact: a number, or a decimal string beyond 2^53. */
export function toBigInt(count: Count): bigint {
  return typeof count === 'number' ? BigInt(count) : BigInt(count);
}

/** Used over size in per cent, one decimal below 10 %: `0.4%`, `37%`, `100%`. */
export function percent(used: Count, size: Count): string {
  const u = toBigInt(used);
  const s = toBigInt(size);
  if (s === 0n) return '-';
  const tenths = Number((u * 1000n) / s);
  if (u > 0n && tenths === 0) return '<0.1%';
  return tenths < 100 ? `${(tenths / 10).toFixed(1)}%` : `${Math.floor(tenths / 10)}%`;
}

/** A fill bar of `width` cells: `[████░░░░░░]`; any use at all shows at least one cell. */
export function bar(used: Count, size: Count, width = 20): string {
  const u = toBigInt(used);
  const s = toBigInt(size);
  let filled = s === 0n ? 0 : Number((u * BigInt(width)) / s);
  if (u > 0n && filled === 0) filled = 1;
  return `[${'█'.repeat(filled)}${'░'.repeat(width - filled)}]`;
}
