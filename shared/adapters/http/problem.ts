import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { ErrorCode, ForbiddenError, IpamError } from '../../core/errors.ts';

/** Every domain error code and its HTTP status: a new code does not compile until it is mapped here. */
export const statusOf: Record<ErrorCode, number> = {
  InvalidArgument: 400,
  NotFound: 404,
  AlreadyAllocated: 409,
  AddressReleasing: 409,
  Conflict: 409,
  PoolNotEmpty: 409,
  PoolTerminating: 409,
  RangeFull: 409,
  NotInRange: 422,
  MismatchedNetwork: 422,
  PreconditionFailed: 412,
  Forbidden: 403,
  NotReady: 503,
  DeadlineExceeded: 408,
  Internal: 500,
  TooManyConsumers: 409,
  ClaimInUse: 409,
  SourceMismatch: 409,
  ClaimHasChildren: 409,
  OwnerGone: 409,
  ClaimHasConsumers: 409,
  MethodNotAllowed: 405,
};

const titles: Record<ErrorCode, string> = {
  InvalidArgument: 'Invalid argument',
  NotFound: 'Not found',
  AlreadyAllocated: 'Address already allocated',
  AddressReleasing: 'Address held after release',
  Conflict: 'Conflict',
  PoolNotEmpty: 'Pool not empty',
  PoolTerminating: 'Pool being deleted',
  RangeFull: 'Range full',
  NotInRange: 'Address not in range',
  MismatchedNetwork: 'Mismatched network',
  PreconditionFailed: 'Precondition failed',
  Forbidden: 'Forbidden',
  NotReady: 'Not ready',
  DeadlineExceeded: 'Commit deadline passed',
  Internal: 'Internal error',
  TooManyConsumers: 'Too many consumers',
  ClaimInUse: 'Claim in use',
  SourceMismatch: "Not the source claim's block",
  ClaimHasChildren: 'Claim is the source of a range',
  OwnerGone: 'Owner reported gone',
  ClaimHasConsumers: 'Claim has consumers',
  MethodNotAllowed: 'Method not allowed',
};

/** An RFC 9457 problem document: `{type, title, status, detail, code}`. */
export interface Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly code: ErrorCode;
  /** A 403's rule (ForbiddenError.rule): which rule of the pool's `access` refused the request. */
  readonly rule?: string;
}

/**
 * Maps any error to a problem response. Domain errors below 500 are exposed; anything else becomes a generic 500
 * whose details stay in the logs (middy's `expose` rule).
 */
export function problemOf(error: unknown): Problem {
  if (error instanceof IpamError && error.code !== ErrorCode.Internal) {
    const status = statusOf[error.code];
    const detail = status < 500 || error.code === ErrorCode.NotReady ? error.message : titles[error.code];
    const rule = error instanceof ForbiddenError ? { rule: error.rule } : {};
    return {
      type: `https://ipam.dev/problems/${error.code}`,
      title: titles[error.code],
      status,
      detail,
      code: error.code,
      ...rule,
    };
  }
  return {
    type: 'https://ipam.dev/problems/Internal',
    title: titles.Internal,
    status: 500,
    detail: 'The server failed to handle the request; it has been logged.',
    code: ErrorCode.Internal,
  };
}

/** The HTTP response of a problem. */
export function problemResponse(problem: Problem): APIGatewayProxyStructuredResultV2 {
  const headers: Record<string, string> = { 'content-type': 'application/problem+json' };
  if (problem.code === ErrorCode.NotReady) headers['retry-after'] = '1';
  // A newline at the end, as curl users expect of a JSON answer (a shell prompt is not glued to it).
  return { statusCode: problem.status, headers, body: `${JSON.stringify(problem)}\n` };
}
