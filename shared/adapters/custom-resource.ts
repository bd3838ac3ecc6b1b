/**
 * The `Custom::IpamClaim` provider's side of CloudFormation's protocol: the answer is a PUT of a JSON body (at most
 * 4096 bytes) with an empty content type to the request's pre-signed ResponseURL. Every request that names a
 * ResponseURL is answered, whatever happens: a request that cannot be read, a use case that throws and one that is
 * still running near the function's limit are each answered FAILED (a stack otherwise waits for its ServiceTimeout,
 * an hour by default). The decisions are core's (use-cases/claim-resource.ts).
 *
 *   0                                  commitBy        answer by           function's limit
 *   |---- use case ---------------------|   no commit     |-- PUT, PUT --|
 *                                        after this        (each bounded)
 *
 * No commit is sent after `commitBy`, and one sent before it has finished or timed out (the DynamoDB request timeout)
 * by the time a FAILED answer goes out: the rollback's Delete that follows it sees every claim the Create made.
 */
import type { Context } from 'aws-lambda';
import type { Principal } from '../core/access.ts';
import type { Deps } from '../core/use-cases/deps.ts';
import {
  answerResource,
  failedPhysicalId,
  readRequest,
  reasonOf,
  responseBody,
  responseUrlOf,
  type ResourceAnswer,
  type ResourceRequest,
} from '../core/use-cases/claim-resource.ts';
import { IpamError } from '../core/errors.ts';

export type ProviderLogger = (entry: Record<string, unknown>) => void;

export interface ProviderOptions {
  /** Who the provider acts as in a pool's `access`. */
  readonly caller?: Principal;
  /** Milliseconds before the function's limit by which the answer is sent (default 6000). */
  readonly answerMarginMs?: number;
  /** Milliseconds before the answer after which no commit is sent: more than a DynamoDB request may take (default 4000). */
  readonly commitMarginMs?: number;
  /** Milliseconds one PUT may take (default 2000); two are tried, so keep it under half the answer margin. */
  readonly putTimeoutMs?: number;
  readonly log?: ProviderLogger;
  /** Told of a use case left running when its answer was sent on time (it commits nothing after commitBy). */
  readonly abandoned?: (work: Promise<unknown>) => void;
}

/** One PUT of the body, with an empty content type (the pre-signed URL is signed without one). @throws on non-2xx */
export async function putResponse(url: string, body: string, timeoutMs: number): Promise<void> {
  const res = await fetch(url, {
    method: 'PUT',
    headers: { 'content-type': '' },
    body,
    signal: AbortSignal.timeout(timeoutMs),
  });
  await res.arrayBuffer().catch(() => undefined);
  if (!res.ok) throw new Error(`the response URL answered ${res.status} ${res.statusText}`);
}

/** Sends the body, trying once more when the first PUT fails (a dropped connection, a 5xx). */
export async function sendResponse(url: string, body: string, timeoutMs: number, log: ProviderLogger): Promise<void> {
  try {
    await putResponse(url, body, timeoutMs);
  } catch (first) {
    log({ level: 'warn', message: 'response PUT failed; trying once more', error: String(first) });
    await putResponse(url, body, timeoutMs);
  }
}

const defaultLog: ProviderLogger = (entry) => console.log(JSON.stringify(entry));

/** The request fields a response copies, as far as an unreadable event has them. */
function echoOf(raw: unknown): Pick<ResourceRequest, 'requestId' | 'stackId' | 'logicalResourceId'> {
  const e = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const s = (v: unknown) => (typeof v === 'string' ? v : '');
  return { requestId: s(e.RequestId), stackId: s(e.StackId), logicalResourceId: s(e.LogicalResourceId) };
}

/** The answer of a request, or FAILED when it is not in by `ms` or throws something that is not the API's. */
async function answerWithin(
  deps: Deps,
  request: ResourceRequest,
  ms: number,
  options: ProviderOptions & { commitBy: number; awsRequestId: string; log: ProviderLogger },
): Promise<ResourceAnswer> {
  const work = answerResource(deps, request, {
    commitBy: options.commitBy,
    ...(options.caller ? { caller: options.caller } : {}),
  });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), Math.max(0, ms));
  });
  try {
    const first = await Promise.race([work, late]);
    if (first !== 'late') return first;
    options.abandoned?.(work);
    work.catch(() => undefined);
    const by = new Date(options.commitBy).toISOString();
    return {
      status: 'FAILED',
      reason: `The provider did not finish the ${request.requestType} in time (its function's limit is near); nothing was committed after ${by}. Retry the stack operation.`,
      physicalResourceId: failedPhysicalId(request),
    };
  } catch (error) {
    if (error instanceof IpamError)
      return { status: 'FAILED', reason: reasonOf(error), physicalResourceId: failedPhysicalId(request) };
    options.log({ level: 'error', message: 'custom resource request failed', error: String(error) });
    return {
      status: 'FAILED',
      reason: `Internal: the provider failed on this request (logged under Lambda request ${options.awsRequestId}).`,
      physicalResourceId: failedPhysicalId(request),
    };
  } finally {
    clearTimeout(timer);
  }
}

/** The provider function's handler over a container's use cases. */
export function createClaimResourceHandler(deps: () => Deps, options: ProviderOptions = {}) {
  const log = options.log ?? defaultLog;
  const answerMarginMs = options.answerMarginMs ?? 6000;
  const commitMarginMs = options.commitMarginMs ?? 4000;
  const putTimeoutMs = options.putTimeoutMs ?? 2000;
  return async (event: unknown, context: Pick<Context, 'getRemainingTimeInMillis' | 'awsRequestId'>) => {
    const url = responseUrlOf(event);
    if (url === undefined) {
      // Nowhere to answer: not a CloudFormation request (a test invoke, an SNS envelope not unwrapped).
      log({ level: 'error', message: 'custom resource request without a ResponseURL; nothing answered' });
      return;
    }
    let request: ResourceRequest;
    let answer: ResourceAnswer;
    try {
      request = readRequest(event);
      const container = deps();
      const answerIn = context.getRemainingTimeInMillis() - answerMarginMs;
      const commitBy = container.clock.nowMs() + answerIn - commitMarginMs;
      answer = await answerWithin(container, request, answerIn, {
        ...options,
        commitBy,
        awsRequestId: context.awsRequestId,
        log,
      });
    } catch (error) {
      // The request itself could not be read: answered FAILED all the same, with what it has.
      const echo = echoOf(event);
      request = { ...echo, requestType: 'Create', responseUrl: url, properties: {} };
      const physical = (event as { PhysicalResourceId?: unknown }).PhysicalResourceId;
      answer = {
        status: 'FAILED',
        reason: error instanceof IpamError ? reasonOf(error) : 'Internal: the provider could not read the request.',
        physicalResourceId:
          typeof physical === 'string' && physical !== ''
            ? physical
            : `unclaimed/${echo.requestId || context.awsRequestId}`,
      };
    }
    log({
      level: 'info',
      message: 'custom resource answer',
      requestType: request.requestType,
      stackId: request.stackId,
      logicalResourceId: request.logicalResourceId,
      status: answer.status,
      physicalResourceId: answer.physicalResourceId,
      ...(answer.reason ? { reason: answer.reason } : {}),
    });
    await sendResponse(url, responseBody(request, answer), putTimeoutMs, log);
    return { Status: answer.status, PhysicalResourceId: answer.physicalResourceId };
  };
}
