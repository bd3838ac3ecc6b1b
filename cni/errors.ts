import { ConfigError, ConnectionError, HttpStatusError, ProblemError } from '../cli/errors.ts';

/**
 * The CNI error result (SPEC.md, "Error"): printed on stdout with a non-zero exit. Codes 0-99 are the spec's
 * well-known ones; 100 and up are this plugin's own.
 */
export const CniCode = {
  IncompatibleVersion: 1,
  UnsupportedField: 2,
  UnknownContainer: 3,
  InvalidEnvironment: 4,
  IoFailure: 5,
  DecodeFailure: 6,
  InvalidConfig: 7,
  TryAgainLater: 11,
  NotAvailable: 50,
  /** The pool has no free address for a family the attachment needs (the service's RangeFull). */
  PoolExhausted: 100,
  /** The service refused the request for a reason a retry will not fix (a conflicting claim, a missing permission). */
  Refused: 101,
  /** CHECK found the attachment's claim missing or holding other addresses than prevResult lists. */
  CheckFailed: 102,
  /** A failure of the plugin itself (a bug): not worth a retry. */
  Internal: 103,
} as const;
export type CniCode = (typeof CniCode)[keyof typeof CniCode];

/** An error the plugin reports as the spec's error JSON. `details` carries the service's problem code and detail. */
export class CniError extends Error {
  constructor(
    readonly code: CniCode,
    readonly msg: string,
    readonly details = '',
  ) {
    super(details ? `${msg}: ${details}` : msg);
    this.name = 'CniError';
  }
}

/** The spec's error document. `cniVersion` is the version the input asked for, or the newest when unknown. */
export interface CniErrorResult {
  readonly cniVersion: string;
  readonly code: number;
  readonly msg: string;
  readonly details?: string;
}

export function errorResult(error: CniError, cniVersion: string): CniErrorResult {
  return { cniVersion, code: error.code, msg: error.msg, ...(error.details ? { details: error.details } : {}) };
}

/** Service answers that a retry may fix: throttling, server errors, the table not ready. */
function transientStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

/**
 * Maps what the service client threw to the CNI error the runtime sees:
 *
 *   thrown                                         code  the runtime
 *   ConnectionError (refused, unknown host, timeout) 11  retries later
 *   problem or HTTP answer 429 or 5xx                11  retries later
 *   ConfigError at request time (no credentials)     11  retries later (instance credentials can be slow to appear)
 *   problem RangeFull                                100  the pool is exhausted
 *   any other problem or HTTP answer (403, 409 ...)  101  refused; details name the service's code and detail
 *   a CniError                                     as is
 *   anything else (a bug)                          103
 */
export function toCniError(error: unknown, action: string): CniError {
  if (error instanceof CniError) return error;
  if (error instanceof ConnectionError)
    return new CniError(CniCode.TryAgainLater, `${action}: the IPAM service is unreachable`, error.message);
  if (error instanceof ConfigError)
    return new CniError(CniCode.TryAgainLater, `${action}: cannot sign the request`, error.message);
  if (error instanceof ProblemError) {
    const details = `${error.code}: ${error.detail}`;
    if (transientStatus(error.status))
      return new CniError(
        CniCode.TryAgainLater,
        `${action}: the IPAM service is unavailable (HTTP ${error.status})`,
        details,
      );
    if (error.code === 'RangeFull')
      return new CniError(CniCode.PoolExhausted, `${action}: the pool has no free address`, details);
    // The attempt's commit deadline passed before the service committed: nothing was written, a new attempt may do.
    if (error.code === 'DeadlineExceeded')
      return new CniError(CniCode.TryAgainLater, `${action}: the IPAM service did not commit in time`, details);
    return new CniError(
      CniCode.Refused,
      `${action}: the IPAM service refused the request (HTTP ${error.status})`,
      details,
    );
  }
  if (error instanceof HttpStatusError) {
    const details = `HTTP ${error.status}: ${error.body}`;
    if (transientStatus(error.status))
      return new CniError(
        CniCode.TryAgainLater,
        `${action}: the IPAM service is unavailable (HTTP ${error.status})`,
        details,
      );
    return new CniError(
      CniCode.Refused,
      `${action}: the IPAM service refused the request (HTTP ${error.status})`,
      details,
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  return new CniError(CniCode.Internal, `${action}: unexpected failure`, message);
}
