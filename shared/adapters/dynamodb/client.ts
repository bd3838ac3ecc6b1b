import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';

export interface ClientOptions {
  /** A DynamoDB Local endpoint; absent in AWS. */
  endpoint?: string;
  region?: string;
  /** SDK attempts per request; the allocator wants 1 so a throttle surfaces instead of being retried blindly. */
  maxAttempts?: number;
  /** Milliseconds before a request is abandoned. */
  requestTimeoutMs?: number;
}

/** Builds the DynamoDB client; a local endpoint gets dummy credentials so no AWS account is needed. */
export function createDynamoClient(options: ClientOptions = {}): DynamoDBClient {
  const config: DynamoDBClientConfig = {
    region: options.region ?? 'us-east-1',
    maxAttempts: options.maxAttempts ?? 3,
  };
  if (options.requestTimeoutMs !== undefined) {
    config.requestHandler = { requestTimeout: options.requestTimeoutMs, connectionTimeout: options.requestTimeoutMs };
  }
  if (options.endpoint) {
    config.endpoint = options.endpoint;
    config.credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
  }
  return new DynamoDBClient(config);
}
