import type { Claim, Count, Utilization } from '../cli/api/types.ts';
import { h } from './dom.ts';

const big = (count: Count | undefined): bigint => BigInt(count ?? 0);

/** Share of `part` in `whole` as a number 0..100 with two decimals; exact for counts beyond 2^53. */
export function percent(part: Count | undefined, whole: Count | undefined): number {
  const w = big(whole);
  return w === 0n ? 0 : Number((big(part) * 10_000n) / w) / 100;
}

/**
 * A utilization bar: used, then releasing (held for a previous owner), out of the size. The numbers are in the
 * text next to it and in its accessible name, so the colours carry nothing that is not also written.
 */
export function utilizationBar(label: string, u: Utilization | undefined): HTMLElement {
  if (u === undefined) return h('span', { class: 'muted' }, 'none');
  const used = percent(u.used, u.size);
  const releasing = percent(u.releasing, u.size);
  const text = `${u.used} of ${u.size} used (${used}%)${big(u.releasing) > 0n ? `, ${u.releasing} releasing` : ''}`;
  const usedPart = h('span', { class: 'bar-used' });
  usedPart.style.setProperty('width', `${used}%`);
  const releasingPart = h('span', { class: 'bar-releasing' });
  releasingPart.style.setProperty('width', `${releasing}%`);
  return h(
    'div',
    { class: 'util' },
    h('div', { class: 'bar', role: 'img', 'aria-label': `${label}: ${text}` }, usedPart, releasingPart),
    h('span', { class: 'util-text' }, text),
  );
}

/** 3600 -> "1 h", 90 -> "1 min 30 s", 0 -> "none". */
export function duration(seconds: number | undefined): string {
  if (seconds === undefined || seconds === 0) return 'none';
  const parts: string[] = [];
  let rest = seconds;
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3600],
    ['min', 60],
    ['s', 1],
  ] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)} ${unit}`);
      rest %= size;
    }
  }
  return parts.join(' ');
}

/** An ISO time as a <time> element with the local rendering and the exact value on hover. */
export function time(iso: string | undefined): HTMLElement | string {
  if (!iso) return '';
  const date = new Date(iso);
  return h('time', { datetime: iso, title: iso }, Number.isNaN(date.getTime()) ? iso : date.toLocaleString());
}

/** "in 5 min" / "2 min ago" for an expiry. */
export function relative(iso: string | undefined, now = Date.now()): string {
  if (!iso) return '';
  const seconds = Math.round((Date.parse(iso) - now) / 1000);
  return seconds >= 0 ? `in ${duration(seconds) === 'none' ? '0 s' : duration(seconds)}` : `${duration(-seconds)} ago`;
}

/** A claim's labels as `key=value` chips; nothing when it has none. */
export function labelChips(labels: Readonly<Record<string, string>> | undefined): HTMLElement | string {
  const entries = Object.entries(labels ?? {});
  return entries.length === 0
    ? ''
    : h(
        'span',
        { class: 'labels' },
        entries.map(([key, value]) => h('code', { class: 'label' }, `${key}=${value}`)),
      );
}

/** "in 5 min (12:30:00)" for a claim with a TTL, "never" without. */
export function expiry(claim: Claim): HTMLElement | string {
  return claim.expiresAt ? h('span', {}, relative(claim.expiresAt), ' (', time(claim.expiresAt), ')') : 'never';
}

/**
 * The DNS name a claim is published under in a pool with a zone: its hostname (or its name) in the zone, as the stream
 * function writes it; undefined in a pool without one.
 */
export function dnsName(claim: Pick<Claim, 'name' | 'hostname'>, zone: string | undefined): string | undefined {
  return zone === undefined ? undefined : `${claim.hostname ?? claim.name}.${zone.replace(/\.$/, '')}`;
}
