import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';

export interface LambdaContextOptions {
  region?: string;
  /** The function's timeout; `getRemainingTimeInMillis()` counts down from it. Default 60 000. */
  timeoutMs?: number;
  memoryLimitInMB?: number;
}

/** A Lambda `Context` for running a handler outside Lambda (scripts, the local stream poller). */
export function lambdaContext(functionName: string, options: LambdaContextOptions = {}): Context {
  const region = options.region ?? 'us-east-1';
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:000000000000:function:${functionName}`,
    memoryLimitInMB: String(options.memoryLimitInMB ?? 512),
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `local/${randomUUID()}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
