// Over 300 lines: every named clause with its DynamoDB rendering and its in-memory evaluation, which must agree, side by side.
/**
 * Conditions of the table's writes, as data built from named clauses, so each write reads like a sentence:
 * `either(itemIsAbsent(), hasExpired(now))` is "the item is absent or has expired". Being data, one condition is
 * rendered to a DynamoDB expression by the SDK engine (sdk-table.ts) and evaluated on an item by the in-memory engine
 * (memory/memory-table.ts): the two engines can never read a clause differently.
 */
import type { BitmapExpectation } from '../../core/bitmap/ports.ts';
import type { LabelSelector } from '../../core/labels.ts';
import type { HoldIdentity } from '../../core/model.ts';

export type Comparison = '=' | '<>' | '<' | '<=' | '>' | '>=';

/** A scalar a condition compares with (DynamoDB S, N or BOOL). */
export type Scalar = string | number | boolean;

/** A top-level attribute, or a document path into nested maps (`['spec', 'labels', key]`: spec.labels[key]). */
export type Attribute = string | readonly string[];

export type Condition =
  | { readonly op: 'exists'; readonly attribute: Attribute }
  | { readonly op: 'notExists'; readonly attribute: Attribute }
  | { readonly op: 'compare'; readonly attribute: Attribute; readonly comparison: Comparison; readonly value: Scalar }
  | { readonly op: 'and' | 'or'; readonly clauses: readonly Condition[] };

/** The item does not exist. */
export function itemIsAbsent(): Condition {
  return { op: 'notExists', attribute: 'PK' };
}

/** The item exists. */
export function itemExists(): Condition {
  return { op: 'exists', attribute: 'PK' };
}

/** The pool item exists and its deletion has not begun (a Terminating pool has a `state`). */
export function poolIsActive(): Condition {
  return both(itemExists(), { op: 'notExists', attribute: 'state' });
}

/** The pool item exists and is Terminating (the finalizer's last write). */
export function poolIsTerminating(): Condition {
  return attributeIs('state', 'Terminating');
}

/**
 * The item's expiry has passed: `expiresAt <= now`. Items without expiresAt never match.
 *
 *   createdAt ---------------- expiresAt | now: free for the taking (conditional write "absent OR expired")
 */
export function hasExpired(nowMs: number): Condition {
  return { op: 'compare', attribute: 'expiresAt', comparison: '<=', value: nowMs };
}

/**
 * The item's expiry is still the one read: `expiresAt = ms`, or no expiresAt when it was read without one.
 *
 *   read: expiresAt = ms | write: only if still ms (a renewal judged "later" against the expiry it replaces)
 */
export function expiresAtIs(ms: number | undefined): Condition {
  return ms === undefined ? { op: 'notExists', attribute: 'expiresAt' } : attributeIs('expiresAt', ms);
}

/** The item has not expired: it has no expiresAt, or `expiresAt > now`. */
export function hasNotExpired(nowMs: number): Condition {
  return either(
    { op: 'notExists', attribute: 'expiresAt' },
    { op: 'compare', attribute: 'expiresAt', comparison: '>', value: nowMs },
  );
}

/** Nobody holds the item now: it is absent, or what is there has expired (a lease, a claim, a marker). */
export function isFreeAt(nowMs: number): Condition {
  return either(itemIsAbsent(), hasExpired(nowMs));
}

/**
 * The item was created at or before a time (ISO strings of one format compare as times): old enough to act on.
 *
 *   createdAt ---- grace ---- | createdBefore = now - grace | now     (younger items may still be in flight)
 */
export function createdNoLaterThan(iso: string): Condition {
  return { op: 'compare', attribute: 'createdAt', comparison: '<=', value: iso };
}

/** A number attribute is absent or below a value (a mark that only moves forward). */
export function isAbsentOrBelow(attribute: string, value: number): Condition {
  return either({ op: 'notExists', attribute }, { op: 'compare', attribute, comparison: '<', value });
}

