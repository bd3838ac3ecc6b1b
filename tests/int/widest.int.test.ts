import { widestCases } from '../cases/widest.cases.ts';
import { dynamoLocalEngine } from '../support/engines.ts';

// On DynamoDB Local, 2 runs (the widest input first; each run writes about 400 items of up to 10 KB, slow there);
// tests/unit/widest.test.ts runs 8 in memory.
widestCases(dynamoLocalEngine, 2, 300_000);
