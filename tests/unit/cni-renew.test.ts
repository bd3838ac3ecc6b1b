import { cniRenewCases } from '../cases/cni-renew.cases.ts';
import { memoryEngine } from '../support/engines.ts';

// In memory; tests/int/cni-renew.int.test.ts runs the same cases on DynamoDB Local.
cniRenewCases(memoryEngine, { manyPods: true });
