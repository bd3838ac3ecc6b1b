import { dnsPropertyCases } from '../cases/dns-property.cases.ts';
import { memoryStreamEngine } from '../support/lease-stream.ts';

// In memory; tests/int/dns-property.int.test.ts runs it on DynamoDB Local with fewer runs.
dnsPropertyCases(memoryStreamEngine(), 20);
