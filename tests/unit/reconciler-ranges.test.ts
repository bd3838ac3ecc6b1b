import { reconcilerRangesCases } from '../cases/reconciler-ranges.cases.ts';
import { memoryEngine } from '../support/engines.ts';

// On the memory engine: the same cases tests/int/reconciler-ranges.int.test.ts runs on DynamoDB Local.
reconcilerRangesCases(memoryEngine);
