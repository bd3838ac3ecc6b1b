import { allocatorContract } from '../cases/allocator-contract.cases.ts';
import { memoryEngine } from '../support/engines.ts';

// The allocator contract on the memory engine: the same cases tests/int/allocator-contract.int.test.ts runs on DynamoDB Local.
allocatorContract(memoryEngine);
