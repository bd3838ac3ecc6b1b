import { EventBridgeClient, PutEventsCommand, type PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import type { Crossing, CrossingAnnouncer } from '../core/occupancy/exhaustion.ts';

/** The EventBridge event of a crossing, on the account's default bus (docs/deploy.md, "Warnings before a pool runs out"). */
export const CROSSING_SOURCE = 'ipam';
export const CROSSING_DETAIL_TYPE = 'IPAM Pool Free Space Threshold Crossed';

/** The `detail` of a crossing's event: counts as decimal strings (an IPv6 space is beyond 2^53). */
export function crossingDetail(c: Crossing, stage: string): Record<string, unknown> {
  return {
    stage,
    pool: c.pool,
    family: c.family,
    direction: c.direction,
    threshold: c.threshold,
    freePercent: c.freePercent,
    free: c.free.toString(),
    size: c.size.toString(),
    time: c.time,
  };
}

export type CrossingLogger = (entry: Record<string, unknown>) => void;

/**
 * Sends each crossing to the default event bus (PutEvents, at most 10 entries a request). A failure is logged, not
 * thrown: the crossing is already in the pool's events, written with its level, and a retry of the batch would find
 * the level unchanged and send nothing.
 */
export class EventBridgeCrossings implements CrossingAnnouncer {
  constructor(
    private readonly client: Pick<EventBridgeClient, 'send'>,
    private readonly stage: string,
    private readonly log: CrossingLogger = (entry) => console.error(JSON.stringify(entry)),
  ) {}

  async announce(crossings: readonly Crossing[]): Promise<void> {
    for (let i = 0; i < crossings.length; i += 10) {
      const entries: PutEventsRequestEntry[] = crossings.slice(i, i + 10).map((c) => ({
        Source: CROSSING_SOURCE,
        DetailType: CROSSING_DETAIL_TYPE,
        Detail: JSON.stringify(crossingDetail(c, this.stage)),
        EventBusName: 'default',
        Time: new Date(c.time),
      }));
      try {
        const out = await this.client.send(new PutEventsCommand({ Entries: entries }));
        if (out.FailedEntryCount)
          this.log({
            level: 'error',
            message: 'EventBridge refused crossing events',
            failed: out.FailedEntryCount,
            entries: out.Entries?.filter((e) => e.ErrorCode),
          });
      } catch (error) {
        this.log({
          level: 'error',
          message: 'EventBridge PutEvents failed',
          error: (error as Error).name,
          detail: (error as Error).message,
        });
      }
    }
  }
}

interface MiddlewareClient {
  middlewareStack: { add(middleware: unknown, options: { step: 'build'; name: string }): void };
}

/**
 * The local stack has no EventBridge: its client answers every PutEvents itself, after the call was built (so the
 * test recording of AWS calls sees it), and logs the entries, one JSON line each, where the stack's output shows them.
 */
export function answerLocally(
  client: MiddlewareClient,
  log: CrossingLogger = (entry) => console.log(JSON.stringify(entry)),
): void {
  client.middlewareStack.add(
    (_next: unknown, context: { commandName?: string }) =>
      async (args: { input: { Entries?: PutEventsRequestEntry[] } }) => {
        for (const entry of args.input.Entries ?? [])
          log({
            level: 'info',
            message: 'EventBridge event (local stack: not sent)',
            command: context.commandName,
            source: entry.Source,
            detailType: entry.DetailType,
            detail: JSON.parse(entry.Detail ?? '{}') as unknown,
          });
        return {
          output: {
            $metadata: {},
            FailedEntryCount: 0,
            Entries: (args.input.Entries ?? []).map(() => ({ EventId: 'local' })),
          },
          response: {},
        };
      },
    { step: 'build', name: 'ipamLocalEventBridge' },
  );
}

/** The client of a config: the local stack's answers itself. */
export function crossingsClient(options: { region: string; localStack: boolean }): EventBridgeClient {
  const client = new EventBridgeClient({
    region: options.region,
    ...(options.localStack ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } } : {}),
  });
  if (options.localStack) answerLocally(client);
  return client;
}
