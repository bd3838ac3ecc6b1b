import { cniRenewCases } from '../cases/cni-renew.cases.ts';
import { dynamoLocalEngine } from '../support/engines.ts';

// On DynamoDB Local (the reference engine); tests/unit/cni-renew.test.ts runs the same cases in memory.
cniRenewCases(dynamoLocalEngine);
