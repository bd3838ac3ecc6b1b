/**
 * Configuration, read and validated once at cold start: a bad setting fails loudly here, not at the first request.
 * This is the only module of ours that reads process.env (eslint enforces it); libraries may still read their own
 * variables (Powertools reads POWERTOOLS_DEV and the like, the AWS SDK its credentials chain).
 */
import { principalFromArn, type Principal } from './core/access.ts';

export interface Config {
  readonly tableName: string;
  /** DynamoDB Local endpoint; empty in AWS. */
  readonly dynamodbEndpoint: string | undefined;
  readonly region: string;
  readonly stage: string;
  readonly featureGates: FeatureGates;
  readonly reconciler: ReconcilerConfig;
  /** Shards of the lease listing index: a pool's allocation rate is spread over this many index keys. */
  readonly leaseIndexShards: number;
  /** Milliseconds before a DynamoDB request is abandoned (surfaces as NotReady, 503). */
  readonly requestTimeoutMs: number;
  /**
   * Key that signs pagination cursors (tamper evidence). Outside the local stack CURSOR_SECRET must be set (at least
   * {@link MIN_CURSOR_SECRET_LENGTH} characters; serverless.yml resolves it from Secrets Manager or SSM at deploy
   * time), or the cold start fails: a default derived from public facts could be guessed, and cursors forged with it.
   */
  readonly cursorSecret: string;
  /**
   * True only on the local stack (`npm start`, the test harness): LOCAL_STACK=true. There is no IAM in front of it,
   * so the caller's principal may come from the `x-ipam-principal` header and cursors may use a per-table default
   * key. A deployed stage must never set it: the template takes it only from `--param localStack=true` (the packaged
   * template's test checks it is empty when the packaging shell exports LOCAL_STACK=true), and a function refuses to
   * start on Lambda with it.
   */
  readonly localStack: boolean;
  /**
   * The local stack's zones, which the `local` DNS target writes (LOCAL_DNS_ENDPOINT, a loopback URL, and
   * LOCAL_DNS_TOKEN, both set by scripts/local-stack.ts); read only on the local stack, absent elsewhere.
   */
  readonly localDns?: { readonly endpoint: string; readonly token: string };
  readonly metrics: MetricsConfig;
  /**
   * Tests only: AWS_IPAM_CALL_LOG names a file each AWS call of this function is appended to, for the IAM check
   * (shared/adapters/aws-call-log.ts). serverless-offline hands every AWS_* variable of its shell to the functions.
   */
  readonly callLog?: { readonly file: string; readonly functionName: string };
  /**
   * The role the claim provider acts as in a pool's `access` (PROVIDER_ROLE_ARN: serverless.yml gives the provider
   * function its own role's ARN); absent elsewhere, and always on the local stack.
   */
  readonly providerRole?: Principal;
}

/** Where the CloudWatch metrics go (serverless.yml sets both to the service name). */
export interface MetricsConfig {
  /** POWERTOOLS_METRICS_NAMESPACE. */
  readonly namespace: string;
  /** POWERTOOLS_SERVICE_NAME: the `service` dimension of every metric. */
  readonly serviceName: string;
}

export interface FeatureGates {
  readonly MultiCIDRServiceAllocator: boolean;
  readonly DisableAllocatorDualWrite: boolean;
}

export interface ReconcilerConfig {
  readonly expiredClaimGraceSeconds: number;
  readonly orphanLeaseGraceSeconds: number;
  readonly terminatingRangeGraceSeconds: number;
  readonly leakStrikes: number;
  /** Milliseconds kept free before the Lambda deadline; a run stops there and the next one resumes. */
  readonly deadlineMarginMs: number;
  /** Claims and leases the slow sweep checks per run (its cost per run, whatever the table's size). */
  readonly sweepItems: number;
  /** Lease index items utilization counting (and, separately, a bitmap drift scan) may read per run. */
  readonly countItems: number;
}

const defaultGates: FeatureGates = { MultiCIDRServiceAllocator: true, DisableAllocatorDualWrite: false };

/** Parses `Name=true,Other=false`; unknown gates and non-boolean values are refused. */
export function parseFeatureGates(text: string | undefined): FeatureGates {
  const gates: Record<keyof FeatureGates, boolean> = { ...defaultGates };
  if (!text) return gates;
  for (const part of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const [name, value, ...rest] = part.split('=').map((s) => s.trim());
    if (rest.length)
      throw new Error(
        `FEATURE_GATES: ${name} must be true or false, not ${JSON.stringify(part.slice(part.indexOf('=') + 1))}`,
      );
    if (name === undefined || !Object.hasOwn(gates, name))
      throw new Error(`FEATURE_GATES: unknown gate ${JSON.stringify(name)}; known: ${Object.keys(gates).join(', ')}`);
    if (value !== 'true' && value !== 'false')
      throw new Error(`FEATURE_GATES: ${name} must be true or false, not ${JSON.stringify(value)}`);
    gates[name as keyof FeatureGates] = value === 'true';
  }
  return gates;
}

/** The shortest CURSOR_SECRET accepted outside the local stack (`openssl rand -hex 32` gives 64). */
export const MIN_CURSOR_SECRET_LENGTH = 16;

function booleanSetting(env: NodeJS.ProcessEnv, name: string): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  throw new Error(`${name} must be true or false, not ${JSON.stringify(raw)}`);
}

