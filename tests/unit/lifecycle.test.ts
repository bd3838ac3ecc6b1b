import { lifecycleCases } from '../cases/lifecycle.cases.ts';
import { memoryEngine } from '../support/engines.ts';

// In memory; tests/int/lifecycle.int.test.ts runs the same cases on DynamoDB Local.
lifecycleCases(memoryEngine);
