import { dnsRepairCases } from '../cases/dns-repair.cases.ts';
import { memoryEngine } from '../support/engines.ts';

// In memory; tests/int/dns-repair.int.test.ts runs the same cases on DynamoDB Local.
dnsRepairCases(memoryEngine);
