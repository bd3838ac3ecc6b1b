import { limitsCases } from '../cases/limits.cases.ts';
import { dynamoLocalEngine } from '../support/engines.ts';

// On DynamoDB Local (the reference engine); tests/unit/limits.test.ts runs the same cases in memory.
limitsCases(dynamoLocalEngine);
