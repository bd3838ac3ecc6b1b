import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDynamoClient } from '../../shared/adapters/dynamodb/client.ts';
import { createTable } from '../../shared/adapters/dynamodb/table-setup.ts';

/** The DynamoDB Local endpoint of the integration tier; refuses anything that is not loopback. */
export function localEndpoint(): string {
  const endpoint = inject('dynamoEndpoint');
  const host = new URL(endpoint).hostname;
  if (host !== '127.0.0.1' && host !== 'localhost') throw new Error(`integration tests refuse non-loopback endpoint ${endpoint}`);
  return endpoint;
}

/** A fresh table with a unique name on the shared DynamoDB Local, so test files never see each other's items. */
export async function freshTable(prefix = 'ipam-test'): Promise<{ client: DynamoDBClient; tableName: string; endpoint: string }> {
  const endpoint = localEndpoint();
  const client = createDynamoClient({ endpoint, maxAttempts: 1 });
  const tableName = `${prefix}-${randomUUID().slice(0, 8)}`;
  await createTable(client, tableName);
  return { client, tableName, endpoint };
}
