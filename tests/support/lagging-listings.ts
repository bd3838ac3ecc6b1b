import type { Key } from '../../shared/adapters/dynamodb/keys.ts';
import type { Query, QueryPage, Table, TxVerdict, WriteOp, WriteResult } from '../../shared/adapters/dynamodb/table.ts';
import { PassThroughTable } from './pass-through-table.ts';

const keyText = (key: Key): string => `${key.PK}|${key.SK}`;
const keyOfOp = (op: WriteOp): Key =>
  op.kind === 'put' ? { PK: op.item.PK as string, SK: op.item.SK as string } : op.key;

/**
 * A table whose claims and leases listings (index queries of `CLAIMS#...` and `ADDR#...`) lag behind its writes, on
 * any engine: an item written through it is left out of those listings until it settles, `lag()` steps later (a step
 * is a call of `step()`; a lag the test never reaches is a listing that has not caught up by then, which a real
 * index does not promise against either). Consistent reads and other queries see every write. A listing here only
 * misses items, never shows a gone one: what a lagging index shows of a deleted item is read consistently anyway.
 */
export class LaggingListings extends PassThroughTable {
  /** Items not listed yet, with the step from which they are. */
  private readonly unsettled = new Map<string, number>();
  private steps = 0;

  constructor(
    inner: Table,
    /** The lag of a write's item, in steps (0: listed at once). */
    private readonly lag: (op: WriteOp) => number,
    /** Whether a listing lags (default: every claims and leases listing). */
    private readonly lags: (partition: string) => boolean = (p) => p.startsWith('CLAIMS#') || p.startsWith('ADDR#'),
  ) {
    super(inner);
  }

  /** One step of the listings' lag. */
  step(): void {
    this.steps += 1;
    for (const [key, at] of this.unsettled) if (at <= this.steps) this.unsettled.delete(key);
  }

  /** Every listing caught up. */
  settle(): void {
    this.unsettled.clear();
  }

  private wrote(ops: readonly WriteOp[]): void {
    for (const op of ops) {
      if (op.kind === 'check') continue;
      const lag = this.lag(op);
      if (lag > 0) this.unsettled.set(keyText(keyOfOp(op)), this.steps + lag);
    }
  }

  override async write(op: WriteOp): Promise<WriteResult> {
    const result = await this.inner.write(op);
    if (result.ok) this.wrote([op]);
    return result;
  }

  override async transact(ops: readonly WriteOp[]): Promise<TxVerdict[] | undefined> {
    const verdicts = await this.inner.transact(ops);
    if (!verdicts) this.wrote(ops);
    return verdicts;
  }

  override async query(query: Query): Promise<QueryPage> {
    if (query.index !== 'GSI1' || !this.lags(query.partition)) return this.inner.query(query);
    // The table key of each item tells whether it is listed yet: read it too, and answer what was asked.
    const asked = query.attributes;
    const extra = asked ? ['PK', 'SK'].filter((a) => !asked.includes(a)) : [];
    const page = await this.inner.query(asked ? { ...query, attributes: [...asked, ...extra] } : query);
    const listed = page.items
      .filter((item) => !this.unsettled.has(keyText({ PK: item.PK as string, SK: item.SK as string })))
      .map((item) =>
        extra.length ? Object.fromEntries(Object.entries(item).filter(([a]) => !extra.includes(a))) : item,
      );
    return { ...page, items: listed, count: listed.length };
  }
}
