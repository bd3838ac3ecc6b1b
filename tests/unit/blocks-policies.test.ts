import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { allowed, jsonAfter } from '../../scripts/caller-matrix.ts';

// docs/blocks.md's worked example (organisation /8 -> region /16 -> node /24) gives each level a policy and a list of
// commands. Evaluated as IAM would (scripts/caller-matrix.ts): every command of a level is allowed by that level's
// policy, and no level reaches a pool of another region. The commands are listed here with the request each sends,
// and each must still be in the doc, so a changed example fails here rather than drifting from its policies.

const DOC = join(import.meta.dirname, '..', '..', 'docs', 'blocks.md');
const API = 'arn:aws:execute-api:eu-west-1:123456789012:abc123xyz/$default';

/** A level's policy as the doc shows it, with the doc's `API` placeholder filled in. */
function policyOf(doc: string, marker: string): unknown {
  return JSON.parse(JSON.stringify(jsonAfter(doc, marker, 'docs/blocks.md')).replaceAll('"API/', `"${API}/`));
}

const LEVELS = {
  network: '**Network team**',
  region: '**Region team**',
  node: '**Node controller**',
} as const;

/** The example's commands, who runs them, and the request each sends. */
const STEPS: readonly { level: keyof typeof LEVELS; command: string; request: string }[] = [
  { level: 'network', command: 'ipam create pool org --block /16', request: 'POST/v1/pools' },
  { level: 'network', command: 'ipam create range org 10.0.0.0/8', request: 'POST/v1/pools/org/ranges' },
  { level: 'region', command: 'ipam claim org --name eu-west', request: 'POST/v1/pools/org/claims' },
  { level: 'region', command: 'ipam create pool region-eu-west --block /24', request: 'POST/v1/pools' },
  {
    level: 'region',
    command: 'ipam create range region-eu-west --source org/eu-west',
    request: 'POST/v1/pools/region-eu-west/ranges',
  },
  { level: 'node', command: 'ipam claim region-eu-west --name node-1', request: 'POST/v1/pools/region-eu-west/claims' },
  { level: 'node', command: 'ipam create pool node-1', request: 'POST/v1/pools' },
  {
    level: 'node',
    command: 'ipam create range node-1 --source region-eu-west/node-1',
    request: 'POST/v1/pools/node-1/ranges',
  },
  { level: 'node', command: 'ipam delete pool node-1', request: 'DELETE/v1/pools/node-1' },
  {
    level: 'node',
    command: 'ipam release region-eu-west node-1',
    request: 'DELETE/v1/pools/region-eu-west/claims/node-1',
  },
];

describe("docs/blocks.md: each level's policy allows its commands and nothing of another region (issue 35)", () => {
  const doc = readFileSync(DOC, 'utf8');

  it.each(STEPS)('$level may run `$command`', async ({ level, command, request }) => {
    // Prepare
    const policy = policyOf(doc, LEVELS[level]);
    // Act
    const decision = await allowed(policy, `${API}/${request}`);
    // Assess
    expect(doc).toContain(command);
    expect(decision).toBe(true);
  });

  it.each(Object.keys(LEVELS) as (keyof typeof LEVELS)[])(
    "%s cannot change another region's pool or its nodes'",
    async (level) => {
      // Prepare
      const policy = policyOf(doc, LEVELS[level]);
      const elsewhere = [
        'POST/v1/pools/region-us-east/ranges',
        'DELETE/v1/pools/region-us-east',
        'POST/v1/pools/region-us-east/claims',
        'DELETE/v1/pools/region-us-east/claims/node-9',
      ];
      // Act
      const decisions = await Promise.all(elsewhere.map((r) => allowed(policy, `${API}/${r}`)));
      // Assess
      expect(Object.fromEntries(elsewhere.map((r, i) => [r, decisions[i]]))).toEqual(
        Object.fromEntries(elsewhere.map((r) => [r, false])),
      );
    },
  );
});
