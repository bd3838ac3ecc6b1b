/**
 * Checks a CloudFormation template against the resource schemas CloudFormation itself publishes, as packaged in
 * `@aws-cdk/aws-service-spec` (offline: the database ships in the package). Written here because no package checks a
 * template against that database: cfn-lint is Python, and the CDK only uses the database to generate its classes.
 *
 * What it decides, per resource: the type exists; every property exists, has the schema's type (through nested
 * definitions, arrays and maps) and every required one is present; Ref, Fn::GetAtt and Fn::Sub name resources (and
 * attributes) that exist. What it leaves alone: values behind intrinsic functions (known only at deploy time),
 * allowed-value lists and patterns (the schemas' lists trail the services), and CloudFormation's coercions (a number
 * given for a string property, a numeric string for a number, as CloudFormation accepts them).
 */
import { loadAwsServiceSpec } from '@aws-cdk/aws-service-spec';

type SpecDatabase = Awaited<ReturnType<typeof loadAwsServiceSpec>>;
export type PropertyType =
  | { type: 'string' | 'number' | 'integer' | 'boolean' | 'json' | 'date-time' | 'null' | 'tag' }
  | { type: 'ref'; reference: { $ref: string } }
  | { type: 'array' | 'map'; element: PropertyType }
  | { type: 'union'; types: PropertyType[] };
export interface SpecProperty {
  readonly type: PropertyType;
  readonly required?: boolean;
}

export interface CfnResource {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
  readonly [key: string]: unknown;
}
export interface CfnTemplate {
  readonly Resources: Record<string, CfnResource>;
  readonly Parameters?: Record<string, unknown>;
  readonly Conditions?: Record<string, unknown>;
}

const RESOURCE_KEYS = new Set([
  'Type',
  'Properties',
  'DependsOn',
  'DeletionPolicy',
  'UpdateReplacePolicy',
  'Condition',
  'Metadata',
  'CreationPolicy',
  'UpdatePolicy',
]);
const INTRINSICS = new Set([
  'Ref',
  'Fn::GetAtt',
  'Fn::Sub',
  'Fn::Join',
  'Fn::If',
  'Fn::Select',
  'Fn::Split',
  'Fn::ImportValue',
  'Fn::FindInMap',
  'Fn::Base64',
  'Fn::GetAZs',
  'Fn::Cidr',
  'Fn::Length',
  'Fn::ToJsonString',
  'Fn::Transform',
]);

let loaded: Promise<SpecDatabase> | undefined;
/** The database, loaded once per process (about 3 s). */
export const specDatabase = (): Promise<SpecDatabase> => (loaded ??= loadAwsServiceSpec());

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isIntrinsic = (value: unknown): boolean =>
  isObject(value) && Object.keys(value).length === 1 && INTRINSICS.has(Object.keys(value)[0]!);

/** Every problem of the template, one sentence each, `<LogicalId>.<path>: ...`; empty when it passes. */
/** A custom resource type's schema, as its provider defines it (CloudFormation publishes none for `Custom::*`). */
export interface CustomTypeSchema {
  readonly properties: Record<string, SpecProperty>;
  readonly attributes: readonly string[];
}

