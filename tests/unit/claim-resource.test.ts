import { claimResourceCases } from '../cases/claim-resource.cases.ts';
import { memoryEngine } from '../support/engines.ts';

// In memory; tests/int/claim-resource.int.test.ts runs the same cases on DynamoDB Local.
claimResourceCases(memoryEngine);
