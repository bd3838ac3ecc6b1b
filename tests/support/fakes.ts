import type { Clock } from '../../shared/core/ports.ts';

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  constructor(private now = Date.UTC(2026, 10, 21, 12, 0, 0)) {}
  nowMs(): number {
    return this.now;
  }
  advance(ms: number): void {
    this.now += ms;
  }
}

/** An owner reference. */
export const owner = (uid: string, kind = 'Pod') => ({ kind, name: `${kind.toLowerCase()}-${uid}`, uid });
