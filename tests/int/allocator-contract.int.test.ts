import { allocatorContract } from '../cases/allocator-contract.cases.ts';
import { dynamoLocalEngine } from '../support/engines.ts';

// The allocator contract on DynamoDB Local (the reference engine); tests/unit/allocator-contract.test.ts runs it in memory.
allocatorContract(dynamoLocalEngine);
