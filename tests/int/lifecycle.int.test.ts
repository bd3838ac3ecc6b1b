import { lifecycleCases } from '../cases/lifecycle.cases.ts';
import { dynamoLocalEngine } from '../support/engines.ts';

// On DynamoDB Local (the reference engine); tests/unit/lifecycle.test.ts runs the same cases in memory.
lifecycleCases(dynamoLocalEngine);
