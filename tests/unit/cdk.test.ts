import { beforeAll, describe, expect, it } from 'vitest';
import { cfnSchemaProblems, type CfnTemplate } from '../support/cfn-schema.ts';
import { ipamClaimSchema } from '../support/ipam-claim-schema.ts';
import { exampleApp } from '../../cdk/example/app.ts';

// The CDK example synthesized in process (App.synth(), what `cdk synth` runs, without the CLI's own start-up of several
// seconds), and its template checked against CloudFormation's schemas and Custom::IpamClaim's.

describe('cdk/: IpamClaim and the example network stack', () => {
  let synthesized: CfnTemplate;
  // Once for the file: aws-cdk-lib's modules and the schema database take seconds to load on a busy machine.
  beforeAll(async () => {
    synthesized = exampleApp().synth().getStackByName('Network').template as CfnTemplate;
    await cfnSchemaProblems({ Resources: {} });
  }, 120_000);

  it("synthesizes a VPC whose CIDR is the /16 its pool grew by from org, and subnets whose CIDRs are that pool's /24 claims", async () => {
    // Act
    const template = synthesized as CfnTemplate & {
      Resources: Record<string, { Type: string; Properties: Record<string, unknown>; DependsOn?: string[] }>;
    };
    const problems = await cfnSchemaProblems(template, ipamClaimSchema);
    // Assess
    expect(problems).toEqual([]);
    const ofType = (type: string) => Object.entries(template.Resources).filter(([, r]) => r.Type === type);
    const claims = Object.fromEntries(ofType('Custom::IpamClaim'));
    expect(Object.values(claims).map((c) => c.Properties.Pool)).toEqual(['vpc-main', 'vpc-main']);
    for (const c of Object.values(claims))
      expect(c.Properties.ServiceToken).toEqual({ 'Fn::ImportValue': 'ipam-dev-claim-resource-service-token' });
    const [[vpcId, vpc]] = ofType('AWS::EC2::VPC') as [[string, (typeof template.Resources)[string]]];
    const [first, second] = Object.keys(claims) as [string, string];
    expect(vpc.Properties.CidrBlock).toEqual({ 'Fn::GetAtt': [first, 'RangeCidr'] });
    expect(claims[second]!.DependsOn).toEqual([first]);
    const subnets = ofType('AWS::EC2::Subnet');
    expect(subnets).toHaveLength(2);
    for (const [, subnet] of subnets) {
      expect(subnet.Properties.VpcId).toEqual({ Ref: vpcId });
      const [claimId, attribute] = (subnet.Properties.CidrBlock as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'];
      expect(attribute).toBe('Cidr');
      expect(claims[claimId]!.Properties.Pool).toBe('vpc-main');
    }
  });

  it('is caught by the check when a property is misspelt or an attribute is not one the provider answers', async () => {
    // Prepare
    const template = synthesized;
    const [id, claim] = Object.entries(template.Resources).find(([, r]) => r.Type === 'Custom::IpamClaim')!;
    const broken: CfnTemplate = {
      Resources: {
        ...template.Resources,
        [id]: { ...claim, Properties: { ...claim.Properties, Pools: 'org' } },
        Reader: { Type: 'AWS::SSM::Parameter', Properties: { Type: 'String', Value: { 'Fn::GetAtt': [id, 'Block'] } } },
      },
    };
    // Act
    const problems = await cfnSchemaProblems(broken, ipamClaimSchema);
    // Assess
    expect(problems.some((p) => p.startsWith(`${id}.Properties.Pools: no such property`))).toBe(true);
    expect(problems.some((p) => p.includes(`${id} (Custom::IpamClaim) has no attribute Block`))).toBe(true);
  });
});
