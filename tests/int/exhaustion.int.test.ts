import { exhaustionCases } from '../cases/exhaustion.cases.ts';
import { dynamoLocalEngine } from '../support/engines.ts';

// On DynamoDB Local (the reference engine); tests/unit/exhaustion.test.ts runs the same cases in memory.
exhaustionCases(dynamoLocalEngine);
