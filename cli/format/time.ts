/**
 * Times as kubectl shows them. `humanDuration` follows k8s.io/apimachinery/pkg/util/duration.HumanDuration, so an AGE
 * column reads the same here as in `kubectl get`: precise while it is short, coarser as it grows.
 */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 60 * 2) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const days = Math.floor(hours / 24) % 365;
    return days === 0 ? `${Math.floor(hours / 24 / 365)}y` : `${Math.floor(hours / 24 / 365)}y${days}d`;
  }
  return `${Math.floor(hours / 24 / 365)}y`;
}

/** The AGE column: `3m`, or `<unknown>` without a time (kubectl's word). */
export function age(iso: string | undefined, nowMs: number): string {
  const at = iso === undefined ? NaN : Date.parse(iso);
  return Number.isNaN(at) ? '<unknown>' : humanDuration(nowMs - at);
}

/** A past time in prose: `3m ago`. */
export function ago(iso: string | undefined, nowMs: number): string {
  const text = age(iso, nowMs);
  return text === '<unknown>' ? text : `${text} ago`;
}

/** A lease's expiry in prose: `expires in 4m`, `expired 3s ago`, `never` without one. */
export function expiry(iso: string | undefined, nowMs: number): string {
  if (iso === undefined) return 'never';
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return '<unknown>';
  return at >= nowMs ? `expires in ${humanDuration(at - nowMs)}` : `expired ${humanDuration(nowMs - at)} ago`;
}

/** The EXPIRES column: `in 4m`, `-` without a TTL. */
export function expiresColumn(iso: string | undefined, nowMs: number): string {
  if (iso === undefined) return '-';
  const text = expiry(iso, nowMs);
  return text.startsWith('expires ') ? text.slice('expires '.length) : text;
}

/** Whole seconds exactly, in the units parseDuration reads back: `90s` is `1m30s`, `600` is `10m`, `604800` is `168h`. */
export function formatSeconds(total: number): string {
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const text = `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${s ? `${s}s` : ''}`;
  return text || '0s';
}

/** A time to come or gone in prose: `in 7m`, `3s ago`. */
export function relative(iso: string | undefined, nowMs: number): string {
  const at = iso === undefined ? NaN : Date.parse(iso);
  if (Number.isNaN(at)) return '<unknown>';
  return at >= nowMs ? `in ${humanDuration(at - nowMs)}` : `${humanDuration(nowMs - at)} ago`;
}

const UNIT_MS = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 } as const;

/**
 * Parses a duration as kubectl flags take them (Go's time.ParseDuration without the sub-millisecond units):
 * `90s`, `5m`, `1h30m`, `1.5h`; a bare number means seconds, as `ttlSeconds` does. Written here rather than taken
 * from a package because the common ones (`ms`) read `1h30m` as invalid and `300` as milliseconds.
 * @returns milliseconds, or undefined when the text is not a positive duration.
 */
export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  if (!/^(\d+(\.\d+)?(ms|h|m|s))+$/.test(trimmed)) return undefined;
  let total = 0;
  for (const match of trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g))
    total += Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  return total > 0 ? total : undefined;
}
