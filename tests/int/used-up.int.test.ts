import { usedUpCases } from '../cases/used-up.cases.ts';
import { rangeFullCostCases } from '../cases/rangefull-cost.cases.ts';
import { dynamoLocalEngine } from '../support/engines.ts';

// On DynamoDB Local (the reference engine); tests/unit/used-up.test.ts runs the same cases in memory.
usedUpCases(dynamoLocalEngine);
rangeFullCostCases(dynamoLocalEngine);
