import { describe, expect, it } from 'vitest';
import type { DynamoDBRecord } from 'aws-lambda';
import { isTtlDeletion, leaseChangeOf } from '../../shared/adapters/dynamodb/stream-records.ts';
import { createMirrorHandler } from '../../shared/adapters/stream/mirror-handler.ts';
import { addressOfBit, Bitmap, bitOf, legacyWindow } from '../../shared/core/bitmap/bitmap.ts';
import type { BitmapWrite } from '../../shared/core/bitmap/ports.ts';
import type { RangeAllocation } from '../../shared/core/bitmap/range-allocation.ts';
import { NotReadyError } from '../../shared/core/errors.ts';
import { formatAddress, parseAddress, type IpFamily } from '../../shared/core/ip/address.ts';
import { parseCidr } from '../../shared/core/ip/cidr.ts';
import { LegacyMirror } from '../../shared/core/mirror/legacy-mirror.ts';
import { LeaseItemPresence, type LeaseChange } from '../../shared/core/base/lease-change.ts';
import type { PoolView, Range } from '../../shared/core/model.ts';

const range = (name: string, cidr: string): Range => ({
  pool: 'p',
  name,
  cidr,
  family: cidr.includes(':') ? 'IPv6' : 'IPv4',
  state: 'Ready',
  legacy: true,
  createdAt: '',
});
const view: PoolView = {
  pool: { name: 'p', exclude: [], createdAt: '' },
  ranges: [range('v4', '10.0.0.0/24'), range('v6', 'fd00::/112')],
};

/** An in-memory table: lease items by address, bitmap documents by range name, and a log of what was called. */
class FakeTable {
  readonly leases = new Map<string, string>();
  readonly docs = new Map<string, RangeAllocation>();
  readonly calls: string[] = [];
  /** Range names whose put throws (a throttle). */
  readonly failing = new Set<string>();
  /** Runs once before the next put of a range (a concurrent writer). */
  readonly before = new Map<string, () => void>();

  readonly store = {
    getPoolView: async (pool: string) => {
      this.calls.push(`view ${pool}`);
      return pool === 'p' ? view : undefined;
    },
    takenAddresses: async (_pool: string, family: IpFamily, intervals: readonly (readonly [bigint, bigint])[]) => {
      this.calls.push(`taken ${family}`);
      return [...this.leases.keys()]
        .map((a) => parseAddress(a))
        .filter((a) => a.family === family && intervals.some(([f, t]) => a.value >= f && a.value <= t))
        .map((a) => a.value);
    },
  };

  readonly bitmaps = {
    getBitmap: async (_pool: string, name: string) => this.docs.get(name),
    leaseHolders: async (_pool: string, addresses: readonly string[]) =>
      new Map(addresses.filter((a) => this.leases.has(a)).map((a) => [a, this.leases.get(a)!])),
    putBitmap: async (write: BitmapWrite) => {
      this.calls.push(`put ${write.rangeName}`);
      this.before.get(write.rangeName)?.();
      this.before.delete(write.rangeName);
      if (this.failing.has(write.rangeName)) throw new NotReadyError('throttled');
      const current = this.docs.get(write.rangeName);
      const ok = write.expected === 'absent' ? current === undefined : current?.version === write.expected.version;
      if (!ok) return 'changed' as const;
      this.docs.set(write.rangeName, write.allocation);
      return 'written' as const;
    },
  };

  mirror(gates = { MultiCIDRServiceAllocator: true, DisableAllocatorDualWrite: false }): LegacyMirror {
    return new LegacyMirror({ pools: this.store, leases: this.store, bitmaps: this.bitmaps, gates });
  }

  /** The addresses set in a range's stored bitmap. */
  held(name: string): string[] {
    const r = view.ranges.find((x) => x.name === name)!;
    const cidr = parseCidr(r.cidr);
    const bitmap = Bitmap.decode(this.docs.get(name)!.data, legacyWindow(cidr));
    return [...bitmap.setBits()].map((bit) => formatAddress({ family: r.family, value: addressOfBit(cidr, bit) }));
  }
}

let seq = 0;
const change = (address: string, state: LeaseItemPresence): LeaseChange => ({
  id: String((seq += 1)),
  pool: 'p',
  address,
  state,
});

