import { poolsAndRangesCases } from '../cases/pools-ranges.cases.ts';
import { dynamoLocalEngine } from '../support/engines.ts';

// On DynamoDB Local (the reference engine); tests/unit/pools-ranges.test.ts runs the same cases in memory.
poolsAndRangesCases(dynamoLocalEngine);
