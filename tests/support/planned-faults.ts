import { MemoryTable, type Fault, type TableCall } from '../../shared/adapters/memory/memory-table.ts';
import type { TestEngine } from './engines.ts';
import { FollowedTable } from './stream-follower.ts';

/** The memory engine with faults the test plans: each planned fault hits the first call it matches, once. */
export function plannedFaults(): {
  engine: TestEngine;
  plan(fault: Fault, match: (call: TableCall) => boolean, times?: number): void;
} {
  const planned: { fault: Fault; match: (call: TableCall) => boolean }[] = [];
  const faults = (call: TableCall): Fault | undefined => {
    const i = planned.findIndex((p) => p.match(call));
    return i < 0 ? undefined : planned.splice(i, 1)[0]!.fault;
  };
  return {
    engine: {
      name: 'memory, planned faults',
      fresh: async () => ({
        table: new FollowedTable(new MemoryTable({ name: 'faulty', faults })),
        env: { TABLE_NAME: 'faulty', LOCAL_STACK: 'true' },
      }),
    },
    plan: (fault, match, times = 1) => planned.push(...Array.from({ length: times }, () => ({ fault, match }))),
  };
}
