import { dnsRepairCases } from '../cases/dns-repair.cases.ts';
import { dynamoLocalEngine } from '../support/engines.ts';

// On DynamoDB Local (the reference); tests/unit/dns-repair.test.ts runs the same cases in memory.
dnsRepairCases(dynamoLocalEngine);
