import { poolTreeDeleteCases } from '../cases/pool-tree-delete.cases.ts';
import { memoryEngine } from '../support/engines.ts';

// In memory; tests/int/pool-tree-delete.int.test.ts runs the same cases on DynamoDB Local.
poolTreeDeleteCases(memoryEngine);
