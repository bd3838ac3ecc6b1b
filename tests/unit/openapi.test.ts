import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { routes } from '../../shared/adapters/http/api.ts';
import type { FieldSpec } from '../../shared/adapters/http/request.ts';
import { bodyFields } from '../../shared/adapters/http/routes.ts';
import { routeKeys } from '../../shared/adapters/http/route-keys.ts';
import { checkLabels } from '../../shared/core/labels.ts';
import { checkDnsLabel, checkOwnerField, checkRangeName, checkRangeRef } from '../../shared/core/names.ts';

const spec = parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as {
  paths: Record<string, Record<string, unknown>>;
};
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
      .flatMap(([path, ops]) =>
        Object.keys(ops)
          .filter((m) => methods.has(m))
          .map((m) => `${m.toUpperCase()} ${path}`),
      )
      .sort();
    expect(documented).toEqual([...routeKeys].sort());
  });

  it('lists every error code the problem mapper knows', async () => {
    const { statusOf } = await import('../../shared/adapters/http/problem.ts');
    const schemas = (
      parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as {
        components: { schemas: { Problem: { properties: { code: { enum: string[] } } } } };
      }
    ).components.schemas;
    expect([...schemas.Problem.properties.code.enum].sort()).toEqual(Object.keys(statusOf).sort());
  });
});

describe('Contract: the request bodies in openapi.yaml', () => {
  type Schema = { $ref?: string; type?: string | string[]; required?: string[]; properties?: Record<string, Schema> };
  const doc = parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as {
    paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: Schema }> } }>>;
    components: { schemas: Record<string, Schema> };
  };
  const resolve = (schema: Schema): Schema =>
    schema.$ref ? doc.components.schemas[schema.$ref.split('/').pop()!]! : schema;
  const jsonType: Record<FieldSpec['type'], string> = {
    string: 'string',
    boolean: 'boolean',
    integer: 'integer',
    'string[]': 'array',
    'number[]': 'array',
    object: 'object',
  };

  it.each(Object.keys(bodyFields))(
    '%s: the schema has exactly the fields parseBody reads, with their types, required and nullable ones',
    (key) => {
      const [method, path] = key.split(' ') as [string, string];
      const schema = resolve(doc.paths[path]![method.toLowerCase()]!.requestBody!.content['application/json']!.schema);
      const fields = (bodyFields as Readonly<Record<string, Readonly<Record<string, FieldSpec>>>>)[key]!;
      expect(Object.keys(schema.properties ?? {}).sort()).toEqual(Object.keys(fields).sort());
      expect([...(schema.required ?? [])].sort()).toEqual(
        Object.keys(fields)
          .filter((f) => fields[f]!.required)
          .sort(),
      );
      for (const [name, field] of Object.entries(fields)) {
        const property = resolve(schema.properties![name]!);
        const types = property.type === undefined ? [] : [property.type].flat();
        // Enums and named string schemas carry no type of their own here; where a type is written it must agree.
        if (types.length)
          expect(
            types.filter((t) => t !== 'null'),
            `${key} ${name}`,
          ).toEqual([jsonType[field.type]]);
        expect(types.includes('null'), `${key} ${name} nullable`).toBe(field.nullable === true);
      }
    },
  );
});

describe('Contract: serverless.yml', () => {
  it('declares an IAM-authorized httpApi event for exactly the declared routes, and the catch-all $default', () => {
    const sls = parse(readFileSync(new URL('../../serverless.yml', import.meta.url), 'utf8')) as {
      functions: Record<
        string,
        { events?: { httpApi?: { method: string; path: string; authorizer?: { type: string } } }[] }
      >;
    };
    const events = Object.values(sls.functions).flatMap((f) =>
      (f.events ?? []).flatMap((e) => (e.httpApi ? [e.httpApi] : [])),
    );
    expect(events.map((e) => `${e.method.toUpperCase()} ${e.path}`).sort()).toEqual(['* *', ...routeKeys].sort());
    expect(events.every((e) => e.authorizer?.type === 'aws_iam')).toBe(true);
  });
});

describe('Contract: the name rules in openapi.yaml', () => {
  type StringSchema = { pattern?: string; minLength?: number; maxLength?: number };
  const schemas = (
    parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as {
      components: { schemas: Record<string, StringSchema> };
    }
  ).components.schemas;
  const admits = (schema: StringSchema, value: string) =>
    value.length >= (schema.minLength ?? 0) &&
    value.length <= (schema.maxLength ?? Infinity) &&
    (schema.pattern === undefined || new RegExp(schema.pattern, 'u').test(value));
  const accepts = (check: (value: string) => unknown, value: string) => {
    try {
      check(value);
      return true;
    } catch {
      return false;
    }
  };
  const samples = [
    'a',
    'web-0',
    'Web',
    '-a',
    'a-',
    'a_b',
    'a.b',
    '10.0.0.0-24',
    '::-64',
    '::1-128',
    'fd00:10:96::-112',
    'x'.repeat(63),
    'x'.repeat(64),
    'r'.repeat(100),
    'r'.repeat(101),
    '',
    'a b',
    'ü',
    'u'.repeat(253),
    'u'.repeat(254),
  ];

  it.each([
    ['Label', (v: string) => checkDnsLabel(v, 'name')],
    ['RangeName', (v: string) => checkRangeName(v)],
    ['RangeRef', (v: string) => checkRangeRef(v, 'range')],
    ['OwnerField', (v: string) => checkOwnerField(v, 'uid')],
  ] as const)('schema %s admits exactly what names.ts accepts', (name, check) => {
    for (const value of samples)
      expect(admits(schemas[name]!, value), `${name} ${JSON.stringify(value)}`).toBe(accepts(check, value));
  });

  it('schemas LabelKey and LabelValue admit exactly what labels.ts accepts', () => {
    const keys = [
      'app',
      'App.v_1',
      'cni.ipam/network',
      'a/b',
      `${'p'.repeat(253)}/n`,
      `${'p'.repeat(254)}/n`,
      `p/${'n'.repeat(63)}`,
      `p/${'n'.repeat(64)}`,
      'n'.repeat(63),
      'n'.repeat(64),
      'A/n',
      '/n',
      'p/',
      'a/b/c',
      '-a',
      'a-',
      '_a',
      'a.b-/n',
      'a..b/n',
      'a b',
      'ü',
      '',
    ];
    const values = ['', 'v', 'V-1_2.3', 'f'.repeat(128), 'f'.repeat(129), '-v', 'v.', 'a b', 'a/b', 'ü'];
    for (const key of keys)
      expect(admits(schemas.LabelKey!, key), `LabelKey ${JSON.stringify(key)}`).toBe(
        accepts((k) => checkLabels({ [k]: 'v' }), key),
      );
    for (const value of values)
      expect(admits(schemas.LabelValue!, value), `LabelValue ${JSON.stringify(value)}`).toBe(
        accepts((v) => checkLabels({ k: v }), value),
      );
  });
});

describe('the routes read typed bodies', () => {
  it('casts no body field: each body is typed from openapi.gen.ts (bodyOf), after parseBody checked it', () => {
    const files = ['routes.ts', 'consumer-routes.ts', 'history-routes.ts', 'legacy-routes.ts', 'reconcile-routes.ts'];
    const casts = files.flatMap((file) =>
      readFileSync(fileURLToPath(new URL(`../../shared/adapters/http/${file}`, import.meta.url)), 'utf8')
        .split('\n')
        .filter((line) => /\bbody\.\w+\s+as\s/.test(line))
        .map((line) => `${file}: ${line.trim()}`),
    );
    expect(casts).toEqual([]);
  });
});
