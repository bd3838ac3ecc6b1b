/**
 * `IpamClaim`: a CIDR (a block of a block pool, or an address) claimed from a pool at deploy time, through the
 * `Custom::IpamClaim` provider this repository deploys (functions/claim-resource.ts; docs/iac.md). The claim lives
 * as long as the resource: replaced when its pool, name or size changes, released when the stack deletes it.
 *
 *   const vpcCidr = new IpamClaim(this, 'VpcCidr', { serviceToken, pool: 'org' });
 *   new ec2.Vpc(this, 'Vpc', { ipAddresses: ec2.IpAddresses.cidr(vpcCidr.cidr) });
 */
import { CustomResource, Duration, Fn, Token } from 'aws-cdk-lib';
import { Construct } from 'constructs';

export interface IpamClaimProps {
  /** The provider's function ARN: the IPAM stage's `ClaimResourceServiceToken` output (Fn.importValue of its export). */
  readonly serviceToken: string;
  /** The pool to claim from. */
  readonly pool: string;
  /** The claim's name (a DNS label); default: one derived from the stack, the construct and the request. */
  readonly name?: string;
  /** Blocks (or addresses) per family; default 1. */
  readonly count?: number;
  readonly ipFamilyPolicy?: 'SingleStack' | 'PreferDualStack' | 'RequireDualStack';
  readonly ipFamilies?: readonly ('IPv4' | 'IPv6')[];
  /** Explicit blocks of a block pool (one per family). */
  readonly prefixes?: readonly string[];
  /** Explicit addresses of an address pool. */
  readonly addresses?: readonly string[];
  /** Labels of the claim (they cannot change in place: change `name` as well to relabel). */
  readonly labels?: Readonly<Record<string, string>>;
  /** How long CloudFormation waits for the provider's answer; default 5 minutes (CloudFormation's own is an hour). */
  readonly serviceTimeout?: Duration;
}

export class IpamClaim extends Construct {
  /** The resource itself (for dependencies and removal policies). */
  readonly resource: CustomResource;
  /** A block pool's first block (`10.1.0.0/16`), or the address. */
  readonly cidr: string;
  /** Every block or address, comma-separated, all families. */
  readonly cidrs: string;
  /** The first IPv4 block or address ('' when the claim has none). */
  readonly ipv4Cidr: string;
  /** The first IPv6 block or address ('' when the claim has none). */
  readonly ipv6Cidr: string;
  /**
   * The CIDR of the range the claim's first block is in: in a pool that grows from another, the block it grew by
   * (the VPC's /16 of its subnets' /24s).
   */
  readonly rangeCidr: string;
  /** The claim's name in its pool. */
  readonly claimName: string;

  constructor(scope: Construct, id: string, props: IpamClaimProps) {
    super(scope, id);
    const list = (values?: readonly string[]) => (values === undefined ? undefined : [...values]);
    this.resource = new CustomResource(this, 'Resource', {
      serviceToken: props.serviceToken,
      resourceType: 'Custom::IpamClaim',
      serviceTimeout: props.serviceTimeout ?? Duration.minutes(5),
      properties: {
        Pool: props.pool,
        ...(props.name !== undefined ? { Name: props.name } : {}),
        ...(props.count !== undefined ? { Count: String(props.count) } : {}),
        ...(props.ipFamilyPolicy !== undefined ? { IpFamilyPolicy: props.ipFamilyPolicy } : {}),
        ...(props.ipFamilies !== undefined ? { IpFamilies: list(props.ipFamilies) } : {}),
        ...(props.prefixes !== undefined ? { Prefixes: list(props.prefixes) } : {}),
        ...(props.addresses !== undefined ? { Addresses: list(props.addresses) } : {}),
        ...(props.labels !== undefined ? { Labels: { ...props.labels } } : {}),
      },
    });
    this.cidr = this.resource.getAttString('Cidr');
    this.cidrs = this.resource.getAttString('Cidrs');
    this.ipv4Cidr = this.resource.getAttString('Ipv4Cidr');
    this.ipv6Cidr = this.resource.getAttString('Ipv6Cidr');
    this.rangeCidr = this.resource.getAttString('RangeCidr');
    this.claimName = this.resource.getAttString('ClaimName');
  }

  /** The `i`-th of the claim's blocks or addresses (a token: `Fn::Select` over `Cidrs`). */
  cidrAt(i: number): string {
    return Token.asString(Fn.select(i, Fn.split(',', this.cidrs)));
  }
}
