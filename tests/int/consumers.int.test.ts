import { consumersCases } from '../cases/consumers.cases.ts';
import { dynamoLocalEngine } from '../support/engines.ts';
import { dynamoStreamEngine } from '../support/lease-stream.ts';

// On DynamoDB Local (the history case with its Streams API); tests/unit/consumers.test.ts runs the same cases in memory.
consumersCases(dynamoLocalEngine, dynamoStreamEngine());
