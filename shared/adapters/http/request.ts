import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { InvalidArgumentError } from '../../core/errors.ts';

/** Largest accepted request body, in bytes. */
export const MAX_BODY_BYTES = 16 * 1024;

/** A field's expected JSON type. */
type FieldType = 'string' | 'boolean' | 'integer' | 'string[]' | 'object';

export interface FieldSpec {
  readonly type: FieldType;
  readonly required?: boolean;
  /** Fields of a nested object (type 'object'). */
  readonly fields?: Readonly<Record<string, FieldSpec>>;
}

/** Parses the JSON body strictly: size limit, an object, known fields only, each of its type. @throws InvalidArgumentError */
export function parseBody(event: APIGatewayProxyEventV2, fields: Readonly<Record<string, FieldSpec>>, optional = false): Record<string, unknown> {
  let text = event.body ?? '';
  if (event.isBase64Encoded && text) text = Buffer.from(text, 'base64').toString('utf8');
  if (Buffer.byteLength(text, 'utf8') > MAX_BODY_BYTES) throw new InvalidArgumentError(`The request body is larger than ${MAX_BODY_BYTES} bytes.`, 'body');
  if (text.trim() === '') {
    if (optional) return {};
    throw new InvalidArgumentError('The request needs a JSON object body.', 'body');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new InvalidArgumentError(`The request body is not valid JSON: ${(error as Error).message}.`, 'body');
  }
  return checkObject(value, fields, '');
}

function checkObject(value: unknown, fields: Readonly<Record<string, FieldSpec>>, path: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidArgumentError(`${path || 'The request body'} must be a JSON object.`, path || 'body');
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!Object.hasOwn(fields, key)) throw new InvalidArgumentError(`Unknown field ${JSON.stringify(path + key)}; known fields: ${Object.keys(fields).join(', ')}.`, path + key);
  }
  for (const [key, spec] of Object.entries(fields)) {
    const field = path + key;
    const v = record[key];
    if (v === undefined || v === null) {
      if (spec.required) throw new InvalidArgumentError(`Field ${JSON.stringify(field)} is required.`, field);
      delete record[key];
      continue;
    }
    const ok =
      spec.type === 'string' ? typeof v === 'string'
      : spec.type === 'boolean' ? typeof v === 'boolean'
      : spec.type === 'integer' ? typeof v === 'number' && Number.isInteger(v)
      : spec.type === 'string[]' ? Array.isArray(v) && v.length <= 256 && v.every((e) => typeof e === 'string')
      : typeof v === 'object' && !Array.isArray(v);
    if (!ok) throw new InvalidArgumentError(`Field ${JSON.stringify(field)} must be ${describe(spec.type)}.`, field);
    if (spec.type === 'object' && spec.fields) checkObject(v, spec.fields, `${field}.`);
  }
  return record;
}

function describe(type: FieldType): string {
  return { string: 'a string', boolean: 'true or false', integer: 'a whole number', 'string[]': 'an array of strings', object: 'an object' }[type];
}

/** Reads `limit` (1-1000) and `cursor` from the query string. @throws InvalidArgumentError */
export function pageParams(event: APIGatewayProxyEventV2): { limit?: number; cursor?: string } {
  const q = event.queryStringParameters ?? {};
  const out: { limit?: number; cursor?: string } = {};
  if (q.limit !== undefined) {
    const limit = Number(q.limit);
    if (!/^\d+$/.test(q.limit) || limit < 1 || limit > 1000) throw new InvalidArgumentError('limit must be a whole number from 1 to 1000.', 'limit');
    out.limit = limit;
  }
  if (q.cursor !== undefined) {
    if (q.cursor.length === 0 || q.cursor.length > 2048) throw new InvalidArgumentError('cursor is not valid: pass back the nextCursor of a previous page unchanged.', 'cursor');
    out.cursor = q.cursor;
  }
  return out;
}

/** A path parameter, URL-decoded. */
export function pathParam(event: APIGatewayProxyEventV2, name: string): string {
  const raw = event.pathParameters?.[name];
  if (raw === undefined || raw === '') throw new InvalidArgumentError(`The path needs a ${name}.`, name);
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new InvalidArgumentError(`The ${name} in the path is not valid URL encoding.`, name);
  }
}

/** A header, case-insensitively. */
export function header(event: APIGatewayProxyEventV2, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(event.headers ?? {})) if (key.toLowerCase() === wanted) return value;
  return undefined;
}
