import { blocksCases } from '../cases/blocks.cases.ts';
import { dynamoLocalEngine } from '../support/engines.ts';

// On DynamoDB Local (the reference engine); tests/unit/blocks.test.ts runs the same cases in memory.
blocksCases(dynamoLocalEngine);
