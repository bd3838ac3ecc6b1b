import { consumersCases } from '../cases/consumers.cases.ts';
import { memoryEngine } from '../support/engines.ts';
import { memoryStreamEngine } from '../support/lease-stream.ts';

// In memory (the history case with the memory engine's stream); tests/int/consumers.int.test.ts runs the same cases on DynamoDB Local.
consumersCases(memoryEngine, memoryStreamEngine());
