import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { routes } from '../../shared/adapters/http/api.ts';
import { routeKeys } from '../../shared/adapters/http/route-keys.ts';
import { checkDnsLabel, checkOwnerField, checkRangeName, checkRangeRef } from '../../shared/core/names.ts';

const spec = parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as { paths: Record<string, Record<string, unknown>> };
const methods = new Set(['get', 'post', 'put', 'patch', 'delete']);

// shared/adapters/http/route-keys.ts declares the routes once; every other list of them is checked against it here.

describe('Contract: route-keys.ts', () => {
  it('declares each route once, and the handler serves exactly those', () => {
    expect(new Set(routeKeys).size).toBe(routeKeys.length);
    expect(Object.keys(routes).sort()).toEqual([...routeKeys].sort());
  });
});

describe('Contract: openapi.yaml', () => {
  it('documents exactly the declared routes', () => {
    const documented = Object.entries(spec.paths)
      .flatMap(([path, ops]) => Object.keys(ops).filter((m) => methods.has(m)).map((m) => `${m.toUpperCase()} ${path}`))
      .sort();
    expect(documented).toEqual([...routeKeys].sort());
  });

  it('lists every error code the problem mapper knows', async () => {
    const { statusOf } = await import('../../shared/adapters/http/problem.ts');
    const schemas = (parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as { components: { schemas: { Problem: { properties: { code: { enum: string[] } } } } } }).components.schemas;
    expect([...schemas.Problem.properties.code.enum].sort()).toEqual(Object.keys(statusOf).sort());
  });
});

describe('Contract: serverless.yml', () => {
  it('declares an IAM-authorized httpApi event for exactly the declared routes', () => {
    const sls = parse(readFileSync(new URL('../../serverless.yml', import.meta.url), 'utf8')) as {
      functions: Record<string, { events?: { httpApi?: { method: string; path: string; authorizer?: { type: string } } }[] }>;
    };
    const events = Object.values(sls.functions).flatMap((f) => (f.events ?? []).flatMap((e) => (e.httpApi ? [e.httpApi] : [])));
    expect(events.map((e) => `${e.method.toUpperCase()} ${e.path}`).sort()).toEqual([...routeKeys].sort());
    expect(events.every((e) => e.authorizer?.type === 'aws_iam')).toBe(true);
  });
});

describe('Contract: the name rules in openapi.yaml', () => {
  type StringSchema = { pattern?: string; minLength?: number; maxLength?: number };
  const schemas = (parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as { components: { schemas: Record<string, StringSchema> } }).components.schemas;
  const admits = (schema: StringSchema, value: string) =>
    value.length >= (schema.minLength ?? 0) && value.length <= (schema.maxLength ?? Infinity) && (schema.pattern === undefined || new RegExp(schema.pattern, 'u').test(value));
  const accepts = (check: (value: string) => unknown, value: string) => {
    try {
      check(value);
      return true;
    } catch {
      return false;
    }
  };
  const samples = ['a', 'web-0', 'Web', '-a', 'a-', 'a_b', 'a.b', '10.0.0.0-24', '::-64', '::1-128', 'fd00:10:96::-112', 'x'.repeat(63), 'x'.repeat(64), 'r'.repeat(100), 'r'.repeat(101), '', 'a b', 'ü', 'u'.repeat(253), 'u'.repeat(254)];

  it.each([
    ['Label', (v: string) => checkDnsLabel(v, 'name')],
    ['RangeName', (v: string) => checkRangeName(v)],
    ['RangeRef', (v: string) => checkRangeRef(v, 'range')],
    ['OwnerField', (v: string) => checkOwnerField(v, 'uid')],
  ] as const)('schema %s admits exactly what names.ts accepts', (name, check) => {
    for (const value of samples) expect(admits(schemas[name]!, value), `${name} ${JSON.stringify(value)}`).toBe(accepts(check, value));
  });
});
