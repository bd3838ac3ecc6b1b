import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import tableJson from '../../infra/table.json' with { type: 'json' };
import { DEPLOYED_MAPPING } from '../../aws-emulation/stream-delivery.ts';
import { routeKeys } from '../../shared/adapters/http/route-keys.ts';
import { keys } from '../../shared/adapters/dynamodb/keys.ts';
import { arnMatches } from '../../shared/core/access.ts';
import { loadConfig } from '../../shared/config.ts';
import { readZip } from '../support/zip.ts';
import { cfnSchemaProblems, type CfnTemplate } from '../support/cfn-schema.ts';
import {
  ACCOUNT,
  deniedCalls,
  resolveIntrinsics,
  rolePolicy,
  unusedGrants,
  type PolicyDocument,
} from '../support/iam-check.ts';
import type { AwsCall } from '../../shared/adapters/aws-call-log.ts';
import { DEPLOY_DOC, deployerTable, documentedTable } from '../../scripts/deployer-permissions.ts';

// `serverless package` (osls) is run once, as `npm run package` does, with no AWS credentials at all, into a
// temporary folder; the tests read the CloudFormation template and the function artifacts it wrote.

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const stage = 'dev';

const functions = {
  api: 'functions/http.mjs',
  mirror: 'functions/stream.mjs',
  reconciler: 'functions/reconcile.mjs',
  claimResource: 'functions/claim-resource.mjs',
} as const;

interface Resource {
  Type: string;
  Properties: Record<string, unknown>;
  DependsOn?: string | string[];
}
interface Statement {
  Effect: string;
  Action?: string | string[];
  NotAction?: unknown;
  Resource?: unknown;
}

const TABLE_ARN = 'arn:aws:dynamodb:us-east-1:123456789012:table/ipam-dev';

let outDir: string;
let template: CfnTemplate;
/** The resources of a stage with `dnsHostedZoneArns` set (HOSTED_ZONE_ARNS). */
let withZones: CfnTemplate;
const HOSTED_ZONE_ARNS = ['arn:aws:route53:::hostedzone/ZFORWARD', 'arn:aws:route53:::hostedzone/ZREVERSE'];
let resources: Record<string, Resource>;

const ofType = (type: string): [string, Resource][] => Object.entries(resources).filter(([, r]) => r.Type === type);
const asArray = <T>(value: T | T[] | undefined): T[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];
const functionResource = (key: keyof typeof functions): Resource => {
  const found = ofType('AWS::Lambda::Function').find(([, r]) => r.Properties.FunctionName === `ipam-${stage}-${key}`);
  if (found === undefined) throw new Error(`no function ipam-${stage}-${key} in the template`);
  return found[1];
};
const roleStatements = (roleLogicalId: string): Statement[] =>
  asArray(resources[roleLogicalId]?.Properties.Policies as { PolicyDocument: { Statement: Statement[] } }[]).flatMap(
    (p) => p.PolicyDocument.Statement,
  );
const actionsOf = (statements: Statement[]): string[] => statements.flatMap((s) => asArray(s.Action));
const roleOf = (key: keyof typeof functions): string =>
  (functionResource(key).Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];

function run(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolveRun) => {
    const child = spawn(command, args, { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('close', (code) => resolveRun({ code, output }));
  });
}

/** The environment of a machine with no AWS credentials and no local DynamoDB endpoint. */
function credentialFreeEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (
      !name.startsWith('AWS_') &&
      name !== 'DYNAMODB_ENDPOINT' &&
      name !== 'TABLE_NAME' &&
      name !== 'LOCAL_STACK' &&
      name !== 'CURSOR_SECRET'
    )
      env[name] = value;
  }
  return {
    ...env,
    AWS_CONFIG_FILE: '/nonexistent/aws-config',
    AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/aws-credentials',
    ...extra,
  };
}

beforeAll(async () => {
  outDir = mkdtempSync(join(tmpdir(), 'ipam-package-'));
  const osls = join(dirname(createRequire(import.meta.url).resolve('osls/package.json')), 'bin', 'serverless.js');
  // Beside the package: the resources a stage that names Route 53 hosted zones gets (`print` resolves the variables
  // and bundles nothing, so it runs alongside).
  const printed = run(
    process.execPath,
    [osls, 'print', '--stage', stage, '--format', 'json', '--param', `dnsHostedZoneArns=${HOSTED_ZONE_ARNS.join(',')}`],
    credentialFreeEnv({}),
  );
  const { code, output } = await run(
    process.execPath,
    [osls, 'package', '--stage', stage, '--package', outDir],
    // A shell that still exports settings which used to be read from it: stage params in serverless.yml win now. It
    // exports LOCAL_STACK=true too, as a shell that ran `npm start` might: the template must not take it (issue 37).
    credentialFreeEnv({
      ESBUILD_WORK_FOLDER: join('.esbuild', `package-test-${process.pid}`),
      LEASE_INDEX_SHARDS: '16',
      RECONCILE_LEAK_STRIKES: '9',
      LOCAL_STACK: 'true',
    }),
  );
  if (code !== 0) throw new Error(`serverless package failed (${code}):\n${output}`);
  const print = await printed;
  if (print.code !== 0) throw new Error(`serverless print failed (${print.code}):\n${print.output}`);
  withZones = (JSON.parse(print.output.slice(print.output.indexOf('{'))) as { resources: CfnTemplate }).resources;
  template = JSON.parse(readFileSync(join(outDir, 'cloudformation-template-update-stack.json'), 'utf8')) as CfnTemplate;
  resources = template.Resources as Record<string, Resource>;
}, 180_000);

