// Over 300 lines: one target's reads, request batching, retries and InvalidChangeBatch mapping, which share Route 53's limits and the one-change-a-name rule.
import {
  ChangeResourceRecordSetsCommand,
  ListResourceRecordSetsCommand,
  type Change,
  type ListResourceRecordSetsCommandInput,
  type ResourceRecordSet,
  type Route53Client,
} from '@aws-sdk/client-route-53';
import type { ChangeOutcome, DnsTarget } from '../../core/dns/ports.ts';
import type { NameChange, RecordSet } from '../../core/dns/records.ts';

/**
 * Route 53's published maximums on one ChangeResourceRecordSets request (docs/dns.md cites them): ResourceRecord
 * elements and characters of all Value elements, an UPSERT counting twice in both; and the request rate this target
 * keeps to (ChangeResourceRecordSets, per account: the figure Route 53 has long published; its newer token buckets
 * allow more, so the pace is a floor that holds under either).
 */
export const ROUTE53_LIMITS = {
  recordsPerRequest: 1_000,
  valueCharactersPerRequest: 32_000,
  changeRequestsPerSecond: 5,
} as const;

/** Time and jitter, injected so tests neither wait nor depend on chance. */
export interface Route53Time {
  nowMs(): number;
  sleep(ms: number): Promise<void>;
  /** A number in [0, 1). */
  random(): number;
}

export const realTime: Route53Time = {
  nowMs: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  random: () => Math.random(),
};

/**
 * Spaces ChangeResourceRecordSets requests at most `perSecond` a second. One per container, shared by every Route 53
 * target it makes: the limit is the account's, not a zone's.
 */
export class RequestPace {
  private next = -Infinity;
  constructor(
    private readonly time: Route53Time,
    private readonly perSecond: number = ROUTE53_LIMITS.changeRequestsPerSecond,
  ) {}

  async take(): Promise<void> {
    const now = this.time.nowMs();
    const wait = this.next - now;
    this.next = Math.max(now, this.next) + 1000 / this.perSecond;
    if (wait > 0) await this.time.sleep(wait);
  }
}

export interface Route53Options {
  readonly client: Pick<Route53Client, 'send'>;
  /** The hosted zone of the pool's forward zone. */
  readonly hostedZoneId: string;
  /** Reverse zone name -> hosted zone id. */
  readonly reverseZoneIds?: Readonly<Record<string, string>>;
  readonly time?: Route53Time;
  readonly pace?: RequestPace;
  /** Tries of one request before its changes fail (throttling, PriorRequestNotComplete, server errors). */
  readonly maxAttempts?: number;
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
}

/** Route 53's answers worth trying again: its throttling (code Throttling), a change still in progress, a 5xx. */
function retryable(error: unknown): boolean {
  const e = error as { name?: string; $fault?: string; $retryable?: unknown };
  return (
    e?.name === 'Throttling' ||
    e?.name === 'ThrottlingException' ||
    e?.name === 'PriorRequestNotComplete' ||
    e?.$fault === 'server' ||
    e?.$retryable !== undefined
  );
}

/** The names an InvalidChangeBatch's messages name, and whether each says the name moved since it was read. */
function refusedNames(error: { messages?: string[]; message?: string }): Map<string, boolean> {
  const out = new Map<string, boolean>();
  for (const m of error.messages?.length ? error.messages : [error.message ?? '']) {
    for (const [, name] of m.matchAll(/name='([^']+)'/g)) {
      const moved = /already exists|was not found|do not match/.test(m);
      const key = absolute(name!);
      out.set(key, (out.get(key) ?? true) && moved);
    }
  }
  return out;
}

const absolute = (name: string) => `${name.toLowerCase().replace(/\.$/, '')}.`;
/** TXT values travel quoted, in strings of at most 255 characters, `"` and `\` escaped. */
const quote = (text: string) =>
  (text.match(/[\s\S]{1,255}/g) ?? ['']).map((s) => `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`).join(' ');
const unquote = (value: string) =>
  [...value.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!.replace(/\\(.)/g, '$1')).join('') || value;

function recordSetOf(s: ResourceRecordSet): RecordSet {
  const type = s.Type!;
  const values = s.AliasTarget
    ? [`alias:${s.AliasTarget.DNSName}`]
    : (s.ResourceRecords ?? []).map((r) => (type === 'TXT' ? unquote(r.Value!) : r.Value!));
  return {
    name: absolute(s.Name!),
    type,
    ttl: s.TTL ?? 0,
    values: type === 'PTR' ? values.map(absolute) : values,
  };
}

