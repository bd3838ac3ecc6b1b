import { poolDeleteCases } from '../cases/pool-delete.cases.ts';
import { dynamoStreamEngine } from '../support/lease-stream.ts';

// On DynamoDB Local with its Streams API (the reference); tests/unit/pool-delete-recreate.test.ts runs the same cases in memory.
poolDeleteCases(dynamoStreamEngine());
