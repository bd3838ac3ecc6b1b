import { describe } from 'vitest';
import { historyPropertyCases } from '../cases/history-property.cases.ts';
import { dynamoStreamEngine } from '../support/lease-stream.ts';

// A few runs on DynamoDB Local's real stream; tests/unit/history-property.test.ts runs many in memory.
describe('Property: address history (DynamoDB Local)', () => historyPropertyCases(() => dynamoStreamEngine(), 4));
