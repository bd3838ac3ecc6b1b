import { readFileSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { parse } from 'yaml';

/**
 * Checks a response of the real handler against openapi.yaml: the operation its method and path name, the response
 * its status names, and that response's schema, with every object closed (a field the schema does not list is an
 * error). openapi.yaml leaves its objects open, so clients keep working when fields are added; the test closes them,
 * so the server cannot send a field the document does not name.
 */

type Schema = { [key: string]: unknown };
interface Operation {
  readonly responses: Record<string, { $ref?: string; content?: Record<string, { schema?: Schema }> }>;
}
interface Document {
  readonly paths: Record<string, Record<string, unknown>>;
  readonly components: {
    schemas: Record<string, Schema>;
    responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
  };
}

const doc = parse(readFileSync(new URL('../../openapi.yaml', import.meta.url), 'utf8')) as Document;
const SCHEMAS = '#/components/schemas/';
const DEFS = 'urn:ipam:openapi#/$defs/';

const isObject = (value: unknown): value is Schema =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A copy of `node` with its refs pointing at the shared definitions and its objects closed. `open`: a member of an
 * allOf, whose fields the allOf's other members complete (the allOf itself is closed, seeing all of them); a ref in
 * that place is copied in, so the shared, closed definition is not used there.
 */
function closed(node: unknown, open = false): unknown {
  if (Array.isArray(node)) return node.map((n) => closed(n));
  if (!isObject(node)) return node;
  if (typeof node.$ref === 'string') {
    if (!node.$ref.startsWith(SCHEMAS)) throw new Error(`unexpected $ref ${node.$ref}`);
    const name = node.$ref.slice(SCHEMAS.length);
    if (open) return closed(doc.components.schemas[name], true);
    const { $ref: _ref, ...siblings } = node;
    return { ...(closed(siblings) as Schema), $ref: DEFS + name };
  }
  const out: Schema = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === 'allOf' && Array.isArray(value)) out.allOf = value.map((member) => closed(member, true));
    else if (key === 'properties' && isObject(value))
      out.properties = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, closed(v)]));
    else if (key === 'example' || key === 'discriminator') continue;
    else out[key] = closed(value);
  }
  const isObjectSchema = out.properties !== undefined || out.allOf !== undefined;
  if (isObjectSchema && !open && out.additionalProperties === undefined && out.unevaluatedProperties === undefined) {
    out.unevaluatedProperties = false;
    out.type ??= 'object';
  }
  return out;
}

// ajv-formats is CommonJS: its default export arrives as the module object under some loaders.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as unknown as (ajv: Ajv2020) => void;
const ajv = new Ajv2020({ allErrors: true, strict: true });
addFormats(ajv);
ajv.addSchema({
  $id: 'urn:ipam:openapi',
  $defs: Object.fromEntries(Object.entries(doc.components.schemas).map(([name, s]) => [name, closed(s)])),
});

const templates = Object.keys(doc.paths).map((template) => ({
  template,
  pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
  // A literal segment beats a parameter where both match.
  literals: template.split('/').filter((s) => s && !s.startsWith('{')).length,
}));

const validators = new Map<string, ValidateFunction>();

function validatorFor(key: string, schema: Schema): ValidateFunction {
  let validate = validators.get(key);
  if (!validate) {
    validate = ajv.compile(closed(schema) as Schema);
    validators.set(key, validate);
  }
  return validate;
}

/** The response's problems against openapi.yaml, one sentence each; empty when it conforms. */
export function contractViolations(
  method: string,
  path: string,
  status: number,
  headers: Record<string, string>,
  body: unknown,
): string[] {
  const rawPath = path.split('?')[0]!;
  const match = templates.filter((t) => t.pattern.test(rawPath)).sort((a, b) => b.literals - a.literals)[0];
  const operation = match ? (doc.paths[match.template]![method.toLowerCase()] as Operation | undefined) : undefined;
  const where = `${method} ${rawPath} -> ${status}`;
  // A route the document does not have (the router's own 404), and a 5xx on any route (a throttled or failed
  // dependency: NotReady 503, Internal 500), are problem documents.
  const problem: Operation['responses'][string] = { $ref: '#/components/responses/Problem' };
  const documented = operation
    ? (operation.responses[String(status)] ?? (status >= 500 ? problem : undefined))
    : problem;
  if (!documented) return [`${where}: status ${status} is not documented for ${method} ${match!.template}`];
  const response = documented.$ref ? doc.components.responses[documented.$ref.split('/').pop()!]! : documented;
  const mediaType = (Object.entries(headers).find(([k]) => k.toLowerCase() === 'content-type')?.[1] ?? '')
    .split(';')[0]!
    .trim();
  const hasBody = body !== undefined && !(isObject(body) && Object.keys(body).length === 0 && status === 204);
  if (!response.content) return hasBody ? [`${where}: a body where openapi.yaml documents none`] : [];
  const content = response.content[mediaType];
  if (!content)
    return [
      `${where}: content type ${JSON.stringify(mediaType)} is not documented (${Object.keys(response.content).join(', ')})`,
    ];
  if (!content.schema || mediaType === 'application/cbor') return [];
  const validate = validatorFor(`${method} ${match?.template ?? '*'} ${status} ${mediaType}`, content.schema);
  if (validate(body)) return [];
  return (validate.errors ?? []).map(
    (e) =>
      `${where}: ${e.instancePath || '(body)'} ${e.message ?? ''}${e.params && 'unevaluatedProperty' in e.params ? ` (${String(e.params.unevaluatedProperty)})` : ''}`,
  );
}

/** Throws when the response does not conform, naming every problem. */
export function assertConforms(
  method: string,
  path: string,
  status: number,
  headers: Record<string, string>,
  body: unknown,
): void {
  const problems = contractViolations(method, path, status, headers, body);
  if (problems.length > 0)
    throw new Error(`the response does not conform to openapi.yaml:\n  ${problems.join('\n  ')}`);
}
