import type { Clock } from '../../shared/core/ports.ts';

/** A clock tests move by hand. */
export class ManualClock implements Clock {
  // In the future: DynamoDB Local runs TTL deletion against the real clock, and would delete items whose `ttl`
  // (expiry + 24 h) lies in the real past while a test still reads them.
  constructor(private now = Date.UTC(2035, 0, 1, 12, 0, 0)) {}
  nowMs(): number {
    return this.now;
  }
  advance(ms: number): void {
    this.now += ms;
  }
}

/** An owner reference. */
export const owner = (uid: string, kind = 'Pod') => ({ kind, name: `${kind.toLowerCase()}-${uid}`, uid });
