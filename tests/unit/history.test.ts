import { historyCases } from '../cases/history.cases.ts';
import { memoryStreamEngine } from '../support/lease-stream.ts';

// In memory, with the memory engine's stream; tests/int/history.int.test.ts runs the same cases on DynamoDB Local's.
historyCases(memoryStreamEngine());
