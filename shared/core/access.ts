import { ForbiddenError, InvalidArgumentError, quote } from './errors.ts';

/**
 * Who may do what inside a pool. IAM at the route (docs/deploy.md) decides who may call a route at all; a pool's
 * `access` decides, among those callers, who may do what inside it:
 *
 *   role            may                                                       a pool without `access`
 *   administrator   everything: ranges, delete the pool, release or renew      every caller IAM lets in is
 *                   any claim, release any owner's claims                      an administrator (the behaviour
 *   allocator       create claims; renew and release the claims it created;     before `access` existed)
 *                   owner release releases only the claims it created
 *   anyone else     nothing in the pool, and the pool is left out of GET /v1/pools
 *
 * Another pool's use of a pool's blocks (a nested range, growth) needs the parent's consent: a role in its `access`,
 * or, without `access`, its `openToChildPools` (requireChildPoolConsent).
 *
 * Principals are matched by ARN pattern (`*` any run of characters, `?` one), against the caller's normalized ARN: an
 * assumed role's session is not part of it (`arn:aws:iam::123456789012:role/ci`, not `...:assumed-role/ci/build-7`),
 * so a claim made by one session of a role may be released by another session of the same role.
 */
export interface Principal {
  /** The IAM user or role (an assumed role normalized to its role ARN, without the role's path), or root. */
  readonly arn: string;
  /** An assumed role's session name, kept apart from the role. */
  readonly session?: string;
}

export interface PoolAccess {
  /** ARN patterns of the principals that administer the pool. */
  readonly administrators: readonly string[];
  /** ARN patterns of the principals that may allocate in the pool. */
  readonly allocators: readonly string[];
}

export const Role = { Administrator: 'administrator', Allocator: 'allocator', None: 'none' } as const;
export type Role = (typeof Role)[keyof typeof Role];

/** Most patterns per list, and longest pattern: bounds what a pool item carries. */
export const AccessLimits = { patterns: 32, patternLength: 256 } as const;

const arnShape = /^arn:(aws[a-z-]*):(iam|sts)::(\d{12}):([\x21-\x7e]{1,512})$/;

/**
 * Reads a caller's ARN as API Gateway's IAM authorizer (or the local stack's header) gives it, and normalizes it: an
 * assumed role's `arn:<p>:sts::<acct>:assumed-role/<role>/<session>` becomes the role `arn:<p>:iam::<acct>:role/<role>`
 * with `session` apart. Users, root and federated users are kept as they are.
 * @throws InvalidArgumentError for text that is not an IAM or STS principal ARN
 */
export function principalFromArn(text: string, field = 'principal'): Principal {
  const m = arnShape.exec(text);
  if (!m)
    throw new InvalidArgumentError(
      `The ${field} ${quote(text)} is not an IAM or STS principal ARN (arn:aws:iam::123456789012:role/name).`,
      field,
    );
  const [, partition, service, account, resource] = m as unknown as [string, string, string, string, string];
  if (service === 'sts' && resource.startsWith('assumed-role/')) {
    const [, role, ...session] = resource.split('/');
    if (!role || session.length === 0)
      throw new InvalidArgumentError(`The ${field} ${quote(text)} is an assumed role without a session.`, field);
    return { arn: `arn:${partition}:iam::${account}:role/${role}`, session: session.join('/') };
  }
  return { arn: text };
}

/** Whether an ARN matches a pattern: `*` any run of characters (slashes included), `?` exactly one; case-sensitive. */
export function arnMatches(pattern: string, arn: string): boolean {
  // Iterative wildcard match (no regular expression built from client text, so no backtracking blow-up).
  let p = 0;
  let a = 0;
  let star = -1;
  let mark = 0;
  while (a < arn.length) {
    if (p < pattern.length && (pattern[p] === '?' || pattern[p] === arn[a])) {
      p += 1;
      a += 1;
    } else if (p < pattern.length && pattern[p] === '*') {
      star = p;
      mark = a;
      p += 1;
    } else if (star >= 0) {
      p = star + 1;
      mark += 1;
      a = mark;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern[p] === '*') p += 1;
  return p === pattern.length;
}

function checkPatterns(value: unknown, field: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.length > AccessLimits.patterns)
    throw new InvalidArgumentError(`${field} must be a list of at most ${AccessLimits.patterns} ARN patterns.`, field);
  return value.map((pattern: unknown, i) => {
    if (
      typeof pattern !== 'string' ||
      !pattern.startsWith('arn:') ||
      pattern.length > AccessLimits.patternLength ||
      !/^[\x21-\x7e]+$/.test(pattern)
    ) {
      throw new InvalidArgumentError(
        `${field}[${i}] must be an ARN pattern: 'arn:' then up to ${AccessLimits.patternLength} printable characters, '*' and '?' as wildcards.`,
        `${field}[${i}]`,
      );
    }
    return pattern;
  });
}

