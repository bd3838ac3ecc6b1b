import { limitsCases } from '../cases/limits.cases.ts';
import { memoryEngine } from '../support/engines.ts';

// In memory; tests/int/limits.int.test.ts runs the same cases on DynamoDB Local.
limitsCases(memoryEngine);
