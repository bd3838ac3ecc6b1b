import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '../../scripts/dynamodb-local.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    dynamoEndpoint: string;
  }
}

/** Starts one DynamoDB Local on a free port for the integration tier and stops it (and its JVM) afterwards. */
export async function setup(project: TestProject): Promise<() => Promise<void>> {
  const db = await startDynamoDbLocal();
  project.provide('dynamoEndpoint', db.endpoint);
  return () => db.stop();
}
