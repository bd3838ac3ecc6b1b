import { createSocket } from 'node:dgram';
import { execFileSync } from 'node:child_process';
import type { ChangeOutcome, DnsTarget } from '../../shared/core/dns/ports.ts';
import type { NameChange, RecordSet } from '../../shared/core/dns/records.ts';
import { MemoryZones } from '../../shared/adapters/dns/memory-zone.ts';
import { wire, type WireRecord } from '../../shared/adapters/dns/wire.ts';
import { reconcilerHarness } from '../../tests/support/reconciler.ts';
import { memoryStreamEngine } from '../../tests/support/lease-stream.ts';
import { mirrorOf } from '../../tests/support/legacy.ts';
import { rfc2136TargetOf, startBind } from '../../tests/support/bind.ts';
import { withinTokenBucket } from '../lib/report.ts';
import { percentile, round, type RunContext, type Scenario, type ScenarioResult } from '../lib/results.ts';

const ZONE = 'pods.example.internal.';
const REVERSE = '0.0.10.in-addr.arpa.';
/** Route 53's published limits: API requests per second per account, and records per ChangeResourceRecordSets. */
export const ROUTE53_REQUESTS_PER_SECOND = 5;
export const ROUTE53_RECORDS_PER_CHANGE = 1000;
/** Lambda polls a stream shard about 4 times a second. */
const POLL_MS = 250;

/**
 * A model of Route 53's request limits in front of memory zones, not Route 53: every call waits for a token of a
 * bucket refilled at 5 a second holding one second of them (an adapter that retries a throttled call with back-off
 * gets no more through than this). A read of N names costs N requests (ListResourceRecordSets from each name); a
 * change call costs one request and is refused beyond 1,000 records (each value deleted or created counts one).
 */
export class Route53Model implements DnsTarget {
  readonly zones = new MemoryZones();
  readonly counts = { readRequests: 0, changeRequests: 0, changedNames: 0, changedRecords: 0, listRequests: 0 };
  private tokens = ROUTE53_REQUESTS_PER_SECOND;
  private at = performance.now();
  private queue: Promise<void> = Promise.resolve();

  /** Waits until `n` requests may go, one after another (a shared account limit). */
  private take(n: number): Promise<void> {
    const turn = this.queue.then(async () => {
      for (let i = 0; i < n; i++) {
        for (;;) {
          const now = performance.now();
          this.tokens = Math.min(
            ROUTE53_REQUESTS_PER_SECOND,
            this.tokens + ((now - this.at) / 1000) * ROUTE53_REQUESTS_PER_SECOND,
          );
          this.at = now;
          if (this.tokens >= 1) break;
          // The time until the next token: the limiter's own clock, not a synchronization.
          await new Promise((r) => setTimeout(r, ((1 - this.tokens) / ROUTE53_REQUESTS_PER_SECOND) * 1000));
        }
        this.tokens -= 1;
      }
    });
    this.queue = turn;
    return turn;
  }

  async read(zone: string, names: readonly string[]): Promise<ReadonlyMap<string, readonly RecordSet[]>> {
    this.counts.readRequests += names.length;
    await this.take(names.length);
    return this.zones.read(zone, names);
  }

  async change(zone: string, changes: readonly NameChange[]): Promise<readonly ChangeOutcome[]> {
    const records = changes.reduce((n, c) => n + [...c.before, ...c.after].reduce((m, s) => m + s.values.length, 0), 0);
    this.counts.changeRequests += 1;
    await this.take(1);
    if (records > ROUTE53_RECORDS_PER_CHANGE)
      return changes.map(() => ({ kind: 'failed', error: new Error('InvalidChangeBatch: too many records') }));
    this.counts.changedNames += changes.length;
    this.counts.changedRecords += records;
    return this.zones.change(zone, changes);
  }

  async list(zone: string): Promise<readonly RecordSet[]> {
    this.counts.listRequests += 1;
    await this.take(1);
    return this.zones.list(zone);
  }
}

