/**
 * DynamoDB's throughput as an AWS account meets it: the table-level quota per table and per GSI, the on-demand ramp
 * from a new table's starting rate (or its warm throughput), a read and a write budget per partition, and a
 * finite number of partitions that split for heat after a delay. Defaults are AWS's defaults; SIMULATION.md cites
 * each figure. Hand-rolled token buckets: no library models DynamoDB's rules, and the run must stay deterministic
 * (virtual time in, decisions out).
 *
 * Units: a partition throttles reads and writes apart ("DynamoDB's partition-level throttling operates independently
 * for reads and writes"): 3,000 read and 1,000 write units a second each. In a new table's ramp a read unit weighs
 * `startWriteUnits / startReadUnits` (1/3) ("4,000 writes or 12,000 reads, or a linear combination").
 */

export interface Quotas {
  /** Table-level on-demand throughput quota, per table and per GSI (request units per second). */
  readonly tableReadUnits: number;
  readonly tableWriteUnits: number;
  /** What a table (and each GSI) sustains at first: a new on-demand table's rate, or its warm throughput. */
  readonly startReadUnits: number;
  readonly startWriteUnits: number;
  /**
   * How the starting rate mixes reads and writes: 'combined' for a new table ("4,000 write request units or 12,000
   * read request units, or a linear combination of both"), 'apart' for warm throughput, which is a read value and a
   * write value ("the number of read operations" / "write operations your base table can instantaneously support").
   */
  readonly rampMix: 'combined' | 'apart';
  /** On-demand scaling: up to `rampFactor` times the previous peak at once; more only `rampWindowMs` after it. */
  readonly rampFactor: number;
  readonly rampWindowMs: number;
  /** Per partition: this many read and, apart, write units a second, with `burstSeconds` of each saved. */
  readonly partitionReadUnits: number;
  readonly partitionWriteUnits: number;
  readonly burstSeconds: number;
  /**
   * Partitions of the table and of each GSI at first ('per-key': one per partition-key value, the optimistic
   * model the closed-loop projection used); a partition refused calls for `splitAfterMs` splits in two.
   */
  readonly partitions: number | 'per-key';
  readonly splitAfterMs: number;
}

/** AWS's defaults for a new on-demand table (SIMULATION.md, "AWS figures"). */
export const AWS_DEFAULTS: Quotas = {
  tableReadUnits: 40_000,
  tableWriteUnits: 40_000,
  startReadUnits: 12_000,
  startWriteUnits: 4_000,
  rampMix: 'combined',
  rampFactor: 2,
  rampWindowMs: 30 * 60_000,
  partitionReadUnits: 3_000,
  partitionWriteUnits: 1_000,
  burstSeconds: 1,
  // A new table starts with what its starting rate needs: 4,000 writes / 1,000 per partition.
  partitions: 4,
  // Not documented by AWS ("split-for-heat" acts after "a short period"): an assumption of the model.
  splitAfterMs: 60_000,
};

/** A table warmed to `readUnits`/`writeUnits` (warm throughput, or a previous peak), with as many partitions as that needs. */
export function warmed(base: Quotas, readUnits: number, writeUnits: number): Quotas {
  const partitions = Math.max(
    1,
    Math.ceil(Math.max(writeUnits / base.partitionWriteUnits, readUnits / base.partitionReadUnits)),
  );
  return { ...base, startReadUnits: readUnits, startWriteUnits: writeUnits, rampMix: 'apart', partitions };
}

/** The closed-loop projection's model: one partition per key, no table-level quota or ramp. */
export const PER_KEY: Quotas = {
  ...AWS_DEFAULTS,
  tableReadUnits: Infinity,
  tableWriteUnits: Infinity,
  startReadUnits: Infinity,
  startWriteUnits: Infinity,
  partitions: 'per-key',
  burstSeconds: 1,
};

interface Bucket {
  tokens: number;
  atMs: number;
}

/**
 * Where a partition-key value lies in the key space: 32-bit FNV-1a, then MurmurHash3's finalizer. DynamoDB places a
 * key by "an internal hash function to evenly distribute data items across partitions" (SIMULATION.md); FNV-1a alone
 * is not even in its high bits, which pick the partition here: keys that differ only in their last characters
 * (`ADDR#pool#4#0` ... `#63`) land close together, and 21 of the 128 listing keys of a 64-shard index fell in one of
 * 40 partitions (about 7 at most with an even hash).
 */