function changesOf(change: NameChange): Change[] {
  const element = (action: 'DELETE' | 'CREATE', s: RecordSet): Change => ({
    Action: action,
    ResourceRecordSet: {
      Name: change.name,
      Type: s.type as ResourceRecordSet['Type'],
      TTL: s.ttl,
      ResourceRecords: s.values.map((v) => ({ Value: s.type === 'TXT' ? quote(v) : v })),
    },
  });
  // Exact DELETEs of what was read, then CREATEs: Route 53 refuses the whole batch when a deleted set differs or a
  // created one exists, so a name written meanwhile is never overwritten (no UPSERT, which would overwrite).
  return [...change.before.map((s) => element('DELETE', s)), ...change.after.map((s) => element('CREATE', s))];
}

/** What one change weighs against a request's limits (an UPSERT counts twice; this target sends none). */
function weightOf(changes: readonly Change[]): { records: number; chars: number } {
  let records = 0;
  let chars = 0;
  for (const c of changes) {
    const times = c.Action === 'UPSERT' ? 2 : 1;
    const rr = c.ResourceRecordSet?.ResourceRecords ?? [];
    records += times * rr.length;
    chars += times * rr.reduce((n, r) => n + (r.Value?.length ?? 0), 0);
  }
  return { records, chars };
}

interface Pending {
  readonly index: number;
  readonly change: NameChange;
  readonly elements: Change[];
}

/**
 * A pool's zones in Route 53 (a private or public hosted zone by id). Reads list from a name; changes go in
 * ChangeResourceRecordSets batches within Route 53's limits a request, paced to its request rate, throttling retried
 * with jittered exponential back-off. A batch holds at most one change of a name; a name's next change waits until
 * its previous one applied, and is not sent at all when that one failed or was stale (it was planned on top of it).
 */
export class Route53Target implements DnsTarget {
  private readonly time: Route53Time;
  private readonly pace: RequestPace;

  constructor(private readonly options: Route53Options) {
    this.time = options.time ?? realTime;
    this.pace = options.pace ?? new RequestPace(this.time);
  }

  private zoneId(zone: string): string {
    const id = this.options.reverseZoneIds?.[zone] ?? (zone.endsWith('.arpa.') ? undefined : this.options.hostedZoneId);
    if (!id) throw new Error(`The Route 53 target has no hosted zone id for ${zone} (set reverseZoneIds)`);
    return id;
  }

  async read(zone: string, names: readonly string[]): Promise<ReadonlyMap<string, readonly RecordSet[]>> {
    const id = this.zoneId(zone);
    const out = new Map<string, readonly RecordSet[]>();
    for (const name of names) {
      const sets: RecordSet[] = [];
      let start: Partial<ListResourceRecordSetsCommandInput> = { StartRecordName: name };
      // Listed in name order from `name`: its sets come first; the page ends, or another name begins.
      for (;;) {
        const page = await this.retrying(() =>
          this.options.client.send(new ListResourceRecordSetsCommand({ HostedZoneId: id, ...start, MaxItems: 100 })),
        );
        const listed = (page.ResourceRecordSets ?? []).map(recordSetOf);
        sets.push(...listed.filter((s) => s.name === name));
        if (!page.IsTruncated || listed.some((s) => s.name !== name) || absolute(page.NextRecordName ?? '') !== name)
          break;
        start = nextStart(page);
      }
      out.set(name, sets);
    }
    return out;
  }

  async list(zone: string): Promise<readonly RecordSet[]> {
    const id = this.zoneId(zone);
    const sets: RecordSet[] = [];
    let start: Partial<ListResourceRecordSetsCommandInput> = {};
    for (;;) {
      const page = await this.retrying(() =>
        this.options.client.send(new ListResourceRecordSetsCommand({ HostedZoneId: id, MaxItems: 300, ...start })),
      );
      sets.push(...(page.ResourceRecordSets ?? []).map(recordSetOf));
      if (!page.IsTruncated) return sets;
      start = nextStart(page);
    }
  }

