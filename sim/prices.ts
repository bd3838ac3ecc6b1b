/**
 * AWS's list prices (US East, N. Virginia; on-demand; no free tier), looked up on 2026-12-02, with where each was read.
 * A figure the lookup could not confirm on a page of AWS's own says so. BENCHMARKS.md prints this table.
 */
export interface Price {
  readonly what: string;
  readonly usd: number;
  readonly per: string;
  readonly source: string;
  readonly confirmed: boolean;
}

export const PRICES_LOOKED_UP = '2026-12-02';

export const PRICES = {
  writeRequestUnit: {
    what: 'DynamoDB on-demand write request unit',
    usd: 0.625 / 1e6,
    per: 'unit ($0.625 a million)',
    source:
      'airbyte.com/data-engineering-resources/dynamodb-pricing (US East); aws.amazon.com/dynamodb/pricing/on-demand defines the unit but its price was not in the excerpt read',
    confirmed: false,
  },
  readRequestUnit: {
    what: 'DynamoDB on-demand read request unit',
    usd: 0.125 / 1e6,
    per: 'unit ($0.125 a million)',
    source: 'as the write unit',
    confirmed: false,
  },
  storage: {
    what: 'DynamoDB Standard storage',
    usd: 0.25,
    per: 'GB-month (first 25 GB free)',
    source: 'aws.amazon.com/dynamodb/pricing/ ("prices start from $0.25 per GB-month")',
    confirmed: true,
  },
  streamReads: {
    what: 'DynamoDB Streams read requests',
    usd: 0,
    per: 'GetRecords call by a Lambda trigger (free); $0.02 per 100,000 for other readers',
    source:
      'DynamoDB pricing, quoted at notes.paulswail.com/public/DynamoDB+streams and docs.amazonaws.cn CostOptimization_StreamsUsage ("not charged for GetRecords API calls invoked by AWS Lambda as part of DynamoDB triggers"); the $0.02 figure not confirmed',
    confirmed: true,
  },
  lambdaRequest: {
    what: 'Lambda request',
    usd: 0.2 / 1e6,
    per: 'invocation ($0.20 a million)',
    source:
      'cloudchipr.com/blog/aws-lambda-pricing (US East); aws.amazon.com/lambda/pricing/ describes the charge, its table was not in the excerpt',
    confirmed: false,
  },
  lambdaArmGbSecond: {
    what: 'Lambda duration, arm64',
    usd: 0.0000133334,
    per: 'GB-second (first 7.5 billion a month)',
    source: 'cloudchipr.com/blog/aws-lambda-pricing (US East, Arm tier 1)',
    confirmed: false,
  },
  httpApiRequest: {
    what: 'API Gateway HTTP API request',
    usd: 1 / 1e6,
    per: 'request ($1.00 a million, first 300 million a month)',
    source:
      'awsforengineers.com and amnic.com, citing aws.amazon.com/api-gateway/pricing/ (whose excerpt read had no figure)',
    confirmed: false,
  },
  vpcIpamActiveIpHour: {
    what: 'Amazon VPC IPAM, Advanced Tier',
    usd: 0.00027,
    per: 'active IP address an hour',
    source:
      'AWS VPC pricing page text ("you pay an hourly rate of $0.00027 for each active IP address managed in IPAM"), read on a mirror',
    confirmed: true,
  },
} as const satisfies Record<string, Price>;

/** The API function's memory (serverless.yml, functions.api.memorySize): what its GB-seconds are billed at. */
export const API_MEMORY_GB = 1;

/**
 * The stream function's share of a claim-and-release cycle for the designs that keep the occupancy summary (lease,
 * lease-blind, block-lease): two stream records a cycle, batches of 100, as bench/results/mirror-cost.json measured
 * per record at batch 100 (0.12 write and 1.04 read units, 0.01 invocations). Its duration is not counted.
 */
export const SUMMARY_UPKEEP_PER_CYCLE = { writeUnits: 0.24, readUnits: 2.08, invocations: 0.02 } as const;

/** What a claim-and-release cycle costs, in dollars per million cycles: DynamoDB, two API calls, their Lambda time. */
export function usdPerMillionCycles(cycle: {
  readonly readUnits: number;
  readonly writeUnits: number;
  /** Milliseconds the API function runs for the claim and the release together. */
  readonly functionMs: number;
  readonly keepsSummary: boolean;
}): number {
  const upkeep = cycle.keepsSummary ? SUMMARY_UPKEEP_PER_CYCLE : { writeUnits: 0, readUnits: 0, invocations: 0 };
  const dynamo =
    (cycle.writeUnits + upkeep.writeUnits) * PRICES.writeRequestUnit.usd +
    (cycle.readUnits + upkeep.readUnits) * PRICES.readRequestUnit.usd;
  const front = 2 * PRICES.httpApiRequest.usd + (2 + upkeep.invocations) * PRICES.lambdaRequest.usd;
  const duration = (cycle.functionMs / 1000) * API_MEMORY_GB * PRICES.lambdaArmGbSecond.usd;
  return (dynamo + front + duration) * 1e6;
}

const HOURS_A_MONTH = 730;

/**
 * Dollars a managed address costs a month: `addresses` held all month, each claimed and released `churnPerDay` times
 * a day at `usdPerMillion` a cycle, plus its items' storage (`bytesPerHolding`); beside VPC IPAM's per active IP-hour.
 */
export function perAddressMonth(options: {
  readonly addresses: number;
  readonly churnPerDay: number;
  readonly usdPerMillion: number;
  readonly bytesPerHolding: number;
}): { readonly ours: number; readonly ipam: number } {
  const cycles = options.addresses * options.churnPerDay * (HOURS_A_MONTH / 24);
  const storageGb = (options.addresses * options.bytesPerHolding) / 1e9;
  const total = (cycles * options.usdPerMillion) / 1e6 + storageGb * PRICES.storage.usd;
  return { ours: total / options.addresses, ipam: PRICES.vpcIpamActiveIpHour.usd * HOURS_A_MONTH };
}
