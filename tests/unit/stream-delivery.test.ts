import type { DynamoDBRecord } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { DEPLOYED_MAPPING, batchDue, deliverBatch, type GivenUp } from '../../aws-emulation/stream-delivery.ts';

// The event source mapping's rules, as the local stack's poller, the tests and the simulator run them. The poller's
// use of them against DynamoDB Local's stream is tests/int/stream-poller.int.test.ts.

const records = (n: number): DynamoDBRecord[] =>
  Array.from({ length: n }, (_, i) => ({
    eventName: 'INSERT',
    dynamodb: { SequenceNumber: String(i + 1).padStart(3, '0') },
  }));
const seqs = (batch: readonly DynamoDBRecord[]): string =>
  batch.map((r) => Number(r.dynamodb!.SequenceNumber)).join(',');

/** Runs deliverBatch with a scripted handler; what each invocation received, and what was given up. */
async function deliver(
  n: number,
  answer: (batch: DynamoDBRecord[], call: number) => unknown,
  rules = DEPLOYED_MAPPING,
) {
  const calls: string[] = [];
  const givenUp: GivenUp[] = [];
  let delivered = 0;
  await deliverBatch(records(n), rules, {
    invoke: async (batch) => {
      calls.push(seqs(batch));
      return answer(batch, calls.length);
    },
    pause: async () => undefined,
    onDelivered: (k) => (delivered += k),
    onGiveUp: (g) => givenUp.push(g),
  });
  return { calls, givenUp, delivered };
}

describe('Module: aws-emulation/stream-delivery', () => {
  it('retries from the lowest failed record to the end of the batch, checkpointing what came before', async () => {
    const { calls, delivered } = await deliver(5, (_, call) =>
      call === 1 ? { batchItemFailures: [{ itemIdentifier: '004' }, { itemIdentifier: '003' }] } : undefined,
    );
    expect(calls).toEqual(['1,2,3,4,5', '3,4,5']);
    expect(delivered).toBe(5);
  });

  it('gives a batch that keeps failing to the failure destination after maxRetries retries', async () => {
    const { calls, givenUp, delivered } = await deliver(3, () => ({ batchItemFailures: [{ itemIdentifier: '002' }] }), {
      ...DEPLOYED_MAPPING,
      maxRetries: 2,
    });
    expect(calls).toEqual(['1,2,3', '2,3', '2,3']);
    expect(givenUp.map((g) => [seqs(g.records), g.attempts])).toEqual([['2,3', 3]]);
    expect(delivered).toBe(1);
  });

  it('fails the whole batch on an itemIdentifier that is not in it', async () => {
    const { calls } = await deliver(2, (_, call) =>
      call === 1 ? { batchItemFailures: [{ itemIdentifier: 'nope' }] } : { batchItemFailures: [] },
    );
    expect(calls).toEqual(['1,2', '1,2']);
  });

  it('bisects a batch whose invocation fails until the poison record is alone, and gives up on it alone', async () => {
    const { calls, givenUp, delivered } = await deliver(
      4,
      (batch) => {
        if (batch.some((r) => r.dynamodb!.SequenceNumber === '003')) throw new Error('poison');
        return null;
      },
      { ...DEPLOYED_MAPPING, maxRetries: 1 },
    );
    expect(calls).toEqual(['1,2,3,4', '1,2', '3,4', '3', '3', '4']);
    expect(givenUp.map((g) => [seqs(g.records), g.outcome.kind])).toEqual([['3', 'error']]);
    expect(delivered).toBe(3);
  });

  it('invokes with a full batch at once, with fewer only after the batching window', () => {
    const full = DEPLOYED_MAPPING.batchSize;
    expect(batchDue(full, 0, DEPLOYED_MAPPING)).toBe(true);
    expect(batchDue(full - 1, 999, DEPLOYED_MAPPING)).toBe(false);
    expect(batchDue(1, 1000, DEPLOYED_MAPPING)).toBe(true);
    expect(batchDue(0, 5000, DEPLOYED_MAPPING)).toBe(false);
  });
});