export async function cfnSchemaProblems(
  template: CfnTemplate,
  customTypes: Readonly<Record<string, CustomTypeSchema>> = {},
): Promise<string[]> {
  const db = await specDatabase();
  const problems: string[] = [];
  const typeOf = (cfnType: string): { properties: unknown; attributes: Record<string, unknown> } | undefined => {
    const custom = customTypes[cfnType];
    if (custom)
      return { properties: custom.properties, attributes: Object.fromEntries(custom.attributes.map((a) => [a, {}])) };
    return db.lookup('resource', 'cloudFormationType', 'equals', cfnType)[0];
  };

  const checkValue = (path: string, value: unknown, type: PropertyType, out: string[]): void => {
    if (isIntrinsic(value)) return;
    switch (type.type) {
      case 'string':
      case 'date-time':
        if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean')
          out.push(`${path}: expected a string, got ${JSON.stringify(value)}`);
        return;
      case 'number':
      case 'integer': {
        const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
        if (typeof n !== 'number' || !Number.isFinite(n) || (type.type === 'integer' && !Number.isInteger(n)))
          out.push(
            `${path}: expected ${type.type === 'integer' ? 'an integer' : 'a number'}, got ${JSON.stringify(value)}`,
          );
        return;
      }
      case 'boolean':
        if (typeof value !== 'boolean' && value !== 'true' && value !== 'false')
          out.push(`${path}: expected a boolean, got ${JSON.stringify(value)}`);
        return;
      case 'json':
        if (!isObject(value) && !Array.isArray(value) && typeof value !== 'string')
          out.push(`${path}: expected a JSON object, got ${JSON.stringify(value)}`);
        return;
      case 'null':
        return;
      case 'tag':
        checkObject(
          path,
          value,
          { Key: { type: { type: 'string' }, required: true }, Value: { type: { type: 'string' }, required: true } },
          out,
        );
        return;
      case 'array':
        if (!Array.isArray(value)) out.push(`${path}: expected a list, got ${JSON.stringify(value)}`);
        else value.forEach((element, i) => checkValue(`${path}[${i}]`, element, type.element, out));
        return;
      case 'map':
        if (!isObject(value)) out.push(`${path}: expected a map, got ${JSON.stringify(value)}`);
        else
          for (const [key, element] of Object.entries(value)) checkValue(`${path}.${key}`, element, type.element, out);
        return;
      case 'union': {
        const tries = type.types.map((t) => {
          const found: string[] = [];
          checkValue(path, value, t, found);
          return found;
        });
        if (!tries.some((found) => found.length === 0))
          out.push(...tries.reduce((a, b) => (b.length < a.length ? b : a)));
        return;
      }
      case 'ref': {
        const definition = db.get('typeDefinition', type.reference.$ref) as {
          name: string;
          properties: Record<string, SpecProperty>;
        };
        checkObject(path, value, definition.properties, out);
        return;
      }
    }
  };

  const checkObject = (path: string, value: unknown, properties: Record<string, SpecProperty>, out: string[]): void => {
    if (!isObject(value)) {
      out.push(`${path}: expected an object, got ${JSON.stringify(value)}`);
      return;
    }
    if (isIntrinsic(value)) return;
    for (const [name, property] of Object.entries(properties))
      if (property.required && !(name in value)) out.push(`${path}.${name}: required, missing`);
    for (const [name, given] of Object.entries(value)) {
      const property = properties[name];
      if (property === undefined)
        out.push(`${path}.${name}: no such property (known: ${Object.keys(properties).sort().join(', ')})`);
      else checkValue(`${path}.${name}`, given, property.type, out);
    }
  };

  const checkReferences = (path: string, value: unknown): void => {
    if (Array.isArray(value)) value.forEach((v, i) => checkReferences(`${path}[${i}]`, v));
    if (!isObject(value)) return;
    for (const [key, inner] of Object.entries(value)) {
      if (
        key === 'Ref' &&
        typeof inner === 'string' &&
        !inner.startsWith('AWS::') &&
        !(inner in template.Resources) &&
        !(inner in (template.Parameters ?? {}))
      )
        problems.push(`${path}: Ref to ${inner}, which is no resource or parameter`);
      if (key === 'Fn::GetAtt') {
        const [id, attribute] = Array.isArray(inner) ? (inner as string[]) : String(inner).split(/\.(.*)/);
        checkAttribute(path, id!, attribute!);
      }
      if (key === 'Fn::Sub') {
        const text = Array.isArray(inner) ? inner[0] : inner;
        const bound = Array.isArray(inner) && isObject(inner[1]) ? Object.keys(inner[1]) : [];
        for (const [, name] of String(text).matchAll(/\$\{(?!!)([^}]+)\}/g)) {
          const [id, attribute] = name!.split(/\.(.*)/);
          if (name!.startsWith('AWS::') || bound.includes(name!)) continue;
          if (attribute === undefined) {
            if (!(id! in template.Resources) && !(id! in (template.Parameters ?? {})))
              problems.push(`${path}: Fn::Sub names \${${name}}, which is no resource or parameter`);
          } else checkAttribute(path, id!, attribute);
        }
      }
      checkReferences(`${path}.${key}`, inner);
    }
  };

  const checkAttribute = (path: string, id: string, attribute: string): void => {
    const target = template.Resources[id];
    if (target === undefined) {
      problems.push(`${path}: Fn::GetAtt on ${id}, which is no resource`);
      return;
    }
    const spec = typeOf(target.Type);
    if (spec && !(attribute in spec.attributes))
      problems.push(
        `${path}: ${id} (${target.Type}) has no attribute ${attribute} (known: ${Object.keys(spec.attributes).sort().join(', ')})`,
      );
  };

  for (const [id, resource] of Object.entries(template.Resources)) {
    for (const key of Object.keys(resource))
      if (!RESOURCE_KEYS.has(key)) problems.push(`${id}.${key}: no such resource attribute`);
    for (const dependency of [resource.DependsOn ?? []].flat() as string[])
      if (!(dependency in template.Resources)) problems.push(`${id}.DependsOn: ${dependency} is no resource`);
    const spec = typeOf(resource.Type);
    if (spec === undefined) {
      problems.push(`${id}.Type: ${resource.Type} is no CloudFormation resource type`);
      continue;
    }
    checkObject(
      `${id}.Properties`,
      resource.Properties ?? {},
      spec.properties as Record<string, SpecProperty>,
      problems,
    );
    checkReferences(`${id}.Properties`, resource.Properties ?? {});
  }
  return problems;
}
