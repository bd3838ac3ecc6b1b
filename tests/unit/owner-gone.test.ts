import { ownerGoneCases } from '../cases/owner-gone.cases.ts';
import { memoryEngine } from '../support/engines.ts';

// In memory; tests/int/owner-gone.int.test.ts runs the same cases on DynamoDB Local.
ownerGoneCases(memoryEngine);
