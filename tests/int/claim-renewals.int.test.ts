import { claimRenewalsCases } from '../cases/claim-renewals.cases.ts';
import { dynamoLocalEngine } from '../support/engines.ts';

// On DynamoDB Local (the reference engine); tests/unit/claim-renewals.test.ts runs the same cases in memory.
claimRenewalsCases(dynamoLocalEngine);
