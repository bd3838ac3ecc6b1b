import { describe, expect, it } from 'vitest';
import { Scheduler } from '../../sim/scheduler.ts';

describe('Class: Scheduler', () => {
  describe('Method: timer', () => {
    it('fires timers and wakes sleepers in one (time, order) order, and counts a cancelled timer as a step that does nothing', async () => {
      // Prepare: sleeps and timers of two delays, set at two moments, some due at the same time
      const scheduler = new Scheduler();
      const seen: string[] = [];
      const sleep = (ms: number, name: string) =>
        void scheduler.sleep(ms).then(() => seen.push(`${name}@${scheduler.now}`));
      const timer = (ms: number, name: string) => scheduler.timer(ms, () => seen.push(`${name}@${scheduler.now}`));
      timer(30, 'timer-30a');
      sleep(30, 'sleep-30');
      const cancelled = timer(10, 'timer-10a');
      timer(10, 'timer-10b');
      sleep(5, 'sleep-5');
      await scheduler.runUntil(5);
      timer(25, 'timer-25');
      timer(30, 'timer-30b');
      cancelled.cancel();

      // Act
      await scheduler.runUntil(100);

      // Assess: due order, ties by the order they were set; the cancelled one took its step at 10 and did nothing
      expect(seen).toEqual(['sleep-5@5', 'timer-10b@10', 'timer-30a@30', 'sleep-30@30', 'timer-25@30', 'timer-30b@35']);
      expect(scheduler.steps).toBe(7);
      expect(scheduler.pending).toBe(0);
    });
  });
});
