import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  allowed,
  callerMatrix,
  DEPLOY_DOC,
  docPolicies,
  END,
  requestArn,
  START,
  withMatrix,
} from '../../scripts/caller-matrix.ts';
import { routeKeys } from '../../shared/adapters/http/route-keys.ts';

// The docs' caller policies evaluated as IAM would (scripts/caller-matrix.ts); the matrix in docs/deploy.md is its
// output, so a policy or a route changed without `npm run docs:caller-matrix` fails here.

describe('Caller policies of the docs, evaluated (issue 37)', () => {
  it("docs/deploy.md carries exactly the matrix the docs' policies give today", async () => {
    // Prepare
    const doc = readFileSync(DEPLOY_DOC, 'utf8');
    // Act
    const matrix = await callerMatrix();
    // Assess
    expect(doc).toContain(START);
    expect(doc.slice(doc.indexOf(START) + START.length + 1, doc.indexOf(END) - 1)).toBe(matrix);
    expect(matrix.split('\n').filter((l) => l.startsWith('| `'))).toHaveLength(routeKeys.length);
  });

  it("finds the drift when a documented policy changes (a copy of the reader's gains the claims route)", async () => {
    // Prepare
    const doc = readFileSync(DEPLOY_DOC, 'utf8');
    const policies = docPolicies();
    const reader = policies[0]!.policy as { Statement: { Resource: string[] }[] };
    const widened = structuredClone(reader);
    widened.Statement[0]!.Resource.push(
      'arn:aws:execute-api:eu-west-1:123456789012:abc123xyz/$default/POST/v1/pools/team-a-*/claims',
    );
    // Act
    const matrix = await callerMatrix([{ ...policies[0]!, policy: widened }, ...policies.slice(1)]);
    // Assess
    expect(withMatrix(doc, matrix)).not.toBe(doc);
    expect(matrix.split('\n').find((l) => l.startsWith('| `POST /v1/pools/{pool}/claims` '))).toMatch(
      /^\| `POST \/v1\/pools\/\{pool\}\/claims` \| allowed \| - \|/,
    );
  });

  it("keeps each team's policies inside its own pools: nothing under another team's pool is allowed", async () => {
    for (const { name, policy } of docPolicies()) {
      for (const route of routeKeys.filter((r) => r.includes('{pool}'))) {
        // Act
        const decision = await allowed(policy, requestArn(route, 'team-b-services'));
        // Assess
        expect({ name, route, allowed: decision }).toEqual({ name, route, allowed: false });
      }
    }
  });

  it('lets the reader call no route that writes, and the allocator no route that changes pools or ranges', async () => {
    // Prepare
    const [reader, allocator] = docPolicies();
    // Act + Assess
    for (const route of routeKeys.filter((r) => !r.startsWith('GET ')))
      expect({ route, reader: await allowed(reader!.policy, requestArn(route, 'team-a-services')) }).toEqual({
        route,
        reader: false,
      });
    for (const route of routeKeys.filter((r) => /^(POST|DELETE) \/v1\/pools(\/\{pool\}(\/ranges.*)?)?$/.test(r))) {
      expect({ route, allocator: await allowed(allocator!.policy, requestArn(route, 'team-a-services')) }).toEqual({
        route,
        allocator: false,
      });
    }
  });
});
