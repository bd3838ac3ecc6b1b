import { accessCases } from '../cases/access.cases.ts';
import { dynamoLocalEngine } from '../support/engines.ts';

// On DynamoDB Local (the reference engine); tests/unit/access.test.ts runs the same cases in memory.
accessCases(dynamoLocalEngine);