export function hashOf(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i += 1) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const SPACE = 2 ** 32;

/** One table or GSI: its partitions (key-space intervals by their start), its buckets and its consumption history. */
class Scope {
  /** Sorted starts of the partitions' key-space intervals. */
  readonly starts: number[];
  readonly hot = new Map<number, { since: number; last: number }>();
  /** Units consumed per whole second, and the running maximum up to each second, per track ('combined', 'read', 'write'). */
  private readonly tracks = new Map<string, { perSecond: number[]; maxUpTo: number[] }>();
  splits = 0;

  constructor(partitions: number) {
    this.starts = Array.from({ length: partitions }, (_, i) => Math.floor((i * SPACE) / partitions));
  }

  partitionOf(hash: number): number {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid]! <= hash) lo = mid;
      else hi = mid - 1;
    }
    return this.starts[lo]!;
  }

  /** Splits a partition in two; the upper half's start, or undefined when it is a single point. */
  split(start: number): number | undefined {
    const i = this.starts.indexOf(start);
    const end = i + 1 < this.starts.length ? this.starts[i + 1]! : SPACE;
    if (end - start < 2) return undefined;
    const mid = Math.floor((start + end) / 2);
    this.starts.splice(i + 1, 0, mid);
    this.splits += 1;
    return mid;
  }

  record(track: string, nowMs: number, units: number): void {
    let t = this.tracks.get(track);
    if (!t) {
      t = { perSecond: [], maxUpTo: [] };
      this.tracks.set(track, t);
    }
    const second = Math.floor(nowMs / 1000);
    while (t.perSecond.length <= second) {
      t.perSecond.push(0);
      t.maxUpTo.push(0);
    }
    t.perSecond[second] = t.perSecond[second]! + units;
    t.maxUpTo[second] = Math.max(t.maxUpTo[second - 1] ?? 0, t.perSecond[second]!);
  }

  /** The highest units of a track in a whole second that ended before `atMs`. */
  peakBefore(track: string, atMs: number): number {
    const t = this.tracks.get(track);
    const second = Math.floor(atMs / 1000) - 1;
    if (!t || second < 0) return 0;
    return t.maxUpTo[Math.min(second, t.maxUpTo.length - 1)] ?? 0;
  }
}

/** A charge: units of a read or write on a partition-key value of a scope ('table', 'GSI1', ...). */
export interface Charge {
  readonly scope: string;
  readonly key: string;
  readonly kind: 'read' | 'write';
  readonly units: number;
}

export class Throughput {
  private readonly scopes = new Map<string, Scope>();
  private readonly buckets = new Map<string, Bucket>();

  constructor(readonly quotas: Quotas) {}

  private scope(name: string): Scope {
    let s = this.scopes.get(name);
    if (!s) {
      s = new Scope(this.quotas.partitions === 'per-key' ? 1 : this.quotas.partitions);
      this.scopes.set(name, s);
    }
    return s;
  }

  /** What the ramp lets a scope sustain now on a track: combined write units, or read or write units apart. */
  rampCapacity(name: string, track: 'combined' | 'read' | 'write', nowMs: number): number {
    const q = this.quotas;
    const peak = this.scope(name).peakBefore(track, nowMs - q.rampWindowMs);
    return Math.max(track === 'read' ? q.startReadUnits : q.startWriteUnits, q.rampFactor * peak);
  }

