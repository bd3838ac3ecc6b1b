/**
 * The example of docs/iac.md, three levels: the organisation pool `org` (a /8, handing out /16 blocks), one VPC's
 * pool (`vpc-main`, /24 blocks, growing by one /16 block of `org`), and the subnets' claims. The first subnet's claim
 * makes `vpc-main` grow: its RangeCidr is the /16 block of `org`, the VPC's CIDR; the second subnet's /24 comes from
 * the same /16. The provider's ServiceToken is imported from the IPAM stage's export.
 *
 *   npx cdk synth      (cdk.json runs this file; no AWS account needed)
 */
import { App, Fn, Stack, type StackProps } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import type { Construct } from 'constructs';
import { IpamClaim } from '../ipam-claim.ts';

export interface NetworkStackProps extends StackProps {
  /** The IPAM stage whose provider the claims use (its export `ipam-<stage>-claim-resource-service-token`). */
  readonly ipamStage?: string;
  /** The VPC's pool: /24 blocks, growing from `org` by one /16. */
  readonly vpcPool?: string;
}

export class NetworkStack extends Stack {
  constructor(scope: Construct, id: string, props: NetworkStackProps = {}) {
    super(scope, id, props);
    const serviceToken = Fn.importValue(`ipam-${props.ipamStage ?? 'dev'}-claim-resource-service-token`);
    const pool = props.vpcPool ?? 'vpc-main';
    const subnetA = new IpamClaim(this, 'SubnetACidr', { serviceToken, pool, labels: { tier: 'public' } });
    const subnetB = new IpamClaim(this, 'SubnetBCidr', { serviceToken, pool, labels: { tier: 'private' } });
    // After the first claim grew the pool, so both /24s are in the one /16.
    subnetB.node.addDependency(subnetA);
    const vpc = new ec2.CfnVPC(this, 'Vpc', { cidrBlock: subnetA.rangeCidr, enableDnsHostnames: true });
    [subnetA, subnetB].forEach((claim, i) => {
      new ec2.CfnSubnet(this, `Subnet${'AB'[i]}`, {
        vpcId: vpc.ref,
        cidrBlock: claim.cidr,
        availabilityZone: Fn.select(i, Fn.getAzs()),
      });
    });
  }
}

/** The example app: one network stack. */
export function exampleApp(): App {
  const app = new App();
  new NetworkStack(app, 'Network');
  return app;
}

if (import.meta.url === `file://${process.argv[1]}`) exampleApp().synth();
