import { claimsCases } from '../cases/claims.cases.ts';
import { dynamoLocalEngine } from '../support/engines.ts';

// On DynamoDB Local (the reference engine); tests/unit/claims.test.ts runs the same cases in memory.
claimsCases(dynamoLocalEngine);