  /**
   * Takes every charge's units from every bucket it draws on, all or none. Returns undefined when admitted, or the
   * bucket that was short (`partition|write|table|<start>`, `partition|read|GSI1|ADDR#...` per key, `ramp|table` or, warmed,
   * `ramp|write|table`, `quota|write|table`).
   */
  take(charges: readonly Charge[], nowMs: number): string | undefined {
    const q = this.quotas;
    const draws = new Map<string, { units: number; rate: number; cap: number; scope?: string; start?: number }>();
    const draw = (id: string, units: number, rate: number, extra: { scope?: string; start?: number } = {}) => {
      const d = draws.get(id);
      if (d) d.units += units;
      else draws.set(id, { units, rate, cap: rate * q.burstSeconds, ...extra });
    };
    // Ramp units per scope and track ('table|combined', or 'table|read' and 'table|write' when warmed).
    const ramp = new Map<string, { scope: string; track: 'combined' | 'read' | 'write'; units: number }>();
    for (const c of charges) {
      const scope = this.scope(c.scope);
      if (q.partitions === 'per-key') {
        // The older model: separate read and write buckets per key.
        draw(
          `partition|${c.kind}|${c.scope}|${c.key}`,
          c.units,
          c.kind === 'write' ? q.partitionWriteUnits : q.partitionReadUnits,
        );
      } else {
        const start = scope.partitionOf(hashOf(c.key));
        draw(
          `partition|${c.kind}|${c.scope}|${start}`,
          c.units,
          c.kind === 'write' ? q.partitionWriteUnits : q.partitionReadUnits,
          { scope: c.scope, start },
        );
      }
      if (Number.isFinite(q.startWriteUnits)) {
        const track = q.rampMix === 'apart' ? c.kind : 'combined';
        const rampUnits =
          track === 'combined' && c.kind === 'read' ? (c.units * q.startWriteUnits) / q.startReadUnits : c.units;
        const id = `${c.scope}|${track}`;
        const r = ramp.get(id);
        if (r) r.units += rampUnits;
        else ramp.set(id, { scope: c.scope, track, units: rampUnits });
      }
      const quota = c.kind === 'write' ? q.tableWriteUnits : q.tableReadUnits;
      if (Number.isFinite(quota)) draw(`quota|${c.kind}|${c.scope}`, c.units, quota);
    }
    for (const r of ramp.values())
      draw(
        r.track === 'combined' ? `ramp|${r.scope}` : `ramp|${r.track}|${r.scope}`,
        r.units,
        this.rampCapacity(r.scope, r.track, nowMs),
      );
    const refreshed: [string, Bucket][] = [];
    for (const [id, d] of draws) {
      const rate = d.rate / 1000;
      const bucket = this.buckets.get(id) ?? { tokens: d.cap, atMs: nowMs };
      const tokens = Math.min(d.cap, bucket.tokens + (nowMs - bucket.atMs) * rate);
      if (tokens < d.units) {
        if (d.scope !== undefined && d.start !== undefined) this.heat(d.scope, d.start, nowMs);
        return id;
      }
      refreshed.push([id, { tokens: tokens - d.units, atMs: nowMs }]);
    }
    for (const [id, bucket] of refreshed) this.buckets.set(id, bucket);
    for (const r of ramp.values()) this.scope(r.scope).record(r.track, nowMs, r.units);
    return undefined;
  }

  /** A partition refused a call: one refused for `splitAfterMs` (no quiet second between) splits for heat. */
  private heat(scopeName: string, start: number, nowMs: number): void {
    const scope = this.scope(scopeName);
    const h = scope.hot.get(start);
    if (!h || nowMs - h.last > 1000) {
      scope.hot.set(start, { since: nowMs, last: nowMs });
      return;
    }
    h.last = nowMs;
    if (nowMs - h.since < this.quotas.splitAfterMs) return;
    scope.hot.delete(start);
    const upper = scope.split(start);
    // Both halves start from the partition's bucket as it was.
    for (const kind of ['read', 'write']) {
      const old = this.buckets.get(`partition|${kind}|${scopeName}|${start}`);
      if (old && upper !== undefined) this.buckets.set(`partition|${kind}|${scopeName}|${upper}`, { ...old });
    }
  }

  /** Whether `key` lies in the partition of `scope` that starts at `start` now. */
  holds(scope: string, start: number, key: string): boolean {
    return this.scope(scope).partitionOf(hashOf(key)) === start;
  }

  /** Partitions of each scope now, and how many splits made them. */
  partitions(): Record<string, { partitions: number; splits: number }> {
    return Object.fromEntries(
      [...this.scopes]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([name, s]) => [name, { partitions: s.starts.length, splits: s.splits }]),
    );
  }
}
