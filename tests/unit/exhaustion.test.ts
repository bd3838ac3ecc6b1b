import { describe, expect, it } from 'vitest';
import { exhaustionCases } from '../cases/exhaustion.cases.ts';
import { memoryEngine } from '../support/engines.ts';
import { crossingsBetween, levelOf, type Crossing } from '../../shared/core/occupancy/exhaustion.ts';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  answerLocally,
  CROSSING_DETAIL_TYPE,
  CROSSING_SOURCE,
  EventBridgeCrossings,
} from '../../shared/adapters/crossing-events.ts';
import { recordAwsCalls } from '../../shared/adapters/aws-call-log.ts';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { run } from '../../cli/program.ts';
import { testApi } from '../support/api.ts';
import { fakeIo } from '../support/cli.ts';
import { owner } from '../support/fakes.ts';
import { cliFetch } from '../support/in-process-fetch.ts';
import { entrySize, putEventsProblems } from '../support/eventbridge-model.ts';

// On the memory engine: the same cases tests/int/exhaustion.int.test.ts runs on DynamoDB Local.
exhaustionCases(memoryEngine);

describe('Function: levelOf and crossingsBetween (issue 37)', () => {
  const u = (free: bigint, size = 100n) => ({ size, free });

  it('is below a threshold only strictly under it, and full only at no address free', () => {
    expect([u(21n), u(20n), u(19n), u(5n), u(4n), u(1n), u(0n)].map((x) => levelOf(x, [20, 5]))).toEqual([
      0, 0, 1, 1, 2, 2, 3,
    ]);
    expect(levelOf(u(0n, 0n), [20, 5])).toBe(0);
    expect(levelOf(u(2n, 3n), [66.67])).toBe(1);
  });

  it('names every threshold passed between two levels, in the order passed, each way', () => {
    expect(crossingsBetween(0, 3, [20, 5])).toEqual([
      { direction: 'below', threshold: 20 },
      { direction: 'below', threshold: 5 },
      { direction: 'below', threshold: 'full' },
    ]);
    expect(crossingsBetween(3, 1, [20, 5])).toEqual([
      { direction: 'recovered', threshold: 'full' },
      { direction: 'recovered', threshold: 5 },
    ]);
    expect(crossingsBetween(2, 2, [20, 5])).toEqual([]);
  });
});

