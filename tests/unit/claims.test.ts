import { claimsCases } from '../cases/claims.cases.ts';
import { memoryEngine } from '../support/engines.ts';

// On the memory engine: the same cases tests/int/claims.int.test.ts runs on DynamoDB Local.
claimsCases(memoryEngine);
