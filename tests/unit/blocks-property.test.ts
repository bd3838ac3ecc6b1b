import { describe } from 'vitest';
import { blocksPropertyCases, releaseBesideChildCases } from '../cases/blocks-property.cases.ts';
import { memoryEngine } from '../support/engines.ts';

// Many runs in memory; tests/int/blocks-property.int.test.ts runs a few on DynamoDB Local.
describe('Property: block pools and nested pools (memory)', () => {
  blocksPropertyCases(memoryEngine, 40, 40);
  releaseBesideChildCases(memoryEngine, 60);
});
