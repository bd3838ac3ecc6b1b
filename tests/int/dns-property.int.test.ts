import { dnsPropertyCases } from '../cases/dns-property.cases.ts';
import { dynamoStreamEngine } from '../support/lease-stream.ts';

// On DynamoDB Local and its stream (the reference), fewer runs: each makes a table; the unit tier runs more in memory.
dnsPropertyCases(dynamoStreamEngine(), 2);
