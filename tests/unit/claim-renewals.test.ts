import { claimRenewalsCases } from '../cases/claim-renewals.cases.ts';
import { memoryEngine } from '../support/engines.ts';

// In memory; tests/int/claim-renewals.int.test.ts runs the same cases on DynamoDB Local.
claimRenewalsCases(memoryEngine);
