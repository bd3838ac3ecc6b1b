import { describe } from 'vitest';
import { poolTreeDeletePropertyCases } from '../cases/pool-tree-delete-property.cases.ts';
import { memoryEngine } from '../support/engines.ts';

// Many runs in memory; tests/int/pool-tree-delete-property.int.test.ts runs a few on DynamoDB Local.
describe('Property: pool tree deletion under lagging listings (memory)', () => {
  poolTreeDeletePropertyCases(memoryEngine, 20);
});
