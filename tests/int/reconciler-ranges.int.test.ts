import { reconcilerRangesCases } from '../cases/reconciler-ranges.cases.ts';
import { dynamoLocalEngine } from '../support/engines.ts';

// On DynamoDB Local (the reference engine); tests/unit/reconciler-ranges.test.ts runs the same cases in memory.
reconcilerRangesCases(dynamoLocalEngine);
