import { InvalidArgumentError } from './errors.ts';

/**
 * The rules for every name and identifier a client can send, in one place. Each name ends up inside a DynamoDB key
 * (keys.ts in the DynamoDB adapter spells them: partition keys hold at most 2048 bytes, sort keys 1024), so every
 * name is bounded here, far below those limits, before any use case reads or writes a key with it:
 *
 *   name            rule                                                                  longest key it makes
 *   pool, claim     DNS-1123 label: 1-63 of [a-z0-9-], alphanumeric at both ends          CLAIM#<63>#<63>
 *   generateName    1-63 of [a-z0-9-], alphanumeric first (a trailing '-' is dropped)     GEN#<63>#<253 uid>#<63>
 *   range           1-100 of [A-Za-z0-9._:-], alphanumeric at both ends, or the name a    RANGE#<100>
 *                   range gets by default (its CIDR with '/' as '-', e.g. '::-64')
 *   owner kind, name, uid   1-253 characters of well-formed Unicode (no lone surrogates)  OWNER#<63>#<253 x 3 bytes>
 *
 * Addresses and CIDRs are parsed (shared/core/ip), which bounds them too.
 */
export const NameLimits = { label: 63, rangeName: 100, ownerField: 253 } as const;

const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Checks a DNS-1123 label (pool and claim names): lower case alphanumerics and '-', at most 63 characters. */
export function checkDnsLabel(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > NameLimits.label || !dnsLabel.test(value)) {
    throw new InvalidArgumentError(
      `${field} must be 1-63 lower-case letters, digits or '-', starting and ending with a letter or digit.`,
      field,
    );
  }
  return value;
}

/**
 * Checks a generateName: 1-63 lower-case letters, digits or '-', starting with a letter or digit; it may end with
 * '-' (Kubernetes' habit, `web-`), which {@link generatedName} drops. Bounded as a whole, trailing dashes included,
 * because the prefix itself is part of a key (the generated-name marker).
 */
export function checkGenerateName(value: unknown, field = 'generateName'): string {
  if (typeof value !== 'string' || value.length > NameLimits.label || !dnsLabel.test(value.replace(/-+$/, ''))) {
    throw new InvalidArgumentError(
      `${field} must be 1-63 lower-case letters, digits or '-', starting with a letter or digit.`,
      field,
    );
  }
  return value;
}

const rangeName = /^[A-Za-z0-9]([A-Za-z0-9._:-]*[A-Za-z0-9])?$/;

/** Checks a range name: letters, digits, '.', ':', '_' and '-' (so the default name, the CIDR with '/' as '-', fits). */
export function checkRangeName(value: unknown, field = 'name'): string {
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    value.length > NameLimits.rangeName ||
    !rangeName.test(value)
  ) {
    throw new InvalidArgumentError(
      `${field} must be 1-100 letters, digits, '.', ':', '_' or '-', starting and ending with a letter or digit.`,
      field,
    );
  }
  return value;
}

/** The name a range gets when none is given: its canonical CIDR with '/' as '-'. */
export function defaultRangeName(cidr: string): string {
  return cidr.replace('/', '-');
}

// A default range name of an IPv6 CIDR may start with ':' ('::-0', '::1-128'), which checkRangeName refuses for a
// chosen name; such names are still names of existing ranges, so a reference accepts them too.
const defaultNameShape = /^[0-9a-f:.]{2,39}-\d{1,3}$/;

/**
 * Checks a reference to an existing range (a path segment or a query parameter): any name {@link checkRangeName}
 * accepts, or a range's default name.
 */
export function checkRangeRef(value: unknown, field: string): string {
  if (typeof value === 'string' && defaultNameShape.test(value)) return value;
  return checkRangeName(value, field);
}

/** Matches a lone UTF-16 surrogate: with the `u` flag a well-formed pair is one code point and does not match. */
const loneSurrogate = /\p{Cs}/u;

/**
 * Checks an owner field (kind, name, uid): 1-253 characters of well-formed Unicode. A lone surrogate would be
 * stored as U+FFFD by the UTF-8 encoding on the wire, so the owner could never be matched again.
 */
export function checkOwnerField(value: unknown, field: string): string {
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    value.length > NameLimits.ownerField ||
    loneSurrogate.test(value)
  ) {
    throw new InvalidArgumentError(`${field} must be 1-253 characters of well-formed Unicode.`, field);
  }
  return value;
}

/**
 * Builds a name from generateName: `<generateName>-<5 random chars>`, the prefix truncated so the whole fits in
 * 63 characters. A trailing '-' of the prefix is dropped so the separator is never doubled.
 */
export function generatedName(prefix: string, suffix: string): string {
  const base = prefix
    .replace(/-+$/, '')
    .slice(0, 63 - 1 - suffix.length)
    .replace(/-+$/, '');
  return `${base}-${suffix}`;
}
