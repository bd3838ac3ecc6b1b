import { describe, expect, it } from 'vitest';
import { DescribeTableCommand, DescribeTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { freshTable } from '../support/dynamo.ts';
import { tableDefinition } from '../../infra/table.ts';

describe('Table: created from infra/table.json on DynamoDB Local', () => {
  it('has the keys, indexes, stream and TTL of the deployed definition', async () => {
    // Prepare
    const { client, tableName } = await freshTable('ipam-test', { stream: true });
    // Act
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }));
    const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
    // Assess
    expect(Table?.KeySchema).toEqual(tableDefinition.KeySchema);
    expect(Table?.GlobalSecondaryIndexes?.map((i) => i.IndexName).sort()).toEqual(
      tableDefinition.GlobalSecondaryIndexes.map((i) => i.IndexName).sort(),
    );
    expect(Table?.StreamSpecification).toEqual({ StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' });
    expect(Table?.LatestStreamArn).toMatch(/^arn:aws:dynamodb:/);
    expect(ttl.TimeToLiveDescription?.AttributeName).toBe(tableDefinition.TimeToLiveSpecification.AttributeName);
  });
});
