/** Process exit codes, as kubectl and most Unix tools use them. */
export const ExitCode = {
  Ok: 0,
  /** The request failed: a problem document, a transport error, missing credentials. */
  Failure: 1,
  /** The command line was wrong; the command's help is printed with the error. */
  Usage: 2,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** The service answered with a problem document: printed as `error: <code>: <detail>`. */
export class ProblemError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    /** The problem's title (the status's phrase), shown by the web console next to the detail. */
    readonly title?: string,
  ) {
    super(`${code}: ${detail}`);
    this.name = 'ProblemError';
  }
}

/** The service answered 404 with a problem document: the thing asked for does not exist (a caller may expect that). */
export function isNotFound(error: unknown): boolean {
  return error instanceof ProblemError && error.status === 404;
}

/**
 * A non-2xx answer that is not a problem document: API Gateway's own refusals (`{"message":"Forbidden"}` for a
 * missing IAM permission, 429 throttling) or a proxy in between.
 */
export class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`HTTP ${status}${body ? `: ${body}` : ''}`);
    this.name = 'HttpStatusError';
  }
}

/** Nothing answered at the endpoint (refused, unknown host, timeout). */
export class ConnectionError extends Error {
  constructor(
    readonly endpoint: string,
    readonly reason: string,
    readonly refused: boolean,
  ) {
    super(
      refused
        ? `cannot connect to ${endpoint} (connection refused): is the local stack running? Start it with \`npm start\`, or pass --endpoint URL (or set IPAM_ENDPOINT).`
        : `cannot reach ${endpoint}: ${reason}`,
    );
    this.name = 'ConnectionError';
  }
}

/** A command line the parser accepted but that makes no sense (e.g. a malformed --owner): exit 2 with help. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** Local configuration is missing or wrong (no region for a signed endpoint, no credentials). */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}