describe('Class: LegacyMirror', () => {
  describe('Method: apply', () => {
    it('does nothing at all once dual-write is off (MultiCIDRServiceAllocator=true, DisableAllocatorDualWrite=true)', async () => {
      // Prepare
      const table = new FakeTable();
      // Act
      const result = await table
        .mirror({ MultiCIDRServiceAllocator: true, DisableAllocatorDualWrite: true })
        .apply([change('10.0.0.1', LeaseItemPresence.Held)]);
      // Assess
      expect(result).toEqual({ failed: [], ranges: [], active: false });
      expect(table.calls).toEqual([]);
    });

    it('keeps bitmaps in legacy mode whatever DisableAllocatorDualWrite says (the bitmap allocates there)', async () => {
      // Prepare
      const table = new FakeTable();
      table.leases.set('10.0.0.1', 'u1');
      // Act
      const result = await table
        .mirror({ MultiCIDRServiceAllocator: false, DisableAllocatorDualWrite: true })
        .apply([change('10.0.0.1', LeaseItemPresence.Held)]);
      // Assess
      expect(result.active).toBe(true);
      expect(table.held('v4')).toEqual(['10.0.0.1']);
    });

    it('creates a missing IPv6 bitmap from the IPv6 range own leases, with the IPv6 CIDR as its range', async () => {
      // Prepare: leases in both families; only an IPv6 change arrives.
      const table = new FakeTable();
      for (const [a, u] of [
        ['10.0.0.1', 'u1'],
        ['fd00::1', 'u1'],
        ['fd00::7', 'u2'],
      ] as const)
        table.leases.set(a, u);
      // Act
      const result = await table.mirror().apply([change('fd00::7', LeaseItemPresence.Held)]);
      // Assess
      expect(result.ranges).toEqual([{ pool: 'p', range: 'v6', outcome: 'created', changes: 1 }]);
      expect(table.docs.get('v6')).toMatchObject({ range: 'fd00::/112', version: 1 });
      expect(table.held('v6')).toEqual(['fd00::1', 'fd00::7']);
      expect(table.docs.has('v4')).toBe(false);
    });

    it('makes one write per bitmap per batch, however many records it holds', async () => {
      // Prepare
      const table = new FakeTable();
      table.docs.set('v4', { range: '10.0.0.0/24', data: new Uint8Array(0), version: 4 });
      const changes = ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4'].map(
        (a) => (table.leases.set(a, 'u'), change(a, LeaseItemPresence.Held)),
      );
      // Act
      await table.mirror().apply(changes);
      // Assess
      expect(table.calls.filter((c) => c.startsWith('put'))).toEqual(['put v4']);
      expect(table.docs.get('v4')!.version).toBe(5);
      expect(table.held('v4')).toEqual(['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4']);
    });

    it('writes nothing when every bit is already right (a redelivered batch)', async () => {
      // Prepare
      const table = new FakeTable();
      table.leases.set('10.0.0.9', 'u');
      const bitmap = Bitmap.empty(254);
      bitmap.set(bitOf(parseCidr('10.0.0.0/24'), parseAddress('10.0.0.9').value)!);
      table.docs.set('v4', { range: '10.0.0.0/24', data: bitmap.encode(), version: 2 });
      // Act
      const result = await table
        .mirror()
        .apply([change('10.0.0.9', LeaseItemPresence.Held), change('10.0.0.8', LeaseItemPresence.Gone)]);
      // Assess
      expect(result.ranges[0]!.outcome).toBe('unchanged');
      expect(table.calls.filter((c) => c.startsWith('put'))).toEqual([]);
    });

    it('reports only the records of the bitmap whose write failed', async () => {
      // Prepare
      const table = new FakeTable();
      table.failing.add('v6');
      const v4 = change('10.0.0.1', LeaseItemPresence.Held);
      const v6a = change('fd00::1', LeaseItemPresence.Held);
      const v6b = change('fd00::2', LeaseItemPresence.Gone);
      table.leases.set('10.0.0.1', 'u').set('fd00::1', 'u');
      // Act
      const result = await table.mirror().apply([v6a, v4, v6b]);
      // Assess
      expect([...result.failed].sort()).toEqual([v6a.id, v6b.id].sort());
      expect(table.held('v4')).toEqual(['10.0.0.1']);
      expect(table.docs.has('v6')).toBe(false);
    });

    it('loses a race to a concurrent writer, reads again and keeps both changes', async () => {
      // Prepare: a legacy allocation of .20 lands between the mirror's read and its write.
      const table = new FakeTable();
      table.docs.set('v4', { range: '10.0.0.0/24', data: new Uint8Array(0), version: 1 });
      table.leases.set('10.0.0.1', 'u1');
      table.before.set('v4', () => {
        table.leases.set('10.0.0.20', 'u2');
        const bitmap = Bitmap.empty(254);
        bitmap.set(19);
        table.docs.set('v4', { range: '10.0.0.0/24', data: bitmap.encode(), version: 2 });
      });
      // Act
      const result = await table.mirror().apply([change('10.0.0.1', LeaseItemPresence.Held)]);
      // Assess
      expect(result.failed).toEqual([]);
      expect(table.held('v4')).toEqual(['10.0.0.1', '10.0.0.20']);
      expect(table.docs.get('v4')!.version).toBe(3);
      expect(table.calls.filter((c) => c.startsWith('put'))).toEqual(['put v4', 'put v4']);
    });

    it('rebuilds a bitmap that names another CIDR (a secondary range initialized from the primary) from its own leases', async () => {
      // Prepare
      const table = new FakeTable();
      table.docs.set('v6', { range: '10.0.0.0/24', data: Uint8Array.of(1), version: 3 });
      table.leases.set('fd00::3', 'u');
      // Act
      await table.mirror().apply([change('fd00::3', LeaseItemPresence.Held)]);
      // Assess
      expect(table.docs.get('v6')).toMatchObject({ range: 'fd00::/112', version: 4 });
      expect(table.held('v6')).toEqual(['fd00::3']);
    });
  });
});

