import { afterEach, describe, expect, it, vi } from 'vitest';
import { IpamMetrics } from '../../shared/adapters/metrics.ts';
import { runReconciler } from '../../shared/adapters/reconcile-runner.ts';
import { owner, reconcilerHarness } from '../support/reconciler.ts';

interface Emf {
  _aws: {
    CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[];
  };
  [key: string]: unknown;
}

/** Captures the EMF lines Powertools writes to stdout while `work` runs. */
async function captureEmf<T>(work: () => Promise<T>): Promise<{ result: T; lines: Emf[] }> {
  const lines: Emf[] = [];
  const write = process.stdout.write.bind(process.stdout);
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    for (const line of text.split('\n')) {
      if (line.includes('"_aws"')) lines.push(JSON.parse(line) as Emf);
    }
    return text.includes('"_aws"') ? true : write(chunk as string, ...(rest as []));
  });
  try {
    return { result: await work(), lines };
  } finally {
    spy.mockRestore();
  }
}

afterEach(() => vi.restoreAllMocks());

describe('Function: runReconciler', () => {
  it('publishes utilization per range (idle ones too) and repairs by kind as EMF, and logs a summary line', async () => {
    // Prepare: one busy range, one idle range, and one claim expired long ago.
    const h = await reconcilerHarness();
    await h.pool('p', [
      { cidr: '10.0.0.0/29', name: 'busy' },
      { cidr: '10.0.1.0/30', name: 'idle' },
    ]);
    await h.claim('p', { name: 'held', owner: owner('a'), addresses: ['10.0.0.1'] });
    await h.claim('p', { name: 'gone', owner: owner('b'), addresses: ['10.0.0.2'], ttlSeconds: 60 });
    h.clock.advance(10 * 60_000);
    const logs: Record<string, unknown>[] = [];
    const metrics = IpamMetrics.create({ namespace: 'ipam-test', serviceName: 'ipam' });
    // Act
    const { result, lines } = await captureEmf(() =>
      runReconciler(h.api.container.deps, h.api.container.config.reconciler, 60_000, {
        metrics,
        log: (e) => logs.push(e),
      }),
    );
    // Assess: the summary.
    expect(result).toMatchObject({ complete: true, repairs: { ClaimExpired: 1 }, ranges: 2, errors: 0 });
    // Utilization, one EMF document per range with its Pool and Range dimensions.
    const usage = lines.filter((l) => l._aws.CloudWatchMetrics[0]!.Metrics.some((m) => m.Name === 'RangeSize'));
    expect(usage.map((l) => [l.Pool, l.Range, l.RangeSize, l.RangeUsed, l.RangeFree])).toEqual([
      ['p', 'busy', 6, 1, 5],
      ['p', 'idle', 2, 0, 2],
    ]);
    expect(usage[0]!._aws.CloudWatchMetrics[0]!).toMatchObject({
      Namespace: 'ipam-test',
      Dimensions: [['service', 'Pool', 'Range']],
    });
    // Repairs by kind, zeros included.
    const repairs = Object.fromEntries(lines.filter((l) => 'Repairs' in l).map((l) => [l.Kind, l.Repairs]));
    expect(repairs).toMatchObject({ ClaimExpired: 1, LeaseOrphaned: 0, RangeFinalized: 0, BitmapLeakCleared: 0 });
    expect(lines.find((l) => 'ReconcileIncomplete' in l)).toMatchObject({ ReconcileIncomplete: 0, ReconcileErrors: 0 });
    // Structured logs: a line per range and the run summary.
    expect(logs).toContainEqual(
      expect.objectContaining({ message: 'range utilization', pool: 'p', range: 'idle', size: 2, used: 0, free: 2 }),
    );
    expect(logs.at(-1)).toMatchObject({ level: 'info', message: 'reconcile run', complete: true });
  });

  it("publishes the address history's lag per pool as HistoryLag, in milliseconds: a pending change's age, 0 for an idle pool", async () => {
    // Prepare: p's stream function failed to record a change stamped 1.234 s ago; q's history is idle (marked long ago)
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/29']);
    await h.pool('q', ['10.0.1.0/29']);
    await h.api.container.stores.history.advanceMark('p', h.clock.t - 60_000);
    await h.api.container.stores.history.notePending(
      'p',
      h.clock.t - 1_234,
      '10.0.0.1',
      `${new Date(h.clock.t - 9_000).toISOString()}#uid-1`,
    );
    await h.api.container.stores.history.advanceMark('q', h.clock.t - 3_600_000);
    const logs: Record<string, unknown>[] = [];
    const metrics = IpamMetrics.create({ namespace: 'ipam-test', serviceName: 'ipam' });
    // Act
    const { result, lines } = await captureEmf(() =>
      runReconciler(h.api.container.deps, h.api.container.config.reconciler, 60_000, {
        metrics,
        log: (e) => logs.push(e),
      }),
    );
    // Assess
    const lag = lines.filter((l) => 'HistoryLag' in l);
    expect(lag.map((l) => [l.Pool, l.HistoryLag])).toEqual([
      ['p', 1_234],
      ['q', 0],
    ]);
    expect(lag[0]!._aws.CloudWatchMetrics[0]!).toMatchObject({
      Dimensions: [['service', 'Pool']],
      Metrics: [{ Name: 'HistoryLag', Unit: 'Milliseconds' }],
    });
    expect(result.historyLagMs).toEqual({ p: 1_234, q: 0 });
  });

  it('stops the margin before the Lambda deadline', async () => {
    const h = await reconcilerHarness();
    await h.pool('p', ['10.0.0.0/24']);
    const logs: Record<string, unknown>[] = [];
    // 4 s left and a 5 s margin: no time at all.
    const result = await runReconciler(
      h.api.container.deps,
      { ...h.api.container.config.reconciler, deadlineMarginMs: 5_000 },
      4_000,
      { log: (e) => logs.push(e) },
    );
    expect(result).toMatchObject({ complete: false, stoppedIn: 'expiry', ranges: 0 });
  });
});

describe('Class: IpamMetrics', () => {
  it('counts allocations, errors and collisions by scope for the API', async () => {
    const metrics = IpamMetrics.create({ namespace: 'ipam-test', serviceName: 'api' });
    const { lines } = await captureEmf(async () => {
      metrics.allocated('dynamic');
      metrics.failed('static', 'AlreadyAllocated');
      metrics.collided('dynamic', 3);
      metrics.collided('dynamic', 0);
      metrics.flush();
    });
    expect(lines.map((l) => ({ ...l, _aws: undefined }))).toEqual([
      { _aws: undefined, service: 'api', Scope: 'dynamic', Allocations: 1 },
      { _aws: undefined, service: 'api', Scope: 'static', Code: 'AlreadyAllocated', AllocationErrors: 1 },
      { _aws: undefined, service: 'api', Scope: 'dynamic', Collisions: 3 },
    ]);
  });
});