  async change(zone: string, changes: readonly NameChange[]): Promise<readonly ChangeOutcome[]> {
    const outcomes: (ChangeOutcome | undefined)[] = changes.map(() => undefined);
    let id: string;
    try {
      id = this.zoneId(zone);
    } catch (error) {
      return changes.map(() => ({ kind: 'failed', error }));
    }
    // Each name's changes in the order given; a round sends the head of every name's queue.
    const queues = new Map<string, Pending[]>();
    changes.forEach((change, index) => {
      const queue = queues.get(change.name) ?? [];
      queues.set(change.name, queue);
      queue.push({ index, change, elements: changesOf(change) });
    });
    while (queues.size > 0) {
      const heads = [...queues.values()].map((q) => q[0]!);
      for (const request of packed(heads)) await this.sendBatch(id, request, outcomes);
      for (const [name, queue] of queues) {
        const head = queue[0]!;
        const outcome = outcomes[head.index];
        if (outcome === undefined) continue;
        queue.shift();
        if (outcome.kind !== 'applied') {
          // Planned on top of a change that did not apply: not sent.
          const error = new Error(`not sent: an earlier change of ${name} did not apply`);
          for (const later of queue)
            outcomes[later.index] = outcome.kind === 'stale' ? { kind: 'stale' } : { kind: 'failed', error };
          queue.length = 0;
        }
        if (queue.length === 0) queues.delete(name);
      }
    }
    return outcomes.map((o) => o!);
  }

  /**
   * Sends one request's changes. A refused batch (InvalidChangeBatch, applied not at all) answers stale for the names
   * its messages say moved, failed for names it refuses otherwise, and the rest are sent again without them; when
   * its messages name none of them, each change is tried alone.
   */
  private async sendBatch(id: string, batch: Pending[], outcomes: (ChangeOutcome | undefined)[]): Promise<void> {
    try {
      await this.retrying(async () => {
        await this.pace.take();
        return this.options.client.send(
          new ChangeResourceRecordSetsCommand({
            HostedZoneId: id,
            ChangeBatch: { Changes: batch.flatMap((p) => p.elements) },
          }),
        );
      });
      for (const p of batch) outcomes[p.index] = { kind: 'applied' };
    } catch (error) {
      if ((error as { name?: string }).name !== 'InvalidChangeBatch') {
        for (const p of batch) outcomes[p.index] = { kind: 'failed', error };
        return;
      }
      const refused = refusedNames(error as { messages?: string[]; message?: string });
      const named = batch.filter((p) => refused.has(p.change.name));
      if (named.length === 0) {
        if (batch.length === 1) outcomes[batch[0]!.index] = { kind: 'failed', error };
        else for (const p of batch) await this.sendBatch(id, [p], outcomes);
        return;
      }
      for (const p of named)
        outcomes[p.index] = refused.get(p.change.name) ? { kind: 'stale' } : { kind: 'failed', error };
      const rest = batch.filter((p) => !refused.has(p.change.name));
      if (rest.length > 0) await this.sendBatch(id, rest, outcomes);
    }
  }

  /** Runs `call`, trying again on throttling with full-jitter exponential back-off, up to maxAttempts tries. */
  private async retrying<T>(call: () => Promise<T>): Promise<T> {
    const attempts = this.options.maxAttempts ?? 8;
    const base = this.options.baseDelayMs ?? 100;
    const max = this.options.maxDelayMs ?? 5_000;
    for (let attempt = 1; ; attempt++) {
      try {
        return await call();
      } catch (error) {
        if (!retryable(error) || attempt >= attempts) throw error;
        await this.time.sleep(Math.floor(this.time.random() * Math.min(max, base * 2 ** (attempt - 1))));
      }
    }
  }
}

function nextStart(page: {
  NextRecordName?: string;
  NextRecordType?: string;
  NextRecordIdentifier?: string;
}): Partial<ListResourceRecordSetsCommandInput> {
  return {
    StartRecordName: page.NextRecordName,
    StartRecordType: page.NextRecordType as ListResourceRecordSetsCommandInput['StartRecordType'],
    ...(page.NextRecordIdentifier ? { StartRecordIdentifier: page.NextRecordIdentifier } : {}),
  };
}

/** The changes in requests within Route 53's limits, in order (a change alone over them still goes, to be refused). */
function packed(pending: readonly Pending[]): Pending[][] {
  const requests: Pending[][] = [];
  let current: Pending[] = [];
  let records = 0;
  let chars = 0;
  for (const p of pending) {
    const w = weightOf(p.elements);
    if (
      current.length > 0 &&
      (records + w.records > ROUTE53_LIMITS.recordsPerRequest ||
        chars + w.chars > ROUTE53_LIMITS.valueCharactersPerRequest)
    ) {
      requests.push(current);
      current = [];
      records = 0;
      chars = 0;
    }
    current.push(p);
    records += w.records;
    chars += w.chars;
  }
  if (current.length > 0) requests.push(current);
  return requests;
}
