import { widestCases } from '../cases/widest.cases.ts';
import { dynamoLocalEngine } from '../support/engines.ts';

// On DynamoDB Local, 3 runs (each writes a few hundred items); tests/unit/widest.test.ts runs 8 in memory.
widestCases(dynamoLocalEngine, 3);
