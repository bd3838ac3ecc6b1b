import { claimResourceCases } from '../cases/claim-resource.cases.ts';
import { dynamoLocalEngine } from '../support/engines.ts';

// On DynamoDB Local; tests/unit/claim-resource.test.ts runs the same cases in memory.
claimResourceCases(dynamoLocalEngine);
