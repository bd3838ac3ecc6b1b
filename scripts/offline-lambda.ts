import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';

export interface OfflineLambdaOptions {
  /** serverless-offline's Lambda API, e.g. http://127.0.0.1:3002. */
  endpoint: string;
  /** Deployed function name, `<service>-<stage>-<function>` (e.g. ipam-local-mirror). */
  functionName: string;
  region?: string;
}

/** A function's failure as the Lambda API reports it (`FunctionError`), with the handler's error payload. */
export class FunctionInvokeError extends Error {
  override readonly name = 'FunctionInvokeError';
  constructor(
    readonly functionName: string,
    readonly functionError: string,
    readonly payload: unknown,
  ) {
    super(`${functionName} failed (${functionError}): ${JSON.stringify(payload)}`);
  }
}

/**
 * Returns a function that invokes a deployed-style function through serverless-offline's Lambda API and resolves
 * with its parsed answer; it rejects with `FunctionInvokeError` when the handler threw, as Lambda reports it.
 * The function runs the esbuild bundle with the environment of serverless.yml, as the HTTP routes do.
 */
export function offlineLambda(options: OfflineLambdaOptions): {
  invoke(event: unknown): Promise<unknown>;
  destroy(): void;
} {
  const client = new LambdaClient({
    endpoint: options.endpoint,
    region: options.region ?? 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  return {
    async invoke(event: unknown): Promise<unknown> {
      const answer = await client.send(
        new InvokeCommand({
          FunctionName: options.functionName,
          Payload: new TextEncoder().encode(JSON.stringify(event)),
        }),
      );
      const text = answer.Payload === undefined ? '' : new TextDecoder().decode(answer.Payload);
      const payload: unknown = text === '' ? undefined : JSON.parse(text);
      if (answer.FunctionError) throw new FunctionInvokeError(options.functionName, answer.FunctionError, payload);
      return payload;
    },
    destroy: () => client.destroy(),
  };
}
