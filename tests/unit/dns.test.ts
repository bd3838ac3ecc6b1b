import { dnsCases } from '../cases/dns.cases.ts';
import { memoryStreamEngine } from '../support/lease-stream.ts';

// In memory; tests/int/dns.int.test.ts runs the same cases on DynamoDB Local and its stream.
dnsCases(memoryStreamEngine(), { everyReleaseKind: true });