/** A number attribute is absent or above a value (a note of the oldest of something, only moved back). */
export function isAbsentOrAbove(attribute: string, value: number): Condition {
  return either({ op: 'notExists', attribute }, { op: 'compare', attribute, comparison: '>', value });
}

/** An attribute is greater than a value (ISO times of one format compare as times). */
export function isAfter(attribute: string, value: Scalar): Condition {
  return { op: 'compare', attribute, comparison: '>', value };
}

/** An attribute (or a value inside a map) equals a value. */
export function attributeIs(attribute: Attribute, value: Scalar): Condition {
  return { op: 'compare', attribute, comparison: '=', value };
}

/** The lease (or marker) belongs to the claim incarnation `uid`. */
export function belongsToClaim(uid: string): Condition {
  return attributeIs('claimUid', uid);
}

/**
 * The lease item holds a released address for this previous owner identity: its kind and name (a recreated workload
 * has a new uid) and the principal that created its claim (the IAM user or role; none for an unsigned request), so
 * that another allocator naming the same owner does not take it. That owner may take it back before the reuse delay
 * is over.
 *
 *   released ---- held for kind/name/creator ---- reusableAt (= expiresAt) ---- free for anyone
 */
export function heldForOwner(identity: HoldIdentity): Condition {
  // A lease written before creators were recorded (no createdBy) is held for the owner alone, as it was then.
  const unrecorded: Condition = { op: 'notExists', attribute: 'createdBy' };
  const creator =
    identity.creatorArn === undefined
      ? unrecorded
      : either(attributeIs(['createdBy', 'arn'], identity.creatorArn), unrecorded);
  return both(
    attributeIs('state', 'Released'),
    attributeIs('ownerKind', identity.kind),
    attributeIs('ownerName', identity.name),
    creator,
  );
}

/** An address this owner identity may take: nobody holds it (absent or expired), or it is held for this owner. */
export function isTakeableBy(identity: HoldIdentity, nowMs: number): Condition {
  return either(itemIsAbsent(), hasExpired(nowMs), heldForOwner(identity));
}

/** A Released lease item (any owner). */
export function isReleasedLease(): Condition {
  return attributeIs('state', 'Released');
}

/** The claim's labels (stored in its spec) hold every pair of the selector. */
export function hasLabels(selector: LabelSelector): Condition {
  return both(...selector.map(([key, value]) => attributeIs(['spec', 'labels', key], value)));
}

/** The claim is this incarnation. */
export function claimUidIs(uid: string): Condition {
  return attributeIs('uid', uid);
}

/**
 * The claim is as it was read: this incarnation, at `version`, and pinned or not as it was (an identical request that
 * answered it meanwhile pinned it, and a release decided on the unpinned read no longer applies).
 */
export function claimIsAsRead(claim: { readonly uid: string; readonly pinned?: true }, version: number): Condition {
  return both(
    claimUidIs(claim.uid),
    versionIs(version),
    claim.pinned ? attributeIs('pinned', true) : { op: 'notExists', attribute: 'pinned' },
  );
}

/** Whether a claim read again is still the one a release conditioned on `version` was decided on (claimIsAsRead). */
export function stillAsRead(
  current: { readonly version: number; readonly pinned?: true },
  read: { readonly pinned?: true },
  version: number,
): boolean {
  return current.version === version && current.pinned === read.pinned;
}

/** The claim is the source of no range of another pool (Claim.children): it may be released. */
export function hasNoChildren(): Condition {
  return { op: 'notExists', attribute: 'children' };
}

/** The claim lists no consumer (it never had one: the last one's leaving releases it). */
export function hasNoConsumers(): Condition {
  return { op: 'notExists', attribute: 'consumers' };
}

/** The item is at this version. */
export function versionIs(version: number): Condition {
  return attributeIs('version', version);
}

/** A bitmap write's precondition: "still at the version I read" or "still absent". */
export function bitmapIs(expected: BitmapExpectation): Condition {
  return expected === 'absent' ? itemIsAbsent() : both(itemExists(), versionIs(expected.version));
}

