import type { Item } from '../../shared/adapters/dynamodb/codec.ts';
import type { Key } from '../../shared/adapters/dynamodb/keys.ts';
import type { Query, QueryPage, Table, TxVerdict, WriteOp, WriteResult } from '../../shared/adapters/dynamodb/table.ts';

/** A Table that hands every call to `inner`: the base of the test decorators that watch writes (they override those). */
export class PassThroughTable<T extends Table = Table> implements Table {
  readonly name: string;

  constructor(readonly inner: T) {
    this.name = inner.name;
  }

  get(key: Key): Promise<Item | undefined> {
    return this.inner.get(key);
  }

  batchGet(keys: readonly Key[], attributes?: readonly string[]): Promise<Item[]> {
    return this.inner.batchGet(keys, attributes);
  }

  write(op: WriteOp): Promise<WriteResult> {
    return this.inner.write(op);
  }

  transact(ops: readonly WriteOp[]): Promise<TxVerdict[] | undefined> {
    return this.inner.transact(ops);
  }

  query(query: Query): Promise<QueryPage> {
    return this.inner.query(query);
  }

  describe(): Promise<string> {
    return this.inner.describe();
  }
}
