import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';

/** Stream mirror entry (placeholder until the legacy-bitmap mirror lands): acknowledges every record. */
export const handler = async (_event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> => ({ batchItemFailures: [] });
