import { describe, expect, it } from 'vitest';
import { keys } from '../../shared/adapters/dynamodb/keys.ts';
import { attributeIs } from '../../shared/adapters/dynamodb/conditions.ts';
import { freedBumps } from '../../shared/adapters/dynamodb/writes/freed.ts';
import { MemoryTable } from '../../shared/adapters/memory/memory-table.ts';
import { LeaseState } from '../../shared/core/model.ts';
import { FreedAudit } from '../support/freed-audit.ts';

// The memory engine of every contract suite runs on FreedAudit (tests/support/engines.ts), so each write the adapters
// build in those suites is checked. These cases plant writes that break the rule, and show the audit refuses them.
const LEASE = keys.lease('p', '10.0.0.1');

async function auditedWithLease(expiresAt?: number): Promise<FreedAudit> {
  const table = new FreedAudit(new MemoryTable());
  await table.write({
    kind: 'put',
    item: { ...LEASE, range: 'r', claim: 'c1', ...(expiresAt !== undefined ? { expiresAt } : {}) },
  });
  return table;
}

describe('FreedAudit: a write that can free an address bumps a freed counter of its range in its transaction', () => {
  it('lets a release through that deletes the lease and bumps its range (the shape writes/release.ts builds)', async () => {
    const table = await auditedWithLease();
    await expect(
      table.transact([{ kind: 'delete', key: LEASE }, ...freedBumps('p', ['r'], 'c1')]),
    ).resolves.toBeUndefined();
    expect(table.violations).toEqual([]);
  });

  it('refuses a planted delete of a lease with no bump, in a transaction or alone', async () => {
    const table = await auditedWithLease();
    await expect(table.transact([{ kind: 'delete', key: LEASE }])).rejects.toThrow(
      /frees an address of range r and bumps none/,
    );
    const alone = await auditedWithLease();
    await expect(alone.write({ kind: 'delete', key: LEASE })).rejects.toThrow(/FreedAudit/);
  });

  it("refuses a bump of another range's counter in place of the lease's own", async () => {
    const table = await auditedWithLease();
    await expect(table.transact([{ kind: 'delete', key: LEASE }, ...freedBumps('p', ['other'], 'c1')])).rejects.toThrow(
      /range r/,
    );
  });

  it('refuses a planted Released conversion and a renewal to an earlier expiry without a bump; a later expiry frees nothing', async () => {
    const released = await auditedWithLease();
    await expect(
      released.transact([{ kind: 'update', key: LEASE, update: { set: { state: LeaseState.Released } } }]),
    ).rejects.toThrow(/FreedAudit/);
    const earlier = await auditedWithLease(2_000);
    await expect(
      earlier.transact([{ kind: 'update', key: LEASE, update: { set: { expiresAt: 1_000 } } }]),
    ).rejects.toThrow(/FreedAudit/);
    const first = await auditedWithLease();
    await expect(
      first.transact([{ kind: 'update', key: LEASE, update: { set: { expiresAt: 1_000 } } }]),
    ).rejects.toThrow(/FreedAudit/);
    const later = await auditedWithLease(2_000);
    await expect(
      later.transact([{ kind: 'update', key: LEASE, update: { set: { expiresAt: 3_000 } } }]),
    ).resolves.toBeUndefined();
    expect(later.violations).toEqual([]);
  });

  it('says nothing of a transaction that did not commit (its condition failed)', async () => {
    const table = await auditedWithLease();
    const verdicts = await table.transact([{ kind: 'delete', key: LEASE, condition: attributeIs('claim', 'c2') }]);
    expect(verdicts?.[0]?.code).toBe('ConditionalCheckFailed');
    expect(table.violations).toEqual([]);
  });
});
