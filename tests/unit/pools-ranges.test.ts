import { poolsAndRangesCases } from '../cases/pools-ranges.cases.ts';
import { memoryEngine } from '../support/engines.ts';

// On the memory engine: the same cases tests/int/pools-ranges.int.test.ts runs on DynamoDB Local.
poolsAndRangesCases(memoryEngine);
