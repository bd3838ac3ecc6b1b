import type { PoolViewList } from './ports.ts';
import type { Run } from './run.ts';

/** Rows 8-10: bitmap drift of legacy ranges. Returns the number of bitmaps rebuilt and compared. */
export async function repairBitmaps(_run: Run, _views: PoolViewList): Promise<number> {
  return 0;
}
