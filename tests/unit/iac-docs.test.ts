import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { cfnSchemaProblems, type CfnResource } from '../support/cfn-schema.ts';
import { ipamClaimSchema } from '../support/ipam-claim-schema.ts';

// The CloudFormation and Serverless Framework snippets a user is told to paste (docs/iac.md), against CloudFormation's
// resource schemas and Custom::IpamClaim's, as the CDK example's template is (tests/unit/cdk.test.ts).

describe('docs/iac.md: the three-level example', () => {
  const doc = readFileSync(new URL('../../docs/iac.md', import.meta.url), 'utf8');
  const section = (title: string) => {
    const start = doc.indexOf(`### ${title}`);
    const block = /```yaml\n([\s\S]*?)\n```/.exec(doc.slice(start));
    return parse(block![1]!) as Record<string, unknown>;
  };

  it.each([
    ['CloudFormation', (y: Record<string, unknown>) => y.Resources],
    ['Serverless Framework', (y: Record<string, unknown>) => (y.resources as { Resources: unknown }).Resources],
  ])(
    'has %s resources CloudFormation accepts, the VPC on the grown /16 and the subnets on the /24 claims',
    async (title, of) => {
      // Prepare
      const resources = of(section(title)) as Record<string, CfnResource>;
      // Act
      const problems = await cfnSchemaProblems({ Resources: resources }, ipamClaimSchema);
      // Assess
      expect(problems).toEqual([]);
      expect(Object.keys(resources).sort()).toEqual(['SubnetA', 'SubnetACidr', 'SubnetB', 'SubnetBCidr', 'Vpc']);
      expect(resources.Vpc!.Properties!.CidrBlock).toEqual({ 'Fn::GetAtt': ['SubnetACidr', 'RangeCidr'] });
      expect(resources.SubnetB!.Properties!.CidrBlock).toEqual({ 'Fn::GetAtt': ['SubnetBCidr', 'Cidr'] });
    },
    120_000,
  );
});
