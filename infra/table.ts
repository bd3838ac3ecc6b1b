import tableJson from './table.json' with { type: 'json' };

/** The single table's CloudFormation properties; serverless.yml reads the same JSON file, so the two never disagree. */
export const tableDefinition = tableJson;

/** Names of the table's secondary indexes, with what each one serves. */
export const Index = {
  /** Listings in key order: leases by pool/family/shard and address, claims by pool/shard and name, pools by name. */
  Listing: 'GSI1',
  /** Claims by owner uid (release by owner, generateName recovery). */
  Owner: 'GSI2',
  /** Sparse, sharded expiry buckets of claims with a TTL, read by the reconciler. */
  Expiry: 'GSI3',
} as const;
