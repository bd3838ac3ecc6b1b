import { ownerGoneCases } from '../cases/owner-gone.cases.ts';
import { dynamoLocalEngine } from '../support/engines.ts';

// On DynamoDB Local (the reference engine); tests/unit/owner-gone.test.ts runs the same cases in memory.
ownerGoneCases(dynamoLocalEngine);
