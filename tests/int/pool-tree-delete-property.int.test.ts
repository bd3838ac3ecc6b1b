import { describe } from 'vitest';
import { poolTreeDeletePropertyCases } from '../cases/pool-tree-delete-property.cases.ts';
import { dynamoLocalEngine } from '../support/engines.ts';

// A few runs on DynamoDB Local; tests/unit/pool-tree-delete-property.test.ts runs more in memory.
describe('Property: pool tree deletion under lagging listings (DynamoDB Local)', () => {
  poolTreeDeletePropertyCases(dynamoLocalEngine, 2, 12);
});
