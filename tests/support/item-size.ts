/**
 * The size DynamoDB counts for an item, by its documented rules (Developer Guide, "Item sizes and formats"): each
 * attribute name's UTF-8 bytes plus its value's; a string its UTF-8 bytes; a number about one byte per two
 * significant digits plus one; a boolean or null one byte; a list or map 3 bytes plus one per element, plus the
 * elements (a map's element names counted as attribute names). Written here because the MemoryTable does not model the
 * 400 KB cap; on DynamoDB Local the write itself is refused beyond it.
 */
export function dynamoItemBytes(item: Readonly<Record<string, unknown>>): number {
  return Object.entries(item).reduce((sum, [name, value]) => sum + utf8(name) + valueBytes(value), 0);
}

const utf8 = (text: string): number => new TextEncoder().encode(text).length;

function valueBytes(value: unknown): number {
  if (typeof value === 'string') return utf8(value);
  if (typeof value === 'number')
    return Math.ceil(String(Math.abs(value)).replace(/[.-]/g, '').replace(/^0+/, '').length / 2) + 1;
  if (typeof value === 'boolean' || value === null || value === undefined) return 1;
  if (value instanceof Uint8Array) return value.length;
  if (Array.isArray(value)) return 3 + value.reduce((sum: number, v) => sum + 1 + valueBytes(v), 0);
  if (typeof value === 'object')
    return 3 + Object.entries(value).reduce((sum, [k, v]) => sum + 1 + utf8(k) + valueBytes(v), 0);
  throw new Error(`dynamoItemBytes: cannot size ${typeof value}`);
}