/** A service that claims addresses, with the stream function fed every `POLL_MS` from the table's stream. */
async function serviceOn(target: DnsTarget, rfc2136: Record<string, unknown>) {
  const streams = memoryStreamEngine();
  const h = await reconcilerHarness({ engine: streams.engine, overrides: { dnsTargets: () => target } });
  const stream = streams.stream();
  const created = await h.api.call('POST', '/v1/pools', {
    name: 'pods',
    dns: { zone: ZONE, reverse: true, target: { rfc2136 } },
  });
  if (created.status !== 201) throw new Error(`pool: ${created.status}`);
  await h.api.call('POST', '/v1/pools/pods/ranges', { cidr: '10.0.0.0/24' });
  const handler = mirrorOf(h.api.container);
  const claim = (i: number) =>
    h.claim('pods', { name: `web-${i}`, owner: { kind: 'Pod', name: `web-${i}`, uid: `u-${i}` } });
  return { h, stream, handler, claim };
}

const RFC2136_UNUSED = { server: '127.0.0.1', port: 53, keyName: 'ipam', secretFrom: 'env:UNUSED' };

/** Names changed per second through the stream function when the target is the Route 53 model. */
async function throughputAtRoute53Limit(claims: number): Promise<Record<string, unknown>> {
  const model = new Route53Model();
  const { stream, handler, claim } = await serviceOn(model, RFC2136_UNUSED);
  for (let i = 0; i < claims; i++) await claim(i);
  const start = performance.now();
  const { failed, records } = await stream.drain(handler, { retries: 5 });
  const seconds = (performance.now() - start) / 1000;
  const requests = model.counts.readRequests + model.counts.changeRequests + model.counts.listRequests;
  const published = (await model.zones.list(ZONE)).filter((s) => s.type === 'A').length;
  return {
    case: 'throughput',
    target: 'Route 53 model (memory zones, 5 requests/s, 1,000 records a change)',
    claims,
    streamRecords: records.length,
    namesChanged: model.counts.changedNames,
    seconds: round(seconds, 2),
    namesPerSecond: round(model.counts.changedNames / seconds, 2),
    requests,
    requestsPerSecond: round(requests / seconds, 2),
    readRequests: model.counts.readRequests,
    changeRequests: model.counts.changeRequests,
    namesPerChangeRequest: round(model.counts.changedNames / Math.max(1, model.counts.changeRequests), 2),
    recordsPerChangeRequest: round(model.counts.changedRecords / Math.max(1, model.counts.changeRequests), 2),
    failedRecords: failed.length,
    published,
  };
}

/** One UDP query; the answers' values of `type` at `name`. */
function query(port: number, name: string, type: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const socket = createSocket('udp4');
    const id = Math.floor(Math.random() * 65_536);
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error(`no answer for ${name}`));
    }, 2000);
    socket.once('message', (message: Buffer) => {
      clearTimeout(timer);
      socket.close();
      const answers = (wire.decode(message).answers ?? []) as WireRecord[];
      resolve(answers.filter((a) => a.type === type).map((a) => String(a.data)));
    });
    socket.send(
      wire.encode({ type: 'query', id, flags: 0, questions: [{ name, type: type as 'A' }] }),
      port,
      '127.0.0.1',
    );
  });
}

