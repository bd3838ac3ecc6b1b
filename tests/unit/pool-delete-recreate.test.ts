import { poolDeleteCases } from '../cases/pool-delete.cases.ts';
import { memoryStreamEngine } from '../support/lease-stream.ts';

// In memory, with the memory engine's stream; tests/int/pool-delete.int.test.ts runs the same cases on DynamoDB Local's.
poolDeleteCases(memoryStreamEngine());
