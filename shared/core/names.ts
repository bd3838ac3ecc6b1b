import { InvalidArgumentError } from './errors.ts';

const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Checks a DNS-1123 label (pool and claim names): lower case alphanumerics and '-', at most 63 characters. */
export function checkDnsLabel(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 63 || !dnsLabel.test(value)) {
    throw new InvalidArgumentError(`${field} must be 1-63 lower-case letters, digits or '-', starting and ending with a letter or digit.`, field);
  }
  return value;
}

const rangeName = /^[A-Za-z0-9]([A-Za-z0-9._:-]*[A-Za-z0-9])?$/;

/** Checks a range name: letters, digits, '.', ':', '_' and '-' (so the default name, the CIDR with '/' as '-', fits). */
export function checkRangeName(value: unknown, field = 'name'): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 100 || !rangeName.test(value)) {
    throw new InvalidArgumentError(`${field} must be 1-100 letters, digits, '.', ':', '_' or '-', starting and ending with a letter or digit.`, field);
  }
  return value;
}

/**
 * Builds a name from generateName: `<generateName>-<5 random chars>`, the prefix truncated so the whole fits in
 * 63 characters. A trailing '-' of the prefix is dropped so the separator is never doubled.
 */
export function generatedName(prefix: string, suffix: string): string {
  const base = prefix.replace(/-+$/, '').slice(0, 63 - 1 - suffix.length).replace(/-+$/, '');
  return `${base}-${suffix}`;
}