afterAll(() => {
  if (outDir) rmSync(outDir, { recursive: true, force: true });
});

describe('Template: serverless package (no credentials, no network)', () => {
  describe("docs/deploy.md: the deploying identity's permissions", () => {
    it("are the table made from the packaged template's resource types (KMS, SNS and CloudWatch among them)", () => {
      // Act
      const types = Object.values(resources).map((r) => r.Type);
      const made = deployerTable(types);
      // Assess
      expect(documentedTable(readFileSync(DEPLOY_DOC, 'utf8'))).toBe(made);
      for (const service of ['KMS', 'SNS', 'CloudWatch']) expect(made).toContain(`\n| ${service} |`);
    });

    it('refuses a resource type it has no permissions for, naming it', () => {
      expect(() => deployerTable([...Object.values(resources).map((r) => r.Type), 'AWS::EC2::VPC'])).toThrow(
        'resource types without deployer permissions in scripts/deployer-permissions.ts: AWS::EC2::VPC',
      );
    });
  });

  describe('CloudFormation resource schemas (@aws-cdk/aws-service-spec, offline)', () => {
    it('knows every resource type, property and attribute of the template, with its type, and finds every required property', async () => {
      // Act
      const problems = await cfnSchemaProblems(template);
      // Assess
      expect(Object.keys(template.Resources).length).toBeGreaterThan(40);
      expect(problems).toEqual([]);
    });

    it('names a misspelt property, a missing required one, a wrong type, an unknown attribute and an unknown type in a mutated copy', async () => {
      // Prepare: planted mistakes, each of a kind CloudFormation would refuse at deploy time
      const mutated = structuredClone(template) as {
        Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
      };
      const queue = mutated.Resources.MirrorFailureQueue!.Properties;
      queue.MessageRetentionPeriods = queue.MessageRetentionPeriod;
      delete queue.MessageRetentionPeriod;
      mutated.Resources.Table!.Properties.StreamSpecification = { StreamViewTyp: 'NEW_AND_OLD_IMAGES' };
      delete mutated.Resources.Table!.Properties.KeySchema;
      mutated.Resources.ReconcilerLambdaFunction!.Properties.Timeout = 'sixty';
      (mutated.Resources.MirrorIteratorAgeAlarm!.Properties.Dimensions as { Value: unknown }[])[0]!.Value = {
        'Fn::GetAtt': ['MirrorLambdaFunction', 'Nmae'],
      };
      mutated.Resources.AlarmTopic!.Type = 'AWS::SNS::Topik';
      // Act
      const problems = await cfnSchemaProblems(mutated);
      // Assess
      expect(problems.map((p) => `${p.split(': ')[0]!}:`).sort()).toEqual(
        [
          'AlarmTopic.Type:',
          'MirrorFailureQueue.Properties.MessageRetentionPeriods:',
          'MirrorIteratorAgeAlarm.Properties.Dimensions[0].Value:',
          'ReconcilerLambdaFunction.Properties.Timeout:',
          'Table.Properties.KeySchema:',
          'Table.Properties.StreamSpecification.StreamViewTyp:',
          'Table.Properties.StreamSpecification.StreamViewType:',
        ].sort(),
      );
      expect(problems).toContain('Table.Properties.KeySchema: required, missing');
      expect(problems.find((p) => p.startsWith('MirrorFailureQueue.'))).toMatch(
        /no such property \(known: .*MessageRetentionPeriod,/,
      );
      expect(problems.find((p) => p.startsWith('MirrorIteratorAgeAlarm.'))).toMatch(/has no attribute Nmae/);
    });
  });

  describe('Every recorded AWS call against its role, as IAM decides (tests/fixtures/aws-calls.jsonl)', () => {
    // The calls each function made over the int and e2e tiers (scripts/record-aws-calls.ts; `npm run record:aws-calls`).
    const recorded = readFileSync(join(repoRoot, 'tests', 'fixtures', 'aws-calls.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as AwsCall);
    const callsOf = (key: keyof typeof functions) => recorded.filter((c) => c.function === key);
    const roleArn = (key: keyof typeof functions) => `arn:aws:iam::${ACCOUNT}:role/ipam-${stage}-${key}`;
    const tableArn = () => resolveIntrinsics(template, { 'Fn::GetAtt': ['Table', 'Arn'] }) as string;
    // Used with the role by the platform, not the code: Lambda's own logging, and the stream mapping (reads the
    // stream, sends given-up batches to the failure queue).
    const platform = new Set([
      'logs:CreateLogStream',
      'logs:PutLogEvents',
      'dynamodb:DescribeStream',
      'dynamodb:GetRecords',
      'dynamodb:GetShardIterator',
      'dynamodb:ListStreams',
      'sqs:SendMessage',
    ]);

    it('has calls of every function', () => {
      // A bundle imports every command of the table adapter it bundles, used or not, so imports cannot tell which
      // calls a function makes: only the recording can (a new call path needs `npm run record:aws-calls`).
      for (const key of Object.keys(functions) as (keyof typeof functions)[])
        expect({ key, calls: callsOf(key).length > 0 }).toEqual({ key, calls: true });
    });

    it("allows every recorded call under its function's role", async () => {
      for (const key of Object.keys(functions) as (keyof typeof functions)[]) {
        // Act
        const denied = await deniedCalls(rolePolicy(template, roleOf(key)), roleArn(key), callsOf(key), tableArn());
        // Assess
        expect(callsOf(key).length).toBeGreaterThan(0);
        expect({ key, denied }).toEqual({ key, denied: [] });
      }
    }, 120_000);

    it('names every grant no recorded call used', async () => {
      // Act
      const unused = Object.fromEntries(
        await Promise.all(
          (Object.keys(functions) as (keyof typeof functions)[]).map(
            async (key) =>
              [
                key,
                await unusedGrants(rolePolicy(template, roleOf(key)), roleArn(key), callsOf(key), tableArn(), platform),
              ] as const,
          ),
        ),
      );
      // Assess: every grant is used by a recorded call of the int or e2e tier
      expect(unused).toEqual({ api: [], mirror: [], reconciler: [], claimResource: [] });
    }, 120_000);

    it("denies the mirror's history writes once its role loses PutItem on the history's keys (the issue's deploy blocker)", async () => {
      // Prepare: the mirror's role as it was before the blocker was fixed: no HIST#* in the put's leading keys
      const policy = rolePolicy(template, roleOf('mirror'));
      const blocked: PolicyDocument = {
        ...policy,
        Statement: policy.Statement.map((s) => {
          if (s.Sid !== 'BitmapSummaryAndHistoryWrites') return s;
          const patterns = s.Condition!['ForAllValues:StringLike']!['dynamodb:LeadingKeys'] as string[];
          return {
            ...s,
            Condition: {
              'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': patterns.filter((p) => p !== 'HIST#*') },
            },
          };
        }),
      };
      // Act
      const denied = await deniedCalls(blocked, roleArn('mirror'), callsOf('mirror'), tableArn());
      // Assess
      expect(denied.length).toBeGreaterThan(0);
      expect(
        denied.every(
          (d) =>
            d.call.action === 'dynamodb:PutItem' &&
            d.call.leadingKeys!.every((k) => k.startsWith('HIST#')) &&
            d.result === 'ImplicitlyDenied',
        ),
      ).toBe(true);
    }, 120_000);

    it("has the mirror's crossing announcement (PutEvents on the default bus) allowed, and denied without its statement", async () => {
      // Prepare: the recorded call, and the mirror's role less its ThresholdCrossingEvents statement
      const putEvents = callsOf('mirror').filter((c) => c.action === 'events:PutEvents');
      const policy = rolePolicy(template, roleOf('mirror'));
      const without: PolicyDocument = {
        ...policy,
        Statement: policy.Statement.filter((s) => s.Sid !== 'ThresholdCrossingEvents'),
      };
      // Act
      const allowed = await deniedCalls(policy, roleArn('mirror'), putEvents, tableArn());
      const denied = await deniedCalls(without, roleArn('mirror'), putEvents, tableArn());
      // Assess
      expect(putEvents).toEqual([{ function: 'mirror', action: 'events:PutEvents', eventBus: 'default' }]);
      expect(allowed).toEqual([]);
      expect(denied.map((d) => [d.resource, d.result])).toEqual([
        [`arn:aws:events:us-east-1:${ACCOUNT}:event-bus/default`, 'ImplicitlyDenied'],
      ]);
    }, 120_000);

    it("grants Route 53 record changes and listings only in the stage's hosted zones, only to the mirror and the reconciler, and none by default", async () => {
      // Prepare: the calls the Route 53 target makes (shared/adapters/dns/route53-target.ts), in a named zone and another
      const route53 = (hostedZoneId: string): AwsCall[] =>
        ['route53:ChangeResourceRecordSets', 'route53:ListResourceRecordSets'].map((action) => ({
          function: 'any',
          action,
          hostedZoneId,
        }));
      const decided = async (from: CfnTemplate, key: keyof typeof functions) => {
        const policy = rolePolicy(from, roleOf(key));
        const denied = async (zone: string) =>
          (await deniedCalls(policy, roleArn(key), route53(zone), tableArn())).map((d) => d.call.action);
        return {
          key,
          named: await denied('ZFORWARD'),
          reverse: await denied('ZREVERSE'),
          other: await denied('ZOTHER'),
        };
      };
      const all = ['route53:ChangeResourceRecordSets', 'route53:ListResourceRecordSets'];
      for (const key of Object.keys(functions) as (keyof typeof functions)[]) {
        // Act
        const zoned = await decided(withZones, key);
        const byDefault = await decided(template, key);
        // Assess
        const dns = key === 'mirror' || key === 'reconciler';
        expect(zoned).toEqual({ key, named: dns ? [] : all, reverse: dns ? [] : all, other: all });
        expect(byDefault).toEqual({ key, named: all, reverse: all, other: all });
      }
      expect(
        rolePolicy(template, roleOf('mirror')).Statement.filter((s) =>
          asArray(s.Action).some((a) => a.startsWith('route53:')),
        ),
      ).toEqual([]);
    }, 120_000);

    it("names a grant nobody uses (a DeleteItem planted on the mirror's role)", async () => {
      // Prepare
      const policy = rolePolicy(template, roleOf('mirror'));
      const widened: PolicyDocument = {
        ...policy,
        Statement: [
          ...policy.Statement,
          { Sid: 'Planted', Effect: 'Allow', Action: ['dynamodb:DeleteItem'], Resource: [tableArn()] },
        ],
      };
      // Act
      const unused = await unusedGrants(widened, roleArn('mirror'), callsOf('mirror'), tableArn(), platform);
      // Assess
      expect(unused).toEqual([`Planted: dynamodb:DeleteItem on ${TABLE_ARN}`]);
    }, 120_000);

    it("has only `KIND#*` or literal LeadingKeys patterns in its roles, which decide the fixture's keys (their kind and a placeholder) exactly", () => {
      // Act
      const patterns = (Object.keys(functions) as (keyof typeof functions)[]).flatMap((key) =>
        rolePolicy(template, roleOf(key)).Statement.flatMap((s) =>
          Object.values(s.Condition ?? {}).flatMap((c) => asArray(c['dynamodb:LeadingKeys'])),
        ),
      );
      // Assess
      expect(patterns.length).toBeGreaterThan(0);
      expect(patterns.filter((p) => !/^[A-Z_]+#\*$|^[A-Z_]+$/.test(p))).toEqual([]);
      expect(
        recorded.flatMap((c) => c.leadingKeys ?? []).filter((k) => !/^[A-Z_]+#<key>$/.test(k) && k.includes('#')),
      ).toEqual([]);
    });
  });

  describe('HTTP API', () => {
    it('has exactly the declared routes (route-keys.ts) and $default (the function answers 404 and 405), every one with IAM authorization', () => {
      // Act
      const found = ofType('AWS::ApiGatewayV2::Route').map(([, r]) => r.Properties);
      // Assess
      expect(found.map((r) => r.RouteKey).sort()).toEqual(['$default', ...routeKeys].sort());
      for (const route of found)
        expect({ route: route.RouteKey, auth: route.AuthorizationType }).toEqual({
          route: route.RouteKey,
          auth: 'AWS_IAM',
        });
    });

    it('sends every route to the one api function with payload format 2.0', () => {
      // Act
      const integrations = ofType('AWS::ApiGatewayV2::Integration');
      // Assess
      expect(integrations).toHaveLength(1);
      const [logicalId, integration] = integrations[0]!;
      expect(integration.Properties.PayloadFormatVersion).toBe('2.0');
      expect(JSON.stringify(integration.Properties.IntegrationUri)).toContain('ApiLambdaFunction');
      for (const [, route] of ofType('AWS::ApiGatewayV2::Route'))
        expect(JSON.stringify(route.Properties.Target)).toContain(logicalId);
    });

    it('knows the route of every sample HTTP event', () => {
      // Act
      const sampleRoutes = ['events/http-health.json', 'events/http-create-pool.json'].map(
        (file) => (JSON.parse(readFileSync(join(repoRoot, file), 'utf8')) as { routeKey: string }).routeKey,
      );
      // Assess
      for (const routeKey of sampleRoutes) expect(routeKeys).toContain(routeKey);
    });
  });

  describe('Stream mapping of the mirror', () => {
    it('reads the table stream with partial batch responses, bisection, bounded retries and an on-failure queue', () => {
      // Act
      const mappings = ofType('AWS::Lambda::EventSourceMapping').map(([, r]) => r.Properties);
      // Assess
      expect(mappings).toHaveLength(1);
      const mapping = mappings[0]!;
      expect(mapping.EventSourceArn).toEqual({ 'Fn::GetAtt': ['Table', 'StreamArn'] });
      expect(JSON.stringify(mapping.FunctionName)).toContain('MirrorLambdaFunction');
      expect(mapping.FunctionResponseTypes).toEqual(['ReportBatchItemFailures']);
      // serverless.yml's settings, exactly: 10 retries, each batch at most 1,000 records gathered for at most 1 s, one
      // batch per shard at a time; the local stack's poller, the tests and the simulator deliver by these
      // (aws-emulation/stream-delivery.ts).
      expect(DEPLOYED_MAPPING).toEqual({ batchSize: 1000, maxRetries: 10, bisectOnError: true, batchWindowMs: 1000 });
      expect(mapping.ParallelizationFactor).toBe(1);
      expect(mapping.BisectBatchOnFunctionError).toBe(DEPLOYED_MAPPING.bisectOnError);
      expect(mapping.MaximumRetryAttempts).toBe(DEPLOYED_MAPPING.maxRetries);
      expect(mapping.MaximumRecordAgeInSeconds).toBeGreaterThanOrEqual(60);
      expect(mapping.MaximumRecordAgeInSeconds).toBeLessThanOrEqual(86_400);
      expect(mapping.BatchSize).toBe(DEPLOYED_MAPPING.batchSize);
      expect(mapping.MaximumBatchingWindowInSeconds).toBe(DEPLOYED_MAPPING.batchWindowMs / 1000);
      const destination = (
        mapping.DestinationConfig as { OnFailure: { Destination: { 'Fn::GetAtt': [string, string] } } }
      ).OnFailure.Destination;
      expect(destination['Fn::GetAtt'][1]).toBe('Arn');
      expect(resources[destination['Fn::GetAtt'][0]]?.Type).toBe('AWS::SQS::Queue');
    });
  });

  describe('Schedule of the reconciler', () => {
    it('fires the reconciler every minute by default', () => {
      // Act
      const rules = ofType('AWS::Events::Rule').map(([, r]) => r.Properties);
      // Assess
      expect(rules).toHaveLength(1);
      expect(rules[0]).toMatchObject({ ScheduleExpression: 'rate(1 minute)', State: 'ENABLED' });
      expect(JSON.stringify(rules[0]!.Targets)).toContain('ReconcilerLambdaFunction');
      expect(functionResource('reconciler').Properties.Timeout).toBeGreaterThanOrEqual(60);
    });
  });

  describe('Table', () => {
    it('is infra/table.json verbatim plus the stage table name and deletion protection', () => {
      // Act
      const tables = ofType('AWS::DynamoDB::Table');
      // Assess
      expect(tables).toHaveLength(1);
      expect(tables[0]![1].Properties).toEqual({
        ...tableJson,
        TableName: `ipam-${stage}`,
        DeletionProtectionEnabled: true,
      });
    });

    it('has a NEW_AND_OLD_IMAGES stream, TTL on `ttl` and point-in-time recovery', () => {
      // Act
      const table = resources.Table!.Properties;
      // Assess
      expect(table.StreamSpecification).toEqual({ StreamViewType: 'NEW_AND_OLD_IMAGES' });
      expect(table.TimeToLiveSpecification).toEqual({ AttributeName: 'ttl', Enabled: true });
      expect(table.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
    });
  });

  describe('IAM', () => {
    it('grants no wildcard action anywhere', () => {
      // Act
      const statements = [
        ...ofType('AWS::IAM::Role'),
        ...ofType('AWS::IAM::Policy'),
        ...ofType('AWS::IAM::ManagedPolicy'),
      ].flatMap(([, r]) => [
        ...asArray(r.Properties.Policies as { PolicyDocument: { Statement: Statement[] } }[]).flatMap(
          (p) => p.PolicyDocument.Statement,
        ),
        ...asArray((r.Properties.PolicyDocument as { Statement: Statement[] } | undefined)?.Statement),
      ]);
      // Assess
      expect(statements.length).toBeGreaterThan(0);
      for (const statement of statements) expect(statement.NotAction).toBeUndefined();
      const actions = actionsOf(statements);
      expect(actions.filter((a) => a.includes('*'))).toEqual([]); // '*', 'dynamodb:*', 'dynamodb:Get*', ...
      expect(
        statements.filter(
          (s) => asArray(s.Action).some((a) => a.startsWith('dynamodb:')) && asArray(s.Resource).includes('*'),
        ),
      ).toEqual([]);
    });

    it('gives each function its own role', () => {
      // Act
      const roles = (Object.keys(functions) as (keyof typeof functions)[]).map(roleOf);
      // Assess
      expect(new Set(roles).size).toBe(4);
      for (const role of roles) expect(resources[role]?.Type).toBe('AWS::IAM::Role');
      expect(resources.IamRoleLambdaExecution).toBeUndefined();
    });

    it('lets only the mirror read the stream and write to its failure queue', () => {
      // Act
      const api = actionsOf(roleStatements(roleOf('api')));
      const mirror = roleStatements(roleOf('mirror'));
      const reconciler = actionsOf(roleStatements(roleOf('reconciler')));
      // Assess
      const streamRead = [
        'dynamodb:DescribeStream',
        'dynamodb:GetRecords',
        'dynamodb:GetShardIterator',
        'dynamodb:ListStreams',
      ];
      const streamStatement = mirror.find((s) => asArray(s.Action).includes('dynamodb:GetRecords'));
      expect(asArray(streamStatement?.Action).sort()).toEqual(streamRead.sort());
      expect(streamStatement?.Resource).toEqual([{ 'Fn::GetAtt': ['Table', 'StreamArn'] }]);
      expect(actionsOf(mirror)).toContain('sqs:SendMessage');
      for (const action of [...streamRead, 'sqs:SendMessage']) {
        expect(api).not.toContain(action);
        expect(reconciler).not.toContain(action);
      }
      expect(api).not.toContain('dynamodb:Scan');
      expect(api).toEqual(
        expect.arrayContaining([
          'dynamodb:GetItem',
          'dynamodb:PutItem',
          'dynamodb:UpdateItem',
          'dynamodb:DeleteItem',
          'dynamodb:ConditionCheckItem',
          'dynamodb:Query',
        ]),
      );
    });
  });

  describe('Hardening (issue 25)', () => {
    const alarm = (id: string) =>
      resources[id]?.Properties as Record<string, unknown> & { Dimensions: { Name: string; Value: unknown }[] };

    it('writes a JSON access log of the HTTP API with request id, route, status, principal and latency', () => {
      // Act
      const stages = ofType('AWS::ApiGatewayV2::Stage');
      // Assess
      expect(stages).toHaveLength(1);
      const settings = stages[0]![1].Properties.AccessLogSettings as {
        DestinationArn: { 'Fn::GetAtt': [string, string] };
        Format: string;
      };
      expect(resources[settings.DestinationArn['Fn::GetAtt'][0]]?.Type).toBe('AWS::Logs::LogGroup');
      const format = JSON.parse(settings.Format) as Record<string, string>;
      expect(format).toMatchObject({
        requestId: '$context.requestId',
        route: '$context.routeKey',
        status: '$context.status',
        principal: '$context.identity.userArn',
        latencyMs: '$context.responseLatency',
      });
    });

    it('throttles the stage by default', () => {
      // Act
      const settings = ofType('AWS::ApiGatewayV2::Stage')[0]![1].Properties.DefaultRouteSettings as {
        ThrottlingRateLimit: number;
        ThrottlingBurstLimit: number;
      };
      // Assess
      expect(settings.ThrottlingRateLimit).toBeGreaterThan(0);
      expect(settings.ThrottlingBurstLimit).toBeGreaterThanOrEqual(settings.ThrottlingRateLimit);
    });

    it('runs at most one reconciler at a time (reserved concurrency 1)', () => {
      // Act
      const reserved = functionResource('reconciler').Properties.ReservedConcurrentExecutions;
      // Assess
      expect(reserved).toBe(1);
    });

    it("alarms, through one SNS topic, on the failure queue, the mirror's iterator age, errors and failed records, and the reconciler's errors", () => {
      // Act
      const alarms = ofType('AWS::CloudWatch::Alarm').map(([id, r]) => [id, r.Properties] as const);
      const topics = ofType('AWS::SNS::Topic');
      // Assess
      expect(topics).toHaveLength(1);
      const topic = topics[0]![0];
      for (const [id, props] of alarms) {
        expect({ id, actions: props.AlarmActions, ok: props.OKActions }).toEqual({
          id,
          actions: [{ Ref: topic }],
          ok: [{ Ref: topic }],
        });
      }
      const watched = alarms
        .map(
          ([, p]) =>
            `${p.Namespace as string} ${p.MetricName as string} ${JSON.stringify((p.Dimensions as { Value: unknown }[])[0]!.Value)}`,
        )
        .sort();
      expect(watched).toEqual([
        'AWS/Lambda Errors {"Ref":"MirrorLambdaFunction"}',
        'AWS/Lambda Errors {"Ref":"ReconcilerLambdaFunction"}',
        'AWS/Lambda IteratorAge {"Ref":"MirrorLambdaFunction"}',
        'AWS/SQS ApproximateNumberOfMessagesVisible {"Fn::GetAtt":["MirrorFailureQueue","QueueName"]}',
        'ipam MirrorRecordsFailed "ipam"',
        'ipam ReconcileErrors "ipam"',
      ]);
      expect(alarm('MirrorFailureQueueAlarm')).toMatchObject({
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      });
      expect(alarm('MirrorIteratorAgeAlarm').Threshold).toBe(300_000);
    });

    it('encrypts the alarm topic with a key CloudWatch alarms and EventBridge rules may use, so their notifications arrive (issue 37)', () => {
      // AWS's own SNS key (alias/aws/sns) has a policy nobody can change: CloudWatch and EventBridge cannot publish
      // to a topic it encrypts, and the alarms' (and docs/deploy.md's warning rule's) notifications would be dropped.
      // Prepare
      const topic = resources.AlarmTopic!.Properties;
      const keyId = (topic.KmsMasterKeyId as { Ref?: string }).Ref;
      const key = keyId === undefined ? undefined : resources[keyId];
      const statements = (
        (
          key?.Properties.KeyPolicy as
            | { Statement?: (Statement & { Principal?: { Service?: string | string[] } })[] }
            | undefined
        )?.Statement ?? []
      ).filter((s) => s.Effect === 'Allow');
      const allows = (service: string, action: string) =>
        statements.some(
          (s) =>
            asArray(s.Principal?.Service).includes(service) &&
            asArray(s.Action as string | string[]).some(
              (a) => a === action || (a.endsWith('*') && action.startsWith(a.slice(0, -1))),
            ),
        );
      // Assess
      expect(key?.Type).toBe('AWS::KMS::Key');
      for (const service of ['cloudwatch.amazonaws.com', 'events.amazonaws.com']) {
        expect({
          service,
          generate: allows(service, 'kms:GenerateDataKey'),
          decrypt: allows(service, 'kms:Decrypt'),
        }).toEqual({ service, generate: true, decrypt: true });
      }
      expect(key?.Properties.EnableKeyRotation).toBe(true);
    });

    it("grants no role a DynamoDB action its function's bundle never calls", () => {
      // The event source mapping reads the stream and sends to the failure queue with the mirror's role.
      const usedByTheMapping = new Set([
        'dynamodb:DescribeStream',
        'dynamodb:GetRecords',
        'dynamodb:GetShardIterator',
        'dynamodb:ListStreams',
        'sqs:SendMessage',
      ]);
      // What a transaction's items are authorized as (TransactWriteItems needs no action of its own).
      const inTransactions = ['PutItem', 'UpdateItem', 'DeleteItem', 'ConditionCheckItem'];
      for (const key of Object.keys(functions) as (keyof typeof functions)[]) {
        // Prepare: the commands the bundle imports from the SDK (not bundled, so the import names them)
        const code = readZip(readFileSync(join(outDir, `${key}.zip`)))
          .get(functions[key])!
          .toString('utf8');
        const imports = [...code.matchAll(/import\s*\{([^}]*)\}\s*from\s*"@aws-sdk\/client-dynamodb"/g)].flatMap((m) =>
          m[1]!.split(','),
        );
        const commands = new Set(
          imports.map((i) => /(\w+)Command\b/.exec(i.trim())?.[1]).filter((c): c is string => c !== undefined),
        );
        const calls = new Set(
          [...commands, ...(commands.has('TransactWriteItems') ? inTransactions : [])].map((c) => `dynamodb:${c}`),
        );
        // Act
        const granted = actionsOf(roleStatements(roleOf(key))).filter(
          (a) => a.startsWith('dynamodb:') && !usedByTheMapping.has(a),
        );
        // Assess
        expect(commands.size).toBeGreaterThan(0);
        expect({ key, unused: [...new Set(granted)].filter((a) => !calls.has(a)) }).toEqual({ key, unused: [] });
      }
    });

    it('lets the mirror put only bitmaps, summary chunks, history holdings, the table settings, exhaustion levels and their events, update only history marks, and never delete', () => {
      // Act
      const statements = roleStatements(roleOf('mirror')) as (Statement & {
        Condition?: { 'ForAllValues:StringLike'?: { 'dynamodb:LeadingKeys'?: string[] } };
      })[];
      const writes = statements.filter((s) =>
        asArray(s.Action).some((a) =>
          [
            'dynamodb:PutItem',
            'dynamodb:UpdateItem',
            'dynamodb:DeleteItem',
            'dynamodb:BatchWriteItem',
            'dynamodb:ConditionCheckItem',
          ].includes(a),
        ),
      );
      const allowed = (action: string, partitionKey: string) =>
        writes.some(
          (s) =>
            asArray(s.Action).includes(action) &&
            (s.Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'] ?? []).some((pattern) =>
              arnMatches(pattern, partitionKey),
            ),
        );
      // Assess: exactly the keys the stream function writes (from keys.ts, so a new write the role misses fails here)
      expect(writes.map((s) => s.Action)).toEqual([['dynamodb:PutItem'], ['dynamodb:UpdateItem']]);
      for (const key of [
        keys.bitmap('p', 'r'),
        keys.chunk('p', 'IPv4', 0n),
        keys.holding('p', '10.0.0.7', 'x'),
        keys.tableSettings(),
        keys.warning('p', 'IPv4'),
        keys.event('p', '2035-01-01T00:00:00.000Z', 'x'),
      ])
        expect({ key, put: allowed('dynamodb:PutItem', key.PK) }).toEqual({ key, put: true });
      expect(allowed('dynamodb:UpdateItem', keys.historyMark('p').PK)).toBe(true);
      for (const key of [keys.lease('p', '10.0.0.7'), keys.claim('p', 'c'), keys.pool('p'), keys.historyMark('p')])
        expect({ key, put: allowed('dynamodb:PutItem', key.PK) }).toEqual({ key, put: false });
      expect(allowed('dynamodb:UpdateItem', keys.lease('p', '10.0.0.7').PK)).toBe(false);
      expect(actionsOf(roleStatements(roleOf('reconciler')))).not.toEqual(expect.arrayContaining(['dynamodb:Scan']));
    });
  });

  describe('Functions', () => {
    it('run on nodejs22.x with the table name, stage, default feature gates and no local endpoint', () => {
      for (const key of Object.keys(functions) as (keyof typeof functions)[]) {
        // Act
        const { Runtime, Environment } = functionResource(key).Properties as {
          Runtime: string;
          Environment: { Variables: Record<string, string> };
        };
        // Assess
        expect(Runtime).toBe('nodejs22.x');
        expect(Environment.Variables).toMatchObject({
          TABLE_NAME: `ipam-${stage}`,
          STAGE: stage,
          FEATURE_GATES: 'MultiCIDRServiceAllocator=true,DisableAllocatorDualWrite=false',
          DYNAMODB_ENDPOINT: '',
          LOCAL_STACK: '',
        });
      }
    });

    it('get the cursor secret as a dynamic reference resolved at deploy time, never as plain text', () => {
      for (const key of Object.keys(functions) as (keyof typeof functions)[]) {
        // Act
        const { Environment } = functionResource(key).Properties as {
          Environment: { Variables: Record<string, string> };
        };
        // Assess
        expect({ key, secret: Environment.Variables.CURSOR_SECRET }).toEqual({
          key,
          secret: '{{resolve:secretsmanager:ipam/dev/cursor-secret}}',
        });
      }
    });

    it("have an environment that shared/config.ts accepts, with the code's own defaults (not the packaging shell's)", () => {
      for (const key of Object.keys(functions) as (keyof typeof functions)[]) {
        // Act
        const { Environment } = functionResource(key).Properties as {
          Environment: { Variables: Record<string, string> };
        };
        // The provider's own role ARN is a Fn::GetAtt, resolved as CloudFormation would.
        const variables = resolveIntrinsics(template, Environment.Variables) as Record<string, string>;
        const config = loadConfig(variables);
        const defaults = loadConfig({
          TABLE_NAME: `ipam-${stage}`,
          CURSOR_SECRET: Environment.Variables.CURSOR_SECRET,
        });
        const role = key === 'claimResource' ? { providerRole: { arn: variables.PROVIDER_ROLE_ARN } } : {};
        // Assess
        expect(config).toEqual({ ...defaults, region: config.region, ...role });
        expect(config.localStack).toBe(false);
      }
    });

    it('are each one minified ESM bundle under 300 KB that Node loads and that exports `handler`', async () => {
      const sizes: Record<string, number> = {};
      const bundled: Record<string, number> = {};
      // Inside the repository, so `@aws-sdk/*` resolves from node_modules as it does from the Lambda runtime's SDK.
      mkdirSync(join(repoRoot, '.esbuild'), { recursive: true });
      const bundleDir = mkdtempSync(join(repoRoot, '.esbuild', 'probe-'));
      try {
        for (const [key, file] of Object.entries(functions)) {
          // Prepare
          const zip = join(outDir, `${key}.zip`);
          const entries = readZip(readFileSync(zip));
          sizes[key] = statSync(zip).size;
          expect([...entries.keys()]).toEqual([file]);
          const path = join(bundleDir, key, file);
          mkdirSync(dirname(path), { recursive: true });
          writeFileSync(path, entries.get(file)!);
          bundled[key] = entries.get(file)!.length;
          expect({ key, bytes: bundled[key]! <= 300 * 1024 }).toEqual({ key, bytes: true });
          expect(entries.get(file)!.toString('utf8')).toMatch(/from\s*"@aws-sdk\/client-dynamodb"/);
          // Act
          const probe = `const m = await import(${JSON.stringify(pathToFileURL(path).href)}); console.log(typeof m.handler);`;
          const { code, output } = await run(
            process.execPath,
            ['--input-type=module', '-e', probe],
            credentialFreeEnv({
              TABLE_NAME: `ipam-${stage}`,
              STAGE: stage,
              CURSOR_SECRET: 'probe-cursor-secret-0123456789',
              AWS_REGION: 'us-east-1',
              NODE_NO_WARNINGS: '1',
            }),
          );
          // Assess
          expect({ key, code, output: output.trim() }).toEqual({ key, code: 0, output: 'function' });
        }
      } finally {
        rmSync(bundleDir, { recursive: true, force: true });
      }
      console.log(`function artifacts, zip bytes: ${JSON.stringify(sizes)}; bundle bytes: ${JSON.stringify(bundled)}`);
    }, 60_000);

    it("refuse to start on Lambda with LOCAL_STACK=true, and start there with the template's own environment", async () => {
      mkdirSync(join(repoRoot, '.esbuild'), { recursive: true });
      const bundleDir = mkdtempSync(join(repoRoot, '.esbuild', 'probe-'));
      try {
        for (const [key, file] of Object.entries(functions) as [keyof typeof functions, string][]) {
          // Prepare: the bundle, and the environment Lambda would give it (the template's, plus the runtime's own)
          const path = join(bundleDir, key, file);
          mkdirSync(dirname(path), { recursive: true });
          writeFileSync(path, readZip(readFileSync(join(outDir, `${key}.zip`))).get(file)!);
          const { Environment } = functionResource(key).Properties as {
            Environment: { Variables: Record<string, string> };
          };
          const onLambda = {
            ...(resolveIntrinsics(template, Environment.Variables) as Record<string, string>),
            CURSOR_SECRET: 'probe-cursor-secret-0123456789',
            AWS_REGION: 'us-east-1',
            AWS_LAMBDA_FUNCTION_NAME: `ipam-${stage}-${key}`,
            AWS_LAMBDA_RUNTIME_API: '127.0.0.1:9001',
            NODE_NO_WARNINGS: '1',
          };
          const probe = `const m = await import(${JSON.stringify(pathToFileURL(path).href)}); console.log(typeof m.handler);`;
          // Act
          const asPackaged = await run(
            process.execPath,
            ['--input-type=module', '-e', probe],
            credentialFreeEnv(onLambda),
          );
          const opened = await run(
            process.execPath,
            ['--input-type=module', '-e', probe],
            credentialFreeEnv({ ...onLambda, LOCAL_STACK: 'true' }),
          );
          // Assess
          expect({ key, code: asPackaged.code, output: asPackaged.output.trim() }).toEqual({
            key,
            code: 0,
            output: 'function',
          });
          expect({ key, code: opened.code }).toEqual({ key, code: 1 });
          const line = opened.output.split('\n').find((l) => l.startsWith('{"level":"error"'));
          expect({ key, line: JSON.parse(line ?? '{}') as unknown }).toEqual({
            key,
            line: {
              level: 'error',
              message: 'cold start failed',
              error: 'Error',
              detail: expect.stringContaining('LOCAL_STACK'),
            },
          });
        }
      } finally {
        rmSync(bundleDir, { recursive: true, force: true });
      }
    }, 60_000);
  });
});
