import { describe, expect, it } from 'vitest';
import { exhaustionCases } from '../cases/exhaustion.cases.ts';
import { memoryEngine } from '../support/engines.ts';
import { crossingsBetween, levelOf, type Crossing } from '../../shared/core/occupancy/exhaustion.ts';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { answerLocally, CROSSING_DETAIL_TYPE, CROSSING_SOURCE, EventBridgeCrossings } from '../../shared/adapters/crossing-events.ts';
import { recordAwsCalls } from '../../shared/adapters/aws-call-log.ts';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';

// On the memory engine: the same cases tests/int/exhaustion.int.test.ts runs on DynamoDB Local.
exhaustionCases(memoryEngine);

describe('Function: levelOf and crossingsBetween (issue 37)', () => {
  const u = (free: bigint, size = 100n) => ({ size, free });

  it('is below a threshold only strictly under it, and full only at no address free', () => {
    expect([u(21n), u(20n), u(19n), u(5n), u(4n), u(1n), u(0n)].map((x) => levelOf(x, [20, 5]))).toEqual([0, 0, 1, 1, 2, 2, 3]);
    expect(levelOf(u(0n, 0n), [20, 5])).toBe(0);
    expect(levelOf(u(2n, 3n), [66.67])).toBe(1);
  });

  it('names every threshold passed between two levels, in the order passed, each way', () => {
    expect(crossingsBetween(0, 3, [20, 5])).toEqual([{ direction: 'below', threshold: 20 }, { direction: 'below', threshold: 5 }, { direction: 'below', threshold: 'full' }]);
    expect(crossingsBetween(3, 1, [20, 5])).toEqual([{ direction: 'recovered', threshold: 'full' }, { direction: 'recovered', threshold: 5 }]);
    expect(crossingsBetween(2, 2, [20, 5])).toEqual([]);
  });
});

describe('Class: EventBridgeCrossings on the local stack (issue 37)', () => {
  it('builds one PutEvents of the documented source, detail-type and detail, recorded for the IAM check, and sends nothing', async () => {
    // Prepare
    const dir = mkdtempSync(join(tmpdir(), 'ipam-crossings-'));
    const lines: Record<string, unknown>[] = [];
    const client = new EventBridgeClient({ region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, endpoint: 'http://127.0.0.1:9' });
    recordAwsCalls(client, 'events', { file: join(dir, 'calls.jsonl'), functionName: 'ipam-local-mirror' });
    answerLocally(client, (entry) => lines.push(entry));
    const crossing: Crossing = { pool: 'p', family: 'IPv4', direction: 'below', threshold: 5, size: 30n, free: 1n, freePercent: 3.33, time: '2035-01-01T00:00:00.000Z' };
    const errors: unknown[] = [];
    try {
      // Act
      await new EventBridgeCrossings(client, 'local', (e) => errors.push(e)).announce([crossing, { ...crossing, threshold: 'full', free: 0n, freePercent: 0 }]);
      // Assess
      expect(errors).toEqual([]);
      expect(readFileSync(join(dir, 'calls.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as unknown)).toEqual([{ function: 'ipam-local-mirror', action: 'events:PutEvents', eventBus: 'default' }]);
      expect(lines.map((l) => [l.source, l.detailType, l.detail])).toEqual([
        [CROSSING_SOURCE, CROSSING_DETAIL_TYPE, { stage: 'local', pool: 'p', family: 'IPv4', direction: 'below', threshold: 5, freePercent: 3.33, free: '1', size: '30', time: '2035-01-01T00:00:00.000Z' }],
        [CROSSING_SOURCE, CROSSING_DETAIL_TYPE, { stage: 'local', pool: 'p', family: 'IPv4', direction: 'below', threshold: 'full', freePercent: 0, free: '0', size: '30', time: '2035-01-01T00:00:00.000Z' }],
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      client.destroy();
    }
  });
});
