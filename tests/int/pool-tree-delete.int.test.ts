import { poolTreeDeleteCases } from '../cases/pool-tree-delete.cases.ts';
import { dynamoLocalEngine } from '../support/engines.ts';

// On DynamoDB Local (the reference); tests/unit/pool-tree-delete.test.ts runs the same cases in memory.
poolTreeDeleteCases(dynamoLocalEngine);
