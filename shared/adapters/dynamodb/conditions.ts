/**
 * Condition expressions built from named clauses, so each write reads like a sentence:
 * `either(itemIsAbsent(), leaseHasExpired(now))` is "the lease is absent or has expired".
 */
export interface Condition {
  readonly expression: string;
  readonly names: Readonly<Record<string, string>>;
  readonly values: Readonly<Record<string, unknown>>;
}

/** The item does not exist. */
export function itemIsAbsent(): Condition {
  return { expression: 'attribute_not_exists(#pk)', names: { '#pk': 'PK' }, values: {} };
}

/** The item exists. */
export function itemExists(): Condition {
  return { expression: 'attribute_exists(#pk)', names: { '#pk': 'PK' }, values: {} };
}

/**
 * The item's expiry has passed: `expiresAt <= now`. Items without expiresAt never match.
 *
 *   createdAt ---------------- expiresAt | now: free for the taking (conditional write "absent OR expired")
 */
export function hasExpired(nowMs: number): Condition {
  return { expression: '#expiresAt <= :now', names: { '#expiresAt': 'expiresAt' }, values: { ':now': nowMs } };
}

/** The item has not expired: it has no expiresAt, or `expiresAt > now`. */
export function hasNotExpired(nowMs: number): Condition {
  return { expression: 'attribute_not_exists(#expiresAt) OR #expiresAt > :now', names: { '#expiresAt': 'expiresAt' }, values: { ':now': nowMs } };
}

/**
 * The item was created at or before a time (ISO strings of one format compare as times): old enough to act on.
 *
 *   createdAt ---- grace ---- | createdBefore = now - grace | now     (younger items may still be in flight)
 */
export function createdNoLaterThan(iso: string): Condition {
  return { expression: '#createdAt <= :createdBefore', names: { '#createdAt': 'createdAt' }, values: { ':createdBefore': iso } };
}

/** An attribute equals a value; `token` keeps placeholders unique when clauses are combined. */
export function attributeIs(attribute: string, value: unknown, token = attribute): Condition {
  return { expression: `#${token} = :${token}`, names: { [`#${token}`]: attribute }, values: { [`:${token}`]: value } };
}

/** The lease (or marker) belongs to the claim incarnation `uid`. */
export function heldByClaim(uid: string): Condition {
  return attributeIs('claimUid', uid, 'claimUid');
}

/** The claim is this incarnation. */
export function claimUidIs(uid: string): Condition {
  return attributeIs('uid', uid, 'uid');
}

/** The item is at this version. */
export function versionIs(version: number): Condition {
  return attributeIs('version', version, 'version');
}

function combine(operator: 'AND' | 'OR', clauses: readonly Condition[]): Condition {
  return {
    expression: clauses.map((c) => `(${c.expression})`).join(` ${operator} `),
    names: Object.assign({}, ...clauses.map((c) => c.names)),
    values: Object.assign({}, ...clauses.map((c) => c.values)),
  };
}

/** All clauses hold. */
export function both(...clauses: Condition[]): Condition {
  return combine('AND', clauses);
}

/** At least one clause holds. */
export function either(...clauses: Condition[]): Condition {
  return combine('OR', clauses);
}
