import { InvalidArgumentError, quote } from './errors.ts';

/**
 * Claim labels: Kubernetes' label syntax with one wider limit (values up to 128 characters, so a 64-hex container ID
 * fits), and the equality-only selector that filters claim listings.
 *
 *   key    [prefix/]name   prefix: a DNS subdomain of at most 253 characters (lower case, dot-separated DNS labels)
 *                          name:   1-63 of [A-Za-z0-9-_.], alphanumeric at both ends
 *   value  empty, or 1-128 of [A-Za-z0-9-_.], alphanumeric at both ends
 *   count  at most 32 labels per claim
 *
 * Hand-rolled rather than taken from a library: the rules are four regular expressions, and the one library that
 * spells them (Kubernetes' apimachinery) is Go.
 */
export const LabelLimits = { count: 32, prefix: 253, name: 63, value: 128 } as const;

/** A claim's labels: key to value. */
export type Labels = Readonly<Record<string, string>>;

/** An equality selector: a claim matches when its labels hold every pair. */
export type LabelSelector = readonly (readonly [key: string, value: string])[];

const labelName = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why a label key breaks the rules, or undefined when it keeps them. */
function keyProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (
    prefix !== undefined &&
    (prefix.length === 0 || prefix.length > LabelLimits.prefix || !dnsSubdomain.test(prefix))
  ) {
    return `its prefix must be a DNS subdomain of at most ${LabelLimits.prefix} characters (lower-case letters, digits, '-' and '.', alphanumeric at both ends of each part)`;
  }
  if (name.length === 0 || name.length > LabelLimits.name || !labelName.test(name)) {
    return `its name${prefix !== undefined ? " (after the prefix and '/')" : ''} must be 1-${LabelLimits.name} letters, digits, '-', '_' or '.', starting and ending with a letter or digit`;
  }
  return undefined;
}

/** Why a label value breaks the rules, or undefined when it keeps them. */
function valueProblem(value: string): string | undefined {
  if (value === '') return undefined;
  if (value.length > LabelLimits.value || !labelName.test(value)) {
    return `its value must be empty or 1-${LabelLimits.value} letters, digits, '-', '_' or '.', starting and ending with a letter or digit`;
  }
  return undefined;
}

function checkPair(key: string, value: string, field: string): void {
  const problem = keyProblem(key) ?? valueProblem(value);
  if (problem) throw new InvalidArgumentError(`Label ${quote(key)} is not valid: ${problem}.`, `${field}.${key}`);
}

/**
 * Checks a labels object (from JSON): string values, valid keys and values, at most 32 labels; returns a copy.
 * @throws InvalidArgumentError naming the label and the rule it breaks
 */
export function checkLabels(value: unknown, field = 'labels'): Labels {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidArgumentError(`${field} must be an object of label keys to string values.`, field);
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > LabelLimits.count) {
    throw new InvalidArgumentError(
      `${field} holds ${entries.length} labels; a claim may have at most ${LabelLimits.count}.`,
      field,
    );
  }
  for (const [key, v] of entries) {
    if (typeof v !== 'string')
      throw new InvalidArgumentError(`Label ${quote(key)} must have a string value.`, `${field}.${key}`);
    checkPair(key, v, field);
  }
  return Object.fromEntries(entries) as Labels;
}

/**
 * Parses an equality selector, `k=v,k2=v2` (`==` also reads as equality, as in Kubernetes; spaces around the parts are
 * ignored; the empty selector selects everything). Inequality (`!=`), set forms (`in`, `notin`) and bare keys are
 * refused, and so are more pairs than a claim may have labels: none could match, and a long selector makes a filter
 * expression DynamoDB refuses (which would be a 500). @throws InvalidArgumentError
 */
export function parseLabelSelector(text: string, field = 'labelSelector'): LabelSelector {
  if (text.trim() === '') return [];
  const parts = text.split(',');
  if (parts.length > LabelLimits.count) {
    throw new InvalidArgumentError(
      `${field} holds ${parts.length} pairs; a claim has at most ${LabelLimits.count} labels, so a selector may hold at most ${LabelLimits.count}.`,
      field,
    );
  }
  return parts.map((part) => {
    const match = /^\s*([^=!\s]+)\s*==?\s*([^=!\s]*)\s*$/.exec(part);
    if (!match) {
      throw new InvalidArgumentError(
        `${field} must be a comma-separated list of key=value pairs (equality only: '!=', set forms and bare keys are not supported); ${quote(part.trim())} is not one.`,
        field,
      );
    }
    const [, key, value] = match as unknown as [string, string, string];
    checkPair(key, value, field);
    return [key, value] as const;
  });
}

/** Whether labels (absent: none) hold every pair of the selector. */
export function matchesSelector(labels: Labels | undefined, selector: LabelSelector): boolean {
  return selector.every(([key, value]) => labels !== undefined && Object.hasOwn(labels, key) && labels[key] === value);
}

/** Labels as `k=v,k2=v2` (keys in order): the selector that matches them, and how listings print them. */
export function formatLabels(labels: Labels | undefined): string {
  return Object.keys(labels ?? {})
    .sort()
    .map((k) => `${k}=${labels![k]}`)
    .join(',');
}
