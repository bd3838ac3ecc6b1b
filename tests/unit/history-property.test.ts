import { describe } from 'vitest';
import { historyPropertyCases } from '../cases/history-property.cases.ts';
import { memoryStreamEngine } from '../support/lease-stream.ts';

// In memory (many runs); tests/int/history-property.int.test.ts runs a few on DynamoDB Local's stream.
describe('Property: address history (memory)', () => historyPropertyCases((clock) => memoryStreamEngine(clock), 40));
