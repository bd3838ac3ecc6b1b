import { tableDefinition } from '../../infra/table.ts';

/** A secondary index as the meter needs it: key names and what it projects (which decides an entry's size). */
export interface IndexSchema {
  readonly name: string;
  readonly pk: string;
  readonly sk: string;
  readonly projection: 'ALL' | 'KEYS_ONLY' | 'INCLUDE';
}

/** The key schema of the table: billing and the per-partition limiter both work per partition key value. */
export interface TableSchema {
  readonly pk: string;
  readonly sk: string;
  readonly indexes: readonly IndexSchema[];
}

function keyOf(schema: readonly { AttributeName: string; KeyType: string }[], type: 'HASH' | 'RANGE'): string {
  const name = schema.find((k) => k.KeyType === type)?.AttributeName;
  if (name === undefined) throw new Error(`infra/table.json: a key schema has no ${type} key`);
  return name;
}

/** The schema of infra/table.json, the same definition the harness creates its tables from. */
export const tableSchema: TableSchema = {
  pk: keyOf(tableDefinition.KeySchema, 'HASH'),
  sk: keyOf(tableDefinition.KeySchema, 'RANGE'),
  indexes: tableDefinition.GlobalSecondaryIndexes.map((index) => ({
    name: index.IndexName,
    pk: keyOf(index.KeySchema, 'HASH'),
    sk: keyOf(index.KeySchema, 'RANGE'),
    projection: index.Projection.ProjectionType as IndexSchema['projection'],
  })),
};
