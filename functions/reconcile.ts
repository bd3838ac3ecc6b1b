import type { ScheduledEvent } from 'aws-lambda';

/** Scheduled reconciler entry (placeholder until the reconciler lands). */
export const handler = async (_event: ScheduledEvent): Promise<{ ok: true }> => ({ ok: true });
