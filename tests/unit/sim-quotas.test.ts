import { describe, expect, it } from 'vitest';
import { AWS_DEFAULTS, PER_KEY, Throughput, warmed } from '../../sim/quotas.ts';

const write = (key: string, units = 1, scope = 'table') => ({ scope, key, kind: 'write' as const, units });
const read = (key: string, units = 1, scope = 'table') => ({ scope, key, kind: 'read' as const, units });

/** Admitted units of `charge` over `ms` of calls 1 ms apart. */
function admitted(
  t: Throughput,
  charge: (i: number) => Parameters<Throughput['take']>[0],
  ms: number,
  from = 0,
): number {
  let ok = 0;
  for (let i = 0; i < ms; i += 1) if (t.take(charge(i), from + i) === undefined) ok += 1;
  return ok;
}

describe('Throughput', () => {
  describe('Method: take', () => {
    it('holds a new on-demand table to its starting 4,000 write units a second after its burst', () => {
      // Prepare: 8 distinct keys a call, spread over the partitions, 10 units each (10,000 units/s asked)
      const t = new Throughput({ ...AWS_DEFAULTS, partitions: 64 });

      // Act: the first second spends the burst; the second is the sustained rate
      admitted(t, (i) => [write(`k${i}`, 10)], 1000);
      const second = admitted(t, (i) => [write(`k${i}`, 10)], 1000, 1000);

      // Assess
      expect(second * 10).toBeGreaterThanOrEqual(3900);
      expect(second * 10).toBeLessThanOrEqual(4100);
    });

    it('gives a partition 3,000 read units and, apart, 1,000 write units a second', () => {
      const t = new Throughput({ ...warmed(AWS_DEFAULTS, 40_000, 40_000), partitions: 1 });

      // 3 read units and 1 write unit a millisecond on one key: each at its own budget, neither refused
      admitted(t, () => [read('p', 3), write('q', 1)], 1000);
      const both = admitted(t, () => [read('p', 3), write('q', 1)], 1000, 1000);
      // Past a budget, that kind is refused: 6 read units a millisecond get about 3,000 units a second through (the
      // first second spends the burst)
      admitted(t, () => [read('p', 6)], 1000, 2000);
      const reads = admitted(t, () => [read('p', 6)], 1000, 3000);

      expect(both).toBe(1000);
      expect(reads * 6).toBeGreaterThanOrEqual(2900);
      expect(reads * 6).toBeLessThanOrEqual(3100);
      expect(t.take([read('p', 3000)], 4000)).toBe('partition|read|table|0');
    });

    it('caps a warmed table at its table-level write quota', () => {
      const t = new Throughput({ ...warmed(AWS_DEFAULTS, 80_000, 80_000), partitions: 1000 });

      // 60,000 units a second asked: the quota's second of burst lasts two seconds at that deficit
      admitted(t, (i) => [write(`k${i}`, 60)], 2000);
      const units = admitted(t, (i) => [write(`k${i}`, 60)], 1000, 2000) * 60;

      expect(units).toBeLessThanOrEqual(40_100);
      expect(units).toBeGreaterThanOrEqual(39_000);
      expect(t.take([write('x', 60)], 3000)).toBe('quota|write|table');
    });

    it('lets a warmed table use its warm read and its warm write throughput together, and a new table only a mix of its start', () => {
      // Prepare: 30,000 read and 30,000 write units a second, spread over many keys and partitions
      const both = (i: number) => [write(`w${i}`, 30), read(`r${i}`, 30)];
      const warm = new Throughput({ ...warmed(AWS_DEFAULTS, 40_000, 40_000), partitions: 1000 });
      const fresh = new Throughput({
        ...AWS_DEFAULTS,
        startReadUnits: 120_000,
        startWriteUnits: 40_000,
        partitions: 1000,
      });

      // Act: the second second, after the first spent the burst
      admitted(warm, both, 1000);
      admitted(fresh, both, 1000);
      const warmCalls = admitted(warm, both, 1000, 1000);
      const freshCalls = admitted(fresh, both, 1000, 1000);

      // Assess: warm throughput is a read value and a write value; a new table's start is one budget (a read a third)
      expect(warmCalls).toBe(1000);
      expect(freshCalls * (30 + 30 / 3)).toBeLessThanOrEqual(40_100);
      expect(freshCalls * (30 + 30 / 3)).toBeGreaterThanOrEqual(39_000);
    });

    it('splits a partition refused for a minute', () => {
      const t = new Throughput({ ...warmed(AWS_DEFAULTS, 40_000, 40_000), partitions: 1 });

      // Two keys in the one partition, 1,500 units a second between them: refused from ~2 s (the burst spent), split 60 s later
      admitted(t, (i) => [write(i % 2 ? 'a' : 'b', 1.5)], 61_000);
      expect(t.partitions().table).toEqual({ partitions: 1, splits: 0 });
      admitted(t, (i) => [write(i % 2 ? 'a' : 'b', 1.5)], 3000, 61_000);

      expect(t.partitions().table).toEqual({ partitions: 2, splits: 1 });
    });

    it('keeps the older per-key model: a bucket per key, reads and writes apart', () => {
      const t = new Throughput(PER_KEY);

      expect(admitted(t, () => [write('one', 1), read('one', 3)], 1000)).toBe(1000);
      expect(t.take([write('one', 2000)], 1000)).toBe('partition|write|table|one');
    });
  });
});