/** A Lambda stream record of a lease (or another item). */
function record(
  eventName: 'INSERT' | 'MODIFY' | 'REMOVE',
  image: Record<string, string>,
  extra: Partial<DynamoDBRecord> = {},
): DynamoDBRecord {
  const attrs = Object.fromEntries(Object.entries(image).map(([k, v]) => [k, { S: v }]));
  return {
    eventName,
    dynamodb: {
      SequenceNumber: String((seq += 1)),
      Keys: { PK: attrs.PK!, SK: attrs.SK! },
      ...(eventName === 'REMOVE' ? { OldImage: attrs } : { NewImage: attrs }),
    },
    ...extra,
  };
}
const leaseImage = (address: string, claim = 'c1') => ({
  PK: `LEASE#p#${address}`,
  SK: 'LEASE',
  entity: 'lease',
  pool: 'p',
  address,
  family: 'IPv4',
  range: 'v4',
  claim,
  claimUid: `${claim}-uid`,
});

describe('Function: leaseChangeOf', () => {
  it('reads a lease INSERT as held', () => {
    const r = record('INSERT', leaseImage('10.0.0.1'));
    expect(leaseChangeOf(r)).toEqual({
      id: r.dynamodb!.SequenceNumber,
      pool: 'p',
      address: '10.0.0.1',
      state: 'held',
      // The history's view of it: a lease after, none before
      transition: {
        after: expect.objectContaining({ pool: 'p', address: '10.0.0.1' }),
        atMs: expect.any(Number),
        byTtl: false,
      },
    });
  });

  it('reads a MODIFY where another claim took over an expired lease as held (the bit stays set)', () => {
    const r = record('MODIFY', leaseImage('10.0.0.1', 'c2'));
    r.dynamodb!.OldImage = record('INSERT', leaseImage('10.0.0.1', 'c1')).dynamodb!.NewImage;
    expect(leaseChangeOf(r)).toMatchObject({ address: '10.0.0.1', state: 'held' });
  });

  it('reads a TTL deletion (userIdentity dynamodb.amazonaws.com) as gone, like any other REMOVE', () => {
    const r = record('REMOVE', leaseImage('10.0.0.1'), {
      userIdentity: { type: 'Service', principalId: 'dynamodb.amazonaws.com' },
    });
    expect(isTtlDeletion(r)).toBe(true);
    expect(leaseChangeOf(r)).toMatchObject({ address: '10.0.0.1', state: 'gone' });
    expect(isTtlDeletion(record('REMOVE', leaseImage('10.0.0.1')))).toBe(false);
  });

  it('ignores every item that is not a lease: claims, pools, bitmaps', () => {
    expect(
      leaseChangeOf(record('INSERT', { PK: 'CLAIM#p#c1', SK: 'CLAIM', entity: 'claim', pool: 'p' })),
    ).toBeUndefined();
    expect(
      leaseChangeOf(record('MODIFY', { PK: 'BITMAP#p#v4', SK: 'BITMAP', entity: 'bitmap', pool: 'p' })),
    ).toBeUndefined();
    expect(leaseChangeOf(record('INSERT', { PK: 'POOL#p', SK: '#POOL', entity: 'pool' }))).toBeUndefined();
  });

  it('reads a record without images from its key LEASE#<pool>#<address>', () => {
    const r: DynamoDBRecord = {
      eventName: 'REMOVE',
      dynamodb: { SequenceNumber: '77', Keys: { PK: { S: 'LEASE#p#fd00::1' }, SK: { S: 'LEASE' } } },
    };
    expect(leaseChangeOf(r)).toEqual({ id: '77', pool: 'p', address: 'fd00::1', state: 'gone' });
  });
});

describe('Function: createMirrorHandler', () => {
  it('answers the sequence numbers of the failed bitmap records as batchItemFailures, logs the bitmap and counts them in a metric', async () => {
    // Prepare
    const table = new FakeTable();
    table.failing.add('v4');
    const failing = record('INSERT', leaseImage('10.0.0.1'));
    const fine = record('INSERT', { ...leaseImage('fd00::1'), family: 'IPv6', range: 'v6' });
    const other = record('INSERT', { PK: 'CLAIM#p#c1', SK: 'CLAIM', entity: 'claim', pool: 'p' });
    const logged: Record<string, unknown>[] = [];
    const published: number[] = [];
    const handler = createMirrorHandler(
      () => table.mirror(),
      (entry) => logged.push(entry),
      { publishMirror: (failed) => published.push(failed) },
    );
    // Act
    const answer = await handler({ Records: [failing, fine, other] });
    const clean = await handler({ Records: [fine] });
    // Assess
    expect(answer).toEqual({ batchItemFailures: [{ itemIdentifier: failing.dynamodb!.SequenceNumber }] });
    expect(clean).toEqual({ batchItemFailures: [] });
    expect(logged).toEqual([
      expect.objectContaining({ level: 'error', pool: 'p', range: 'v4', records: 1, error: 'NotReadyError' }),
    ]);
    // The MirrorRecordsFailed metric of each batch, zeros included
    expect(published).toEqual([1, 0]);
  });
});
