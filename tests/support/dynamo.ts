import { randomUUID } from 'node:crypto';
import { inject, onTestFinished } from 'vitest';
import { DeleteTableCommand, ResourceNotFoundException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDynamoClient } from '../../shared/adapters/dynamodb/client.ts';
import { createTable } from '../../shared/adapters/dynamodb/table-setup.ts';
import { recordAwsCalls } from '../../shared/adapters/aws-call-log.ts';

/** The DynamoDB Local endpoint of the integration tier; refuses anything that is not loopback. */
export function localEndpoint(): string {
  const endpoint = inject('dynamoEndpoint');
  const host = new URL(endpoint).hostname;
  if (host !== '127.0.0.1' && host !== 'localhost')
    throw new Error(`integration tests refuse non-loopback endpoint ${endpoint}`);
  return endpoint;
}

/** Tables made outside a test (in beforeAll), dropped when their file finishes (tests/support/drop-tables.ts). */
const fileTables: { client: DynamoDBClient; tableName: string }[] = [];

async function dropTable(client: DynamoDBClient, tableName: string): Promise<void> {
  try {
    await client.send(new DeleteTableCommand({ TableName: tableName }));
  } catch (error) {
    if (!(error instanceof ResourceNotFoundException)) throw error;
  }
}

/** Drops the tables this file made outside its tests; the int tier's setup file calls it after all of them. */
export async function dropFileTables(): Promise<void> {
  await Promise.all(fileTables.splice(0).map(({ client, tableName }) => dropTable(client, tableName)));
}

/**
 * A fresh table with a unique name on the shared DynamoDB Local, so test files never see each other's items. Its
 * stream is off unless the test reads it (`stream: true`): DynamoDB Local keeps the stream records in the one SQLite
 * database its single thread serves, even past the table's deletion, and every later write anywhere gets slower as
 * they pile up (after 20,000 records a put+get took three times as long as after 20,000 writes without a stream; the
 * int tier took 1,194 s in one process against about 300 s file by file). The table is dropped when the test that made it finishes, or, made in beforeAll, when its
 * file does.
 */
export async function freshTable(
  prefix = 'ipam-test',
  options: { stream?: boolean } = {},
): Promise<{ client: DynamoDBClient; tableName: string; endpoint: string }> {
  const endpoint = localEndpoint();
  const client = createDynamoClient({ endpoint, maxAttempts: 1 });
  const callLog = process.env.AWS_IPAM_CALL_LOG;
  if (callLog) recordAwsCalls(client, 'dynamodb', { file: callLog, functionName: 'unscoped' });
  const tableName = `${prefix}-${randomUUID().slice(0, 8)}`;
  await createTable(client, tableName, { stream: options.stream ?? false });
  try {
    onTestFinished(() => dropTable(client, tableName));
  } catch {
    // Not inside a test: a beforeAll table, which the file's tests share.
    fileTables.push({ client, tableName });
  }
  return { client, tableName, endpoint };
}
