import { InvalidArgumentError } from '../../core/errors.ts';
import type { VersionMatch } from '../../core/use-cases/claims.ts';

/**
 * The entity tag of a versioned object (a claim, a legacy bitmap): a strong tag whose opaque part is the decimal
 * version as `String(version)` writes it, e.g. `"7"`. {@link versionsMatching} reads exactly this spelling back.
 */
export function etagOf(version: number): string {
  return `"${version}"`;
}

/** One entity tag of an If-Match list (RFC 9110 section 8.8.3): `W/"x"` is weak, `"x"` strong. */
export interface EntityTag {
  readonly weak: boolean;
  readonly opaque: string;
}

const malformed = () =>
  new InvalidArgumentError(
    'If-Match must be "*" or a comma-separated list of entity tags such as "1", quoted as the ETag header sends them.',
    'If-Match',
  );

/** etagc = %x21 / %x23-7E / obs-text (%x80-FF): any visible character but DQUOTE; ',' is allowed inside the quotes. */
function isEtagChar(code: number): boolean {
  return code === 0x21 || (code >= 0x23 && code <= 0x7e) || (code >= 0x80 && code <= 0xff);
}

const isOws = (ch: string | undefined) => ch === ' ' || ch === '\t';

/**
 * Parses an If-Match field value: `If-Match = "*" / #entity-tag` (RFC 9110 section 13.1.1). Empty list elements
 * are skipped, as section 5.6.1.2 asks of recipients; a value that names no tag at all is malformed.
 * @throws InvalidArgumentError when the value is not "*" or a list of entity tags
 */
export function parseIfMatch(value: string): '*' | EntityTag[] {
  const text = value.replace(/^[ \t]+|[ \t]+$/g, '');
  if (text === '*') return '*';
  const tags: EntityTag[] = [];
  let i = 0;
  while (i < text.length) {
    if (isOws(text[i]) || text[i] === ',') {
      i += 1;
      continue;
    }
    const weak = text.startsWith('W/', i);
    if (weak) i += 2;
    if (text[i] !== '"') throw malformed();
    const start = i + 1;
    let end = start;
    while (end < text.length && text[end] !== '"') {
      if (!isEtagChar(text.charCodeAt(end))) throw malformed();
      end += 1;
    }
    if (end >= text.length) throw malformed();
    tags.push({ weak, opaque: text.slice(start, end) });
    i = end + 1;
    while (isOws(text[i])) i += 1;
    if (i < text.length && text[i] !== ',') throw malformed();
  }
  if (tags.length === 0) throw malformed();
  return tags;
}

const decimalVersion = /^(0|[1-9][0-9]*)$/;

/**
 * The versions an If-Match value accepts, by the strong comparison RFC 9110 requires for If-Match (section 13.1.1):
 * a weak tag matches nothing, and a strong tag matches version v only when its opaque part is exactly what
 * {@link etagOf} writes for v, so `"01"`, `"1.0"`, `"+1"`, `"0x1"` and `"0o1"` match no version.
 * @throws InvalidArgumentError when the value is malformed
 */
export function versionsMatching(value: string): VersionMatch {
  const parsed = parseIfMatch(value);
  if (parsed === '*') return 'any';
  const versions: number[] = [];
  for (const tag of parsed) {
    if (tag.weak || !decimalVersion.test(tag.opaque)) continue;
    const version = Number(tag.opaque);
    if (Number.isSafeInteger(version)) versions.push(version);
  }
  return versions;
}
