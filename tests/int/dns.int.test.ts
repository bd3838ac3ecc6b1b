import { dnsCases } from '../cases/dns.cases.ts';
import { dynamoStreamEngine } from '../support/lease-stream.ts';

// On DynamoDB Local with its Streams API (the reference); tests/unit/dns.test.ts runs the same cases in memory.
dnsCases(dynamoStreamEngine(), { everyReleaseKind: false });
