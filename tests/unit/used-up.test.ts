import { usedUpCases } from '../cases/used-up.cases.ts';
import { memoryEngine } from '../support/engines.ts';

// On the memory engine: the same cases tests/int/used-up.int.test.ts runs on DynamoDB Local.
usedUpCases(memoryEngine);