function cursorSecretSetting(env: NodeJS.ProcessEnv, tableName: string, localStack: boolean): string {
  const secret = env.CURSOR_SECRET ?? '';
  if (secret === '' && localStack) return `ipam-cursor:${tableName}`;
  if (secret === '')
    throw new Error(
      'CURSOR_SECRET is not set: outside the local stack, pagination cursors need a secret key (serverless.yml resolves it from Secrets Manager; docs/deploy.md).',
    );
  if (secret.length < MIN_CURSOR_SECRET_LENGTH && !localStack)
    throw new Error(`CURSOR_SECRET must be at least ${MIN_CURSOR_SECRET_LENGTH} characters outside the local stack.`);
  return secret;
}

function numberSetting(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min)
    throw new Error(`${name} must be a number >= ${min}, not ${JSON.stringify(raw)}`);
  return value;
}

/** A count setting (shards, strikes, items): a whole number, since a fraction would silently skew every use. */
function countSetting(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0): number {
  const value = numberSetting(env, name, fallback, min);
  if (!Number.isInteger(value)) throw new Error(`${name} must be a whole number, not ${JSON.stringify(env[name])}`);
  return value;
}

/**
 * LOCAL_STACK=true trusts the `x-ipam-principal` header: on a deployed stage any caller could claim to be any
 * principal. Lambda's runtime sets AWS_LAMBDA_RUNTIME_API in every function (a reserved name: a function's
 * configuration cannot set it) and serverless-offline does not, so that is where it is refused.
 */
function localStackSetting(env: NodeJS.ProcessEnv): boolean {
  const localStack = booleanSetting(env, 'LOCAL_STACK');
  if (localStack && env.AWS_LAMBDA_RUNTIME_API) {
    throw new Error(
      'LOCAL_STACK=true is refused on Lambda: it would let the x-ipam-principal header name any caller. Redeploy without it (serverless.yml takes it only from `--param localStack=true`, which only the local stack passes).',
    );
  }
  return localStack;
}

function localDnsSetting(env: NodeJS.ProcessEnv, localStack: boolean): Config['localDns'] {
  const endpoint = env.LOCAL_DNS_ENDPOINT ?? '';
  if (!localStack || endpoint === '') return undefined;
  if (!/^http:\/\/(127\.0\.0\.1|localhost|\[::1\]):\d+$/.test(endpoint))
    throw new Error(`LOCAL_DNS_ENDPOINT must be a loopback http://127.0.0.1:PORT, not ${JSON.stringify(endpoint)}`);
  return { endpoint, token: env.LOCAL_DNS_TOKEN ?? '' };
}

/** Reads the configuration from an environment (process.env by default). */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const tableName = env.TABLE_NAME;
  if (!tableName) throw new Error('TABLE_NAME is not set: the handlers need the DynamoDB table name.');
  const localStack = localStackSetting(env);
  const localDns = localDnsSetting(env, localStack);
  return {
    tableName,
    dynamodbEndpoint: env.DYNAMODB_ENDPOINT || undefined,
    region: env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1',
    stage: env.STAGE || 'dev',
    featureGates: parseFeatureGates(env.FEATURE_GATES),
    leaseIndexShards: countSetting(env, 'LEASE_INDEX_SHARDS', 8, 1),
    requestTimeoutMs: numberSetting(env, 'DYNAMODB_REQUEST_TIMEOUT_MS', 3000, 1),
    cursorSecret: cursorSecretSetting(env, tableName, localStack),
    localStack,
    ...(localDns ? { localDns } : {}),
    metrics: {
      namespace: env.POWERTOOLS_METRICS_NAMESPACE || 'ipam',
      serviceName: env.POWERTOOLS_SERVICE_NAME || 'ipam',
    },
    // The local stack has no IAM (and serverless-offline cannot render the template's Fn::GetAtt of the role).
    ...(env.PROVIDER_ROLE_ARN && !localStack
      ? { providerRole: principalFromArn(env.PROVIDER_ROLE_ARN, 'PROVIDER_ROLE_ARN') }
      : {}),
    ...(env.AWS_IPAM_CALL_LOG
      ? { callLog: { file: env.AWS_IPAM_CALL_LOG, functionName: env.AWS_LAMBDA_FUNCTION_NAME || 'unknown' } }
      : {}),
    reconciler: {
      expiredClaimGraceSeconds: numberSetting(env, 'RECONCILE_EXPIRED_GRACE_SECONDS', 30),
      orphanLeaseGraceSeconds: numberSetting(env, 'RECONCILE_ORPHAN_GRACE_SECONDS', 60),
      terminatingRangeGraceSeconds: numberSetting(env, 'RECONCILE_TERMINATING_GRACE_SECONDS', 10),
      leakStrikes: countSetting(env, 'RECONCILE_LEAK_STRIKES', 3, 1),
      deadlineMarginMs: numberSetting(env, 'RECONCILE_DEADLINE_MARGIN_MS', 5000),
      sweepItems: countSetting(env, 'RECONCILE_SWEEP_ITEMS', 1000, 0),
      countItems: countSetting(env, 'RECONCILE_COUNT_ITEMS', 20_000, 1),
    },
  };
}

/**
 * A secret named by a setting stored in the table (a DNS target's `secretFrom: env:NAME`), read when first needed:
 * which variable is the pool's choice, so it cannot be part of the config read at cold start.
 */
export function environmentSecret(name: string): string | undefined {
  return process.env[name];
}