describe('Class: EventBridgeCrossings on the local stack (issue 37)', () => {
  it('builds one PutEvents of the documented source, detail-type and detail, recorded for the IAM check, and sends nothing', async () => {
    // Prepare
    const dir = mkdtempSync(join(tmpdir(), 'ipam-crossings-'));
    const lines: Record<string, unknown>[] = [];
    const client = new EventBridgeClient({
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      endpoint: 'http://127.0.0.1:9',
    });
    recordAwsCalls(client, 'events', { file: join(dir, 'calls.jsonl'), functionName: 'ipam-local-mirror' });
    answerLocally(client, (entry) => lines.push(entry));
    const crossing: Crossing = {
      pool: 'p',
      family: 'IPv4',
      direction: 'below',
      threshold: 5,
      size: 30n,
      free: 1n,
      freePercent: 3.33,
      time: '2035-01-01T00:00:00.000Z',
    };
    const errors: unknown[] = [];
    try {
      // Act
      await new EventBridgeCrossings(client, 'local', (e) => errors.push(e)).announce([
        crossing,
        { ...crossing, threshold: 'full', free: 0n, freePercent: 0 },
      ]);
      // Assess
      expect(errors).toEqual([]);
      expect(
        readFileSync(join(dir, 'calls.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as unknown),
      ).toEqual([{ function: 'ipam-local-mirror', action: 'events:PutEvents', eventBus: 'default' }]);
      expect(lines.map((l) => [l.source, l.detailType, l.detail])).toEqual([
        [
          CROSSING_SOURCE,
          CROSSING_DETAIL_TYPE,
          {
            stage: 'local',
            pool: 'p',
            family: 'IPv4',
            direction: 'below',
            threshold: 5,
            freePercent: 3.33,
            free: '1',
            size: '30',
            time: '2035-01-01T00:00:00.000Z',
          },
        ],
        [
          CROSSING_SOURCE,
          CROSSING_DETAIL_TYPE,
          {
            stage: 'local',
            pool: 'p',
            family: 'IPv4',
            direction: 'below',
            threshold: 'full',
            freePercent: 0,
            free: '0',
            size: '30',
            time: '2035-01-01T00:00:00.000Z',
          },
        ],
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      client.destroy();
    }
  });
});

describe("The crossings' PutEvents against EventBridge's API model (issue 37)", () => {
  const widest = 'p'.repeat(63);
  // The widest crossings a pool can have: a 63-character name, an IPv6 space of 2^128 (39-digit counts), two-decimal
  // percentages, and a 48-character stage (the longest whose function names fit Lambda's 64).
  const crossings: Crossing[] = Array.from({ length: 11 }, (_, i) => ({
    pool: widest,
    family: 'IPv6',
    direction: i % 2 ? 'recovered' : 'below',
    threshold: 99.99,
    size: 2n ** 128n,
    free: 2n ** 128n - 1n,
    freePercent: 99.99,
    time: '2035-12-31T23:59:59.999Z',
  }));
  const sent = async (list: readonly Crossing[]) => {
    const inputs: Record<string, unknown>[] = [];
    const client = {
      send: async (command: { input: unknown }) => (
        inputs.push(command.input as Record<string, unknown>),
        { $metadata: {}, FailedEntryCount: 0 }
      ),
    };
    await new EventBridgeCrossings(client as never, 's'.repeat(48), () => undefined).announce(list);
    return inputs;
  };

  it("sends requests of the model's members and types, within its limits, at the widest input (11 crossings: 10 + 1)", async () => {
    // Act
    const inputs = await sent(crossings);
    // Assess
    expect(inputs.map((i) => (i.Entries as unknown[]).length)).toEqual([10, 1]);
    expect(inputs.map(putEventsProblems)).toEqual([[], []]);
    const entries = inputs[0]!.Entries as Record<string, unknown>[];
    expect(entrySize(entries[0]!)).toBeLessThan(1024);
    expect(Object.keys(entries[0]!).sort()).toEqual(['Detail', 'DetailType', 'EventBusName', 'Source', 'Time']);
  });

  it('catches a planted mistake: a misspelt member, a wrong type, a too-long field, an entry over 256 KB, too many entries', async () => {
    // Prepare
    const [request] = await sent(crossings.slice(0, 1));
    const entry = (request!.Entries as Record<string, unknown>[])[0]!;
    const withEntry = (changed: Record<string, unknown>) => ({ ...request, Entries: [changed] });
    const { DetailType, ...withoutDetailType } = entry;
    // Act
    const found = {
      misspelt: putEventsProblems(withEntry({ ...withoutDetailType, DetailTyp: DetailType })),
      requestMember: putEventsProblems({ Entrys: request!.Entries }),
      timeAsText: putEventsProblems(withEntry({ ...entry, Time: '2035-12-31T23:59:59.999Z' })),
      resourcesNotList: putEventsProblems(
        withEntry({ ...entry, Resources: 'arn:aws:ec2:us-east-1:123456789012:vpc/vpc-1' }),
      ),
      longDetailType: putEventsProblems(withEntry({ ...entry, DetailType: 'd'.repeat(129) })),
      longBus: putEventsProblems(withEntry({ ...entry, EventBusName: 'b'.repeat(1601) })),
      awsSource: putEventsProblems(withEntry({ ...entry, Source: 'aws.ipam' })),
      detailNotObject: putEventsProblems(withEntry({ ...entry, Detail: '"text"' })),
      oversized: putEventsProblems(withEntry({ ...entry, Detail: JSON.stringify({ note: 'x'.repeat(256 * 1024) }) })),
      eleven: putEventsProblems({ Entries: Array.from({ length: 11 }, () => entry) }),
    };
    // Assess
    expect(found).toEqual({
      misspelt: [
        expect.stringMatching(/^PutEvents\.Entries\[0\]\.DetailTyp: no such member of PutEventsRequestEntry/),
        'PutEvents.Entries[0].DetailType: needed for the event to be delivered',
      ],
      requestMember: [
        expect.stringMatching(/^PutEvents\.Entrys: no such member of PutEventsRequest/),
        'PutEvents.Entries: required',
        'PutEvents.Entries: 0 entries, not 1-10',
      ],
      timeAsText: ['PutEvents.Entries[0].Time: a timestamp (Date) expected'],
      resourcesNotList: ['PutEvents.Entries[0].Resources: a list expected'],
      longDetailType: ['PutEvents.Entries[0].DetailType: longer than 128 characters'],
      longBus: ['PutEvents.Entries[0].EventBusName: not a bus name or ARN of 1-1600 characters'],
      awsSource: ["PutEvents.Entries[0].Source: 'aws.' sources are AWS's own"],
      detailNotObject: ['PutEvents.Entries[0].Detail: not a JSON object'],
      oversized: [expect.stringMatching(/^PutEvents\.Entries\[0\]: \d+ bytes, not less than 256 KB$/)],
      eleven: ['PutEvents.Entries: 11 entries, not 1-10'],
    });
  });
});

describe("`ipam get events --watch` shows a pool's crossings as the stream function writes them (issue 37)", () => {
  it('prints the fall below each threshold while a /29 fills, then each recovery as it empties', async () => {
    // Prepare: the CLI against the real handler in process; a /29 (6 addresses; thresholds 20 %, 5 %, full)
    const announced: Crossing[] = [];
    const api = await testApi(
      { announcer: { announce: async (c) => void announced.push(...c) } },
      {},
      undefined,
      memoryEngine,
    );
    expect((await api.call('POST', '/v1/pools', { name: 'tiny' })).status).toBe(201);
    expect((await api.call('POST', '/v1/pools/tiny/ranges', { cidr: '10.9.0.0/29' })).status).toBe(201);
    const names = Array.from({ length: 6 }, (_, i) => `c${i}`);
    const check = async () => (await api.container.mirror.exhaustion!.check('tiny')).crossings.length;
    // Between two polls of the watch, the pool fills, then empties, and the stream function checks it each time.
    const steps = [
      async () => {
        for (const name of names)
          expect((await api.call('POST', '/v1/pools/tiny/claims', { name, owner: owner(name) })).status).toBe(201);
        expect(await check()).toBe(3);
      },
      async () => {
        for (const name of names) expect((await api.call('DELETE', `/v1/pools/tiny/claims/${name}`)).status).toBe(204);
        expect(await check()).toBe(3);
      },
    ];
    const fake = fakeIo({ fetch: cliFetch(api).fetch, env: { IPAM_ENDPOINT: 'http://ipam.test' }, nowMs: Date.now() });
    const io = {
      ...fake.io,
      sleep: async (ms: number, signal?: AbortSignal) => (await fake.io.sleep(ms, signal), await steps.shift()?.()),
    };
    // Act: three polls, two seconds apart, printed as a log of changes (not a terminal)
    const code = await run(['get', 'events', '-p', 'tiny', '--watch', '--interval', '2s', '--watch-for', '5s'], io);
    // Assess: a frame for each change; the second has the three falls, the third adds the three recoveries (the
    // crossings of one check share its time, so their order within it is not asserted)
    expect({ code, err: fake.err(), steps: steps.length }).toEqual({ code: 0, err: '', steps: 0 });
    const raw = fake.out().split('\n\n');
    const frames = raw.map((frame) =>
      frame
        .split('\n')
        .filter((l) => l.includes('PoolFree'))
        .map((l) => l.replace(/^\S+\s+(PoolFree\w+)\s+pool\/tiny\s+(.*?): \d.*$/, '$1: $2'))
        .sort(),
    );
    const fell = [
      'PoolFreeBelowThreshold: IPv4 space of pool tiny is full',
      'PoolFreeBelowThreshold: IPv4 space of pool tiny fell below 5 % free',
      'PoolFreeBelowThreshold: IPv4 space of pool tiny fell below 20 % free',
    ];
    const recovered = [
      'PoolFreeRecovered: IPv4 space of pool tiny is back above 20 % free',
      'PoolFreeRecovered: IPv4 space of pool tiny is back above 5 % free',
      'PoolFreeRecovered: IPv4 space of pool tiny is no longer full',
    ];
    expect(frames.slice(1)).toEqual([[...fell].sort(), [...fell, ...recovered].sort()]);
    expect(raw[0]).toBe('No resources found.');
    expect(raw[1]).toMatch(
      /^LAST SEEN +REASON +OBJECT +MESSAGE(\n\d+s +PoolFreeBelowThreshold +pool\/tiny +IPv4 space of pool tiny .+: 0 of 6 addresses free \(0 %\)\.){3}$/,
    );
    expect(announced.map((c) => `${c.direction} ${c.threshold}`)).toEqual([
      'below 20',
      'below 5',
      'below full',
      'recovered full',
      'recovered 5',
      'recovered 20',
    ]);
  });
});
