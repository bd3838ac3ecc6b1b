import { blocksCases } from '../cases/blocks.cases.ts';
import { memoryEngine } from '../support/engines.ts';

// On the memory engine: the same cases tests/int/blocks.int.test.ts runs on DynamoDB Local.
blocksCases(memoryEngine);