/** Checks a pool's `access` as a client sent it. @throws InvalidArgumentError */
export function checkAccess(value: { administrators?: unknown; allocators?: unknown }): PoolAccess {
  const access = {
    administrators: checkPatterns(value.administrators, 'access.administrators'),
    allocators: checkPatterns(value.allocators, 'access.allocators'),
  };
  if (access.administrators.length === 0) {
    // A pool nobody administers could never have a range added or be deleted again.
    throw new InvalidArgumentError(
      'access.administrators must name at least one ARN pattern.',
      'access.administrators',
    );
  }
  return access;
}

/** The caller's role in a pool. Without `access`, everyone IAM lets in administers it. */
export function roleIn(access: PoolAccess | undefined, caller: Principal | undefined): Role {
  if (access === undefined) return Role.Administrator;
  if (caller === undefined) return Role.None;
  if (access.administrators.some((p) => arnMatches(p, caller.arn))) return Role.Administrator;
  if (access.allocators.some((p) => arnMatches(p, caller.arn))) return Role.Allocator;
  return Role.None;
}

const who = (caller: Principal | undefined) => (caller ? caller.arn : 'an unidentified caller');

/** Refuses a caller who is neither an administrator nor an allocator of the pool (reads and claims). @throws ForbiddenError */
export function requireMember(pool: { name: string; access?: PoolAccess }, caller: Principal | undefined): Role {
  const role = roleIn(pool.access, caller);
  if (role === Role.None)
    throw new ForbiddenError(
      'members-only',
      `Pool ${JSON.stringify(pool.name)} names its administrators and allocators, and ${who(caller)} is neither.`,
    );
  return role;
}

/** Refuses a caller who does not administer the pool (ranges, deleting the pool). @throws ForbiddenError */
export function requireAdministrator(
  pool: { name: string; access?: PoolAccess },
  caller: Principal | undefined,
  what: string,
): void {
  if (roleIn(pool.access, caller) !== Role.Administrator) {
    throw new ForbiddenError(
      'administrators-only',
      `Only an administrator of pool ${JSON.stringify(pool.name)} may ${what}; ${who(caller)} is not one.`,
    );
  }
}

/** What another pool does with a parent's blocks, in a refusal's sentence. */
export type ChildPoolUse = 'make a range from a block of' | 'grow from' | 'take a block of';

/**
 * Refuses a use of a pool's blocks from another pool's routes (a nested range's `source`, a growth rule, a growth)
 * without the parent's consent. Those writes arrive on the child's path, where IAM never sees the parent, so a
 * parent without `access` (every caller its administrator) must opt in with `openToChildPools`; a parent with
 * `access` consents through it: the caller must be one of its members. @throws ForbiddenError
 */
export function requireChildPoolConsent(
  parent: { name: string; access?: PoolAccess; openToChildPools?: true },
  caller: Principal | undefined,
  use: ChildPoolUse,
): void {
  if (parent.access === undefined) {
    if (parent.openToChildPools) return;
    throw new ForbiddenError(
      'parent-consent',
      `Pool ${JSON.stringify(parent.name)} has no access list and is not open to child pools, so no other pool may ${use} it; create it with "openToChildPools": true, or with an access list naming who may.`,
    );
  }
  if (roleIn(parent.access, caller) === Role.None)
    throw new ForbiddenError(
      'members-only',
      `Only a member of pool ${JSON.stringify(parent.name)} may ${use} it from another pool; ${who(caller)} is neither an administrator nor an allocator of it.`,
    );
}

/**
 * Refuses to let a caller renew or release a claim it did not create, unless it administers the pool. A claim made
 * before `createdBy` existed has no creator: only an administrator may touch it. @throws ForbiddenError
 */
export function requireCreatorOrAdministrator(
  pool: { name: string; access?: PoolAccess },
  claim: { name: string; createdBy?: Principal },
  caller: Principal | undefined,
  what: string,
): void {
  const role = requireMember(pool, caller);
  if (role === Role.Administrator) return;
  if (claim.createdBy !== undefined && caller !== undefined && claim.createdBy.arn === caller.arn) return;
  throw new ForbiddenError(
    'own-claims-only',
    `In pool ${JSON.stringify(pool.name)} an allocator may ${what} only the claims it created; claim ${JSON.stringify(claim.name)} was created by ${claim.createdBy?.arn ?? 'an unrecorded principal'}, not ${who(caller)}.`,
  );
}