const bindAvailable = () => {
  try {
    execFileSync('named', ['-v'], { stdio: 'ignore' });
    execFileSync('tsig-keygen', ['-h'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

/**
 * The lag from a claim's 201 to its name answering, one claim at a time: claim through the HTTP handler on the
 * memory engine, its stream records delivered to the stream function by a poller every 250 ms, the name written by
 * RFC 2136 to a real BIND 9 (or, without BIND on the machine, the memory zones), queried over UDP every 5 ms.
 */
async function lagToResolvable(claims: number): Promise<{ row: Record<string, unknown>; note: string }> {
  const bind = bindAvailable() ? await startBind([ZONE, REVERSE]) : undefined;
  try {
    const zones = new MemoryZones();
    const target: DnsTarget = bind ? rfc2136TargetOf(bind) : zones;
    const rfc2136 = bind
      ? { server: '127.0.0.1', port: bind.port, keyName: bind.keyName, secretFrom: 'env:UNUSED' }
      : RFC2136_UNUSED;
    const { stream, handler, claim } = await serviceOn(target, rfc2136);
    let stop = false;
    const poller = (async () => {
      while (!stop) {
        await stream.drain(handler, { retries: 5 });
        await new Promise((r) => setTimeout(r, POLL_MS)); // the event source mapping's poll interval
      }
    })();
    const lags: number[] = [];
    try {
      for (let i = 0; i < claims; i++) {
        const body = await claim(i);
        const t0 = performance.now();
        const name = `web-${i}.${ZONE}`;
        const deadline = t0 + 10_000;
        for (;;) {
          const values = bind
            ? await query(bind.port, name, 'A')
            : (zones.lookup(name).find((s) => s.type === 'A')?.values ?? []);
          if (values.includes(body.addresses[0]!.address)) break;
          if (performance.now() > deadline) throw new Error(`${name} did not resolve within 10 s`);
          await new Promise((r) => setTimeout(r, 5)); // the query's poll interval
        }
        lags.push(performance.now() - t0);
      }
    } finally {
      stop = true;
      await poller;
    }
    const target_ = bind ? 'BIND 9 (RFC 2136, TSIG), queried over UDP' : 'memory zones (no BIND on this machine)';
    return {
      row: {
        case: 'lag',
        target: target_,
        claims,
        p50Ms: round(percentile(lags, 50), 1),
        p99Ms: round(percentile(lags, 99), 1),
        maxMs: round(Math.max(...lags), 1),
      },
      note: `Lag: ${claims} claims one after another on the memory engine, the stream delivered every ${POLL_MS} ms (Lambda's poll of a shard; DynamoDB Streams' own delay in AWS is not in it), the name written to ${target_}.`,
    };
  } finally {
    await bind?.stop();
  }
}

/**
 * DNS through the stream function: names changed per second at Route 53's request limit (a model of its limits,
 * not Route 53), and the lag from a claim to its name answering (a real BIND 9 where the machine has one).
 */
export const dnsScenario: Scenario = {
  name: 'dns',
  title: 'DNS records',
  async run(ctx: RunContext): Promise<ScenarioResult> {
    const t0 = performance.now();
    const claims = ctx.quick ? 6 : 40;
    const lagClaims = ctx.quick ? 10 : 100;
    const rows: Record<string, unknown>[] = [];
    const failures: string[] = [];
    const tp = await throughputAtRoute53Limit(claims);
    rows.push(tp);
    ctx.log(`dns throughput: ${String(tp.namesPerSecond)} names/s, ${String(tp.requestsPerSecond)} requests/s`);
    if (tp.published !== claims) failures.push(`throughput: ${String(tp.published)} of ${claims} names published`);
    const [requests, seconds] = [tp.requests as number, tp.seconds as number];
    if (!withinTokenBucket({ requests, seconds, perSecond: ROUTE53_REQUESTS_PER_SECOND }))
      failures.push(`throughput: ${String(tp.requestsPerSecond)} requests/s, over the model's limit`);
    const lag = await lagToResolvable(lagClaims);
    rows.push(lag.row);
    ctx.log(`dns lag: p50 ${String(lag.row.p50Ms)} ms, p99 ${String(lag.row.p99Ms)} ms (${String(lag.row.target)})`);
    return {
      name: 'dns',
      title: 'DNS records',
      status: failures.length ? 'failed' : 'ok',
      failures,
      notes: [
        `Throughput: ${claims} claims with reverse (a forward name and a PTR each) made first, then their stream records delivered to the stream function in batches as the deployed mapping does; the target is a model of Route 53's limits (${ROUTE53_REQUESTS_PER_SECOND} requests a second per account, ${ROUTE53_RECORDS_PER_CHANGE} records a change request) in front of memory zones, not Route 53. A read of a name costs a request, as ListResourceRecordSets from the name would.`,
        lag.note,
      ],
      parameters: { claims, lagClaims, pollMs: POLL_MS, requestsPerSecond: ROUTE53_REQUESTS_PER_SECOND },
      rows,
      seconds: round((performance.now() - t0) / 1000, 1),
      charts: [],
    };
  },
};