/** All clauses hold. */
export function both(...clauses: Condition[]): Condition {
  return { op: 'and', clauses };
}

/** At least one clause holds. */
export function either(...clauses: Condition[]): Condition {
  return { op: 'or', clauses };
}

/** The value at an attribute or document path of an item; undefined when any step is missing or not a map. */
function valueAt(item: Readonly<Record<string, unknown>> | undefined, attribute: Attribute): unknown {
  if (typeof attribute === 'string') return item?.[attribute];
  let value: unknown = item;
  for (const step of attribute) {
    if (
      typeof value !== 'object' ||
      value === null ||
      Array.isArray(value) ||
      value instanceof Uint8Array ||
      !Object.hasOwn(value, step)
    )
      return undefined;
    value = (value as Record<string, unknown>)[step];
  }
  return value;
}

/** Whether an item (undefined: absent) satisfies a condition, by DynamoDB's rules: a comparison with a missing attribute or a value of another type is false. */
export function holds(condition: Condition, item: Readonly<Record<string, unknown>> | undefined): boolean {
  switch (condition.op) {
    case 'exists':
      return valueAt(item, condition.attribute) !== undefined;
    case 'notExists':
      return valueAt(item, condition.attribute) === undefined;
    case 'and':
      return condition.clauses.every((c) => holds(c, item));
    case 'or':
      return condition.clauses.some((c) => holds(c, item));
    case 'compare': {
      const actual = valueAt(item, condition.attribute);
      if (typeof actual !== typeof condition.value) return false;
      const order = compareScalars(actual as Scalar, condition.value);
      switch (condition.comparison) {
        case '=':
          return order === 0;
        case '<>':
          return order !== 0;
        case '<':
          return order < 0;
        case '<=':
          return order <= 0;
        case '>':
          return order > 0;
        case '>=':
          return order >= 0;
      }
    }
  }
}

/** Orders two scalars of one type as DynamoDB does: strings by their UTF-8 bytes (not JavaScript's UTF-16 units). */
function compareScalars(a: Scalar, b: Scalar): number {
  if (typeof a === 'string' && typeof b === 'string')
    return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
  return a === b ? 0 : a < b ? -1 : 1;
}

/** A condition as a DynamoDB expression with its placeholders (`#n0`, `:v0`, numbered in order of appearance). */
export interface RenderedCondition {
  readonly expression: string;
  readonly names: Record<string, string>;
  readonly values: Record<string, Scalar>;
}

/** Renders a condition; `prefix` keeps placeholders apart when one request carries several expressions. */
export function render(condition: Condition, prefix = ''): RenderedCondition {
  const names: Record<string, string> = {};
  const values: Record<string, Scalar> = {};
  const nameOf = (attribute: string): string => {
    const found = Object.entries(names).find(([, a]) => a === attribute);
    if (found) return found[0];
    const placeholder = `#${prefix}n${Object.keys(names).length}`;
    names[placeholder] = attribute;
    return placeholder;
  };
  // A document path is one placeholder per step, joined by '.', so a step may hold any character ('/', '.').
  const pathOf = (attribute: Attribute): string =>
    typeof attribute === 'string' ? nameOf(attribute) : attribute.map(nameOf).join('.');
  const valueOf = (value: Scalar): string => {
    const placeholder = `:${prefix}v${Object.keys(values).length}`;
    values[placeholder] = value;
    return placeholder;
  };
  const walk = (c: Condition): string => {
    switch (c.op) {
      case 'exists':
        return `attribute_exists(${pathOf(c.attribute)})`;
      case 'notExists':
        return `attribute_not_exists(${pathOf(c.attribute)})`;
      case 'compare':
        return `${pathOf(c.attribute)} ${c.comparison} ${valueOf(c.value)}`;
      case 'and':
      case 'or':
        return c.clauses.map((clause) => `(${walk(clause)})`).join(c.op === 'and' ? ' AND ' : ' OR ');
    }
  };
  return { expression: walk(condition), names, values };
}
