// Over 300 lines: the one error hierarchy, a class a code (two renewal outcomes as subclasses of theirs), each with the sentence a client reads.
/**
 * The domain's one error hierarchy. Each error carries a machine-readable `code` and the data that explains it;
 * the HTTP adapter maps codes to statuses in one table (shared/adapters/http/problem.ts).
 */
export const ErrorCode = {
  InvalidArgument: 'InvalidArgument',
  NotFound: 'NotFound',
  AlreadyAllocated: 'AlreadyAllocated',
  AddressReleasing: 'AddressReleasing',
  Conflict: 'Conflict',
  PoolNotEmpty: 'PoolNotEmpty',
  PoolTerminating: 'PoolTerminating',
  RangeFull: 'RangeFull',
  NotInRange: 'NotInRange',
  MismatchedNetwork: 'MismatchedNetwork',
  PreconditionFailed: 'PreconditionFailed',
  Forbidden: 'Forbidden',
  NotReady: 'NotReady',
  DeadlineExceeded: 'DeadlineExceeded',
  Internal: 'Internal',
  TooManyConsumers: 'TooManyConsumers',
  ClaimInUse: 'ClaimInUse',
  SourceMismatch: 'SourceMismatch',
  ClaimHasChildren: 'ClaimHasChildren',
  OwnerGone: 'OwnerGone',
  ClaimHasConsumers: 'ClaimHasConsumers',
  MethodNotAllowed: 'MethodNotAllowed',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Quotes client input inside an error sentence, cut to `max` characters: a huge input never makes a huge answer. */
export function quote(text: string, max = 64): string {
  return JSON.stringify(text.length > max ? `${text.slice(0, max)}...` : text);
}

/** Base of every domain error: `message` is a sentence a client may read. */
export class IpamError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Thrown when a request is malformed: bad JSON, unknown fields, wrong types, invalid addresses or CIDRs, bad cursors. */
export class InvalidArgumentError extends IpamError {
  constructor(
    message: string,
    readonly field?: string,
  ) {
    super(ErrorCode.InvalidArgument, message);
  }
}

/**
 * Thrown when a pool's `access` does not let the caller do what it asked (shared/core/access.ts); `rule` names the
 * rule that refused it, for a client to act on (`administrators-only`, `own-claims-only`, ...).
 */
export class ForbiddenError extends IpamError {
  constructor(
    readonly rule: string,
    message: string,
  ) {
    super(ErrorCode.Forbidden, message);
  }
}

/** Thrown when a pool, range, claim or address does not exist. */
export class NotFoundError extends IpamError {
  constructor(
    readonly kind: 'pool' | 'range' | 'claim' | 'address' | 'allocation' | 'route',
    readonly id: string,
    message?: string,
  ) {
    super(ErrorCode.NotFound, message ?? `${kind} ${JSON.stringify(id)} was not found.`);
  }
}

/**
 * Thrown by a renewal of a claim whose lease expired and whose addresses another claim has taken since: NotFound as
 * the claim is no longer held, told apart so a batch renewal can report it as Expired.
 */
export class ClaimExpiredError extends NotFoundError {
  constructor(name: string) {
    super(
      'claim',
      name,
      `Claim ${JSON.stringify(name)} expired and its addresses were taken by another claim; create a new claim.`,
    );
  }
}

/** Thrown when a specific address is held by another claim; carries the holder. */
export class AlreadyAllocatedError extends IpamError {
  constructor(
    readonly address: string,
    readonly holder?: { claim: string; owner?: { uid: string } },
  ) {
    super(
      ErrorCode.AlreadyAllocated,
      `Address ${address} is already allocated${holder ? ` to claim ${JSON.stringify(holder.claim)}` : ''}.`,
    );
  }
}

/**
 * Thrown when a specific address was released in a pool with a reuse delay and is still held for its previous owner
 * identity; anyone else may have it from `reusableAt` on.
 */
export class AddressReleasingError extends IpamError {
  constructor(
    readonly address: string,
    readonly previousOwner: { kind: string; name: string },
    readonly reusableAt: string,
  ) {
    super(
      ErrorCode.AddressReleasing,
      `Address ${address} was released recently and is held for its previous owner ${quote(previousOwner.kind)}/${quote(previousOwner.name)} until ${reusableAt}; only that owner may claim it before then.`,
    );
  }
}

/** Thrown when an object exists with a different spec, or a change contradicts the current state. */
export class ConflictError extends IpamError {
  constructor(message: string) {
    super(ErrorCode.Conflict, message);
  }
}

/**
 * Thrown by a batch renewal of a claim without an expiry (made without a TTL, or confirmed): a batch renews leases
 * and never gives a held claim one. A Conflict, told apart so the batch can report it as NotLeased.
 */
export class NotLeasedError extends ConflictError {
  constructor(readonly claim: string) {
    super(`Claim ${JSON.stringify(claim)} has no expiry: it is held until released and needs no renewal.`);
  }
}

/** Thrown when a pool still has claims and so cannot be deleted. */
export class PoolNotEmptyError extends IpamError {
  constructor(
    readonly pool: string,
    readonly claims: number,
  ) {
    super(
      ErrorCode.PoolNotEmpty,
      `Pool ${JSON.stringify(pool)} still has claims; release them before deleting the pool.`,
    );
  }
}

/**
 * Thrown when a pool is created under the name of a pool whose deletion is still being finished (its state is
 * Terminating): the name is free once the finalizer has removed what the old pool left.
 */
export class PoolTerminatingError extends IpamError {
  constructor(readonly pool: string) {
    super(
      ErrorCode.PoolTerminating,
      `Pool ${JSON.stringify(pool)} is being deleted; its name is free once the deletion has finished (the next reconciler run at the latest). Retry later.`,
    );
  }
}

/**
 * Thrown when no free address is left in the Ready ranges of a family, or, for a batch (`count`), fewer than it asked:
 * `batch` then says how many were asked for and how many were free when the allocator gave up.
 */
export class RangeFullError extends IpamError {
  constructor(
    readonly pool: string,
    readonly family: string,
    readonly unit: 'address' | 'block' = 'address',
    readonly batch?: { readonly asked: number; readonly free: number },
  ) {
    super(
      ErrorCode.RangeFull,
      batch
        ? `${batch.asked} ${family} ${unit === 'address' ? 'addresses' : 'blocks'} were asked for and ${batch.free} ${batch.free === 1 ? 'is' : 'are'} free in pool ${JSON.stringify(pool)}.`
        : `No free ${family} ${unit} is left in pool ${JSON.stringify(pool)}.`,
    );
  }
}

/** Thrown when a requested address lies in no Ready range of the pool, or is a reserved address of every range holding it. */
export class NotInRangeError extends IpamError {
  constructor(
    readonly address: string,
    message?: string,
  ) {
    super(
      ErrorCode.NotInRange,
      message ?? `Address ${address} is not a usable address of any Ready range of the pool.`,
    );
  }
}

/** Thrown when an address or family does not match what the pool or the claim's families allow. */
export class MismatchedNetworkError extends IpamError {
  /**
   * `absent`: the family the pool has no Ready range of, when that is the mismatch (not a client's address outside
   * the claim's families): a pool that grows takes a block of that family.
   */
  constructor(
    message: string,
    readonly absent?: 'IPv4' | 'IPv6',
  ) {
    super(ErrorCode.MismatchedNetwork, message);
  }
}

/**
 * Thrown when a precondition (`If-Match`) does not hold: `expected` says what it asked for ("version 1"), `actual`
 * what the object is ("version 2", or "absent").
 */
export class PreconditionFailedError extends IpamError {
  constructor(
    readonly expected: string,
    readonly actual: string,
  ) {
    super(
      ErrorCode.PreconditionFailed,
      actual === 'absent'
        ? `The object does not exist; If-Match asked for ${expected}.`
        : `The object is at ${actual}; If-Match asked for ${expected}.`,
    );
  }
}

/** Thrown when the store cannot serve now (throttling, timeouts); safe to retry later. */
export class NotReadyError extends IpamError {
  constructor(message = 'The address store is busy; retry the request shortly.', options?: { cause?: unknown }) {
    super(ErrorCode.NotReady, message, options);
  }
}

/** Thrown when a consumer would be a claim's 257th (MAX_CONSUMERS). */
export class TooManyConsumersError extends IpamError {
  constructor(
    readonly claim: string,
    readonly limit: number,
  ) {
    super(
      ErrorCode.TooManyConsumers,
      `Claim ${JSON.stringify(claim)} already has ${limit} consumers, the most a claim may have; remove one before adding another.`,
    );
  }
}

/** Thrown when a claim that has consumers is released directly: it is released when its last consumer leaves. */
export class ClaimInUseError extends IpamError {
  constructor(
    readonly claim: string,
    readonly consumers: number,
  ) {
    super(
      ErrorCode.ClaimInUse,
      `Claim ${JSON.stringify(claim)} has ${consumers} consumer${consumers === 1 ? '' : 's'}; it is released when the last one is removed (DELETE .../consumers/{uid}), not directly.`,
    );
  }
}

/**
 * Thrown when a claim would be committed at or after the deadline its client gave (x-ipam-commit-deadline): the
 * client has given up on it by then, and a claim it never learnt of would never be released.
 */
export class DeadlineExceededError extends IpamError {
  constructor(readonly deadline: string) {
    super(
      ErrorCode.DeadlineExceeded,
      `The request's commit deadline ${deadline} has passed; nothing was written. Retry with a new deadline.`,
    );
  }
}

/**
 * Thrown when a nested pool's range names a CIDR other than the block its source claim holds: a child range
 * is made only from the exact block, as AWS IPAM allocates a child pool's CIDR from its source pool.
 */
export class SourceMismatchError extends IpamError {
  constructor(
    readonly cidr: string,
    readonly source: { pool: string; claim: string },
    readonly blocks: readonly string[],
  ) {
    super(
      ErrorCode.SourceMismatch,
      `Claim ${JSON.stringify(source.claim)} of pool ${JSON.stringify(source.pool)} holds ${blocks.length ? blocks.join(', ') : 'no block'}, not ${cidr}; a range made from it must be exactly one of its blocks.`,
    );
  }
}

/**
 * Thrown when a claim whose block is another pool's range (a nested pool) would be released while that range lives,
 * or (`renewal`) given a TTL, under which it could expire out from under the range.
 */
export class ClaimHasChildrenError extends IpamError {
  constructor(
    readonly claim: string,
    readonly children: readonly { pool: string; range: string }[],
    renewal = false,
  ) {
    const those = children.length === 1 ? 'that range' : 'those ranges';
    super(
      ErrorCode.ClaimHasChildren,
      renewal
        ? `Claim ${JSON.stringify(claim)} holds the block of ${children.map((c) => `range ${JSON.stringify(c.range)} of pool ${JSON.stringify(c.pool)}`).join(', ')}; a claim with a child range is held without expiry and cannot take a TTL: renew it with ttlSeconds null (it stays permanent), or delete ${those} first.`
        : `Claim ${JSON.stringify(claim)} is the source of range ${children.map((c) => `${c.pool}/${c.range}`).join(', ')}; delete ${those} before releasing the claim.`,
    );
  }
}

/**
 * Thrown when a claim names an owner uid reported gone (DELETE .../owners/{uid}) less than the owner mark's window
 * ago: the reconciler would release such a claim within that window, so it is refused at once instead of answered
 * and then dropped. Owner uids are never reused (a Kubernetes uid names one object for ever), so such a request is a
 * late or retried one for an owner that no longer exists.
 */
export class OwnerGoneError extends IpamError {
  constructor(
    readonly uid: string,
    readonly reportedAt: string,
    readonly until: string,
  ) {
    super(
      ErrorCode.OwnerGone,
      `Owner uid ${quote(uid)} was reported gone at ${reportedAt} (DELETE .../owners/${uid.length > 64 ? `${uid.slice(0, 64)}...` : uid}): claims for it are refused until ${until}, so a late or retried request cannot take addresses for an owner that no longer exists. A new owner has a new uid.`,
    );
  }
}

/**
 * Thrown when a claim that has consumers would be given a TTL: it is held until its last consumer leaves, and an
 * expiry would let the reconciler release it under them.
 */
export class ClaimHasConsumersError extends IpamError {
  constructor(
    readonly claim: string,
    readonly consumers: number,
  ) {
    super(
      ErrorCode.ClaimHasConsumers,
      `Claim ${JSON.stringify(claim)} has ${consumers} consumer${consumers === 1 ? '' : 's'}; a claim with consumers is held until the last one leaves and cannot take a TTL: renew it with ttlSeconds null (it stays permanent), or remove its consumers first.`,
    );
  }
}

/** Thrown for a method no route of a known path takes: the methods it takes go in the answer's `Allow` header. */
export class MethodNotAllowedError extends IpamError {
  constructor(
    readonly method: string,
    readonly path: string,
    readonly allow: readonly string[],
  ) {
    super(ErrorCode.MethodNotAllowed, `${path} takes ${allow.join(', ')}, not ${method || '(no method)'}.`);
  }
}
