import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { queryParameters } from '../../shared/adapters/http/query-params.ts';
import { testApi } from '../support/api.ts';
import { memoryEngine } from '../support/engines.ts';
import { tableSnapshot } from '../support/items.ts';

type Parameter = { $ref?: string; name?: string; in?: string };
const doc = parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as {
  paths: Record<string, Record<string, { parameters?: Parameter[] } | Parameter[]>>;
  components: { parameters: Record<string, Parameter> };
};

describe('Query parameters: what each route reads, and nothing else', () => {
  it("lists for each route exactly openapi.yaml's query parameters", () => {
    // Prepare
    const resolve = (p: Parameter) => (p.$ref ? doc.components.parameters[p.$ref.split('/').pop()!]! : p);
    const documented: Record<string, string[]> = {};
    for (const [path, ops] of Object.entries(doc.paths)) {
      const shared = (ops.parameters as Parameter[] | undefined) ?? [];
      for (const [method, op] of Object.entries(ops)) {
        if (method === 'parameters') continue;
        const all = [...shared, ...((op as { parameters?: Parameter[] }).parameters ?? [])].map(resolve);
        documented[`${method.toUpperCase()} ${path}`] = all.filter((p) => p.in === 'query').map((p) => p.name!);
      }
    }
    // Act + Assess
    expect(Object.fromEntries(Object.entries(queryParameters).map(([k, v]) => [k, [...v].sort()]))).toEqual(
      Object.fromEntries(Object.entries(documented).map(([k, v]) => [k, [...v].sort()])),
    );
  });

  it("refuses Kubernetes' ?dryRun=All on a claim with 400 naming it, writing nothing, and an unknown one on a read", async () => {
    // Prepare
    const api = await testApi({}, {}, undefined, memoryEngine);
    expect((await api.call('POST', '/v1/pools', { name: 'p' })).status).toBe(201);
    expect((await api.call('POST', '/v1/pools/p/ranges', { cidr: '10.9.0.0/24' })).status).toBe(201);
    const before = await tableSnapshot(api.container.table);
    const claim = { name: 'c', owner: { kind: 'Pod', name: 'c', uid: 'u' } };

    // Act
    const dryRun = await api.call('POST', '/v1/pools/p/claims?dryRun=All', claim);
    const after = await tableSnapshot(api.container.table);
    const read = await api.call('GET', '/v1/pools/p/claims?frobnicate=1&limit=5');
    const known = await api.call('GET', '/v1/pools/p/claims?limit=5');

    // Assess
    expect([dryRun.status, dryRun.body.code]).toEqual([400, 'InvalidArgument']);
    expect(dryRun.body.detail).toBe(
      'Unknown query parameter "dryRun"; POST /v1/pools/{pool}/claims takes no query parameter. A preview is the body\'s "dryRun": true.',
    );
    expect(after).toEqual(before);
    expect([read.status, read.body.detail]).toEqual([
      400,
      'Unknown query parameter "frobnicate"; GET /v1/pools/{pool}/claims takes only owner, labelSelector, limit, cursor.',
    ]);
    expect(known.status).toBe(200);
  });
});
