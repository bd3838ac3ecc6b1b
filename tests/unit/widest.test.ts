import { widestCases } from '../cases/widest.cases.ts';
import { memoryEngine } from '../support/engines.ts';

// In memory, 8 runs; tests/int/widest.int.test.ts runs the same property on DynamoDB Local.
widestCases(memoryEngine, 8);
