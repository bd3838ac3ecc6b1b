import { describe } from 'vitest';
import { blocksPropertyCases, releaseBesideChildCases } from '../cases/blocks-property.cases.ts';
import { dynamoLocalEngine } from '../support/engines.ts';

// A few runs on DynamoDB Local; tests/unit/blocks-property.test.ts runs many in memory.
describe('Property: block pools and nested pools (DynamoDB Local)', () => {
  blocksPropertyCases(dynamoLocalEngine, 3, 2);
  releaseBesideChildCases(dynamoLocalEngine, 6);
});
