import { historyCases } from '../cases/history.cases.ts';
import { dynamoStreamEngine } from '../support/lease-stream.ts';

// On DynamoDB Local with its Streams API (the reference); tests/unit/history.test.ts runs the same cases in memory.
historyCases(dynamoStreamEngine());
