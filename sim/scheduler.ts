/**
 * Virtual time. Simulated work is ordinary async code that waits only on `sleep`; the scheduler wakes one sleeper
 * at a time, in (time, order of scheduling) order, and lets the microtasks it started run to completion
 * (`setImmediate` runs after the microtask queue is empty) before it wakes the next. So one run is one total order
 * of steps, the same on every machine, and no wall-clock time passes between steps.
 *
 * Rule for code running under it: no real timers or I/O. The core and MemoryTable have none (MemoryTable reads no
 * clock, randomness or timers); the one real timer of the composition root (the legacy allocator's jitter) is
 * replaced by the simulator (see world.ts).
 */

interface Sleeper {
  readonly at: number;
  readonly order: number;
  /** Undefined once a timer is cancelled: it still takes its step (the step count and the clock stay as they were), doing nothing. */
  wake: (() => void) | undefined;
}

/** A timer (`Scheduler.timer`): cancel it once its callback would have nothing to do. */
export interface Timer {
  cancel(): void;
}

/** A binary min-heap of sleepers by (at, order). */
class SleeperHeap {
  private readonly items: Sleeper[] = [];

  get size(): number {
    return this.items.length;
  }

  peek(): Sleeper | undefined {
    return this.items[0];
  }

  push(item: Sleeper): void {
    const items = this.items;
    items.push(item);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(items[i]!, items[parent]!)) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }

  pop(): Sleeper | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length && last) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < items.length && before(items[l]!, items[m]!)) m = l;
        if (r < items.length && before(items[r]!, items[m]!)) m = r;
        if (m === i) break;
        [items[i], items[m]] = [items[m]!, items[i]!];
        i = m;
      }
    }
    return top;
  }
}

/**
 * The timers of one delay, oldest first: each is due at the time it was set plus the same delay, and time never goes
 * back, so they fall due in the order they were set, already the heap's (time, order) order. A queue keeps them out
 * of the heap: at 10,000 requests a second the gateway's 30 s timeouts alone were 600,000 of its entries.
 */
class SleeperQueue {
  private items: Sleeper[] = [];
  private head = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  peek(): Sleeper | undefined {
    return this.items[this.head];
  }

  push(item: Sleeper): void {
    this.items.push(item);
  }

  shift(): void {
    this.head += 1;
    if (this.head > 4096 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }
}

function before(a: Sleeper, b: Sleeper): boolean {
  return a.at < b.at || (a.at === b.at && a.order < b.order);
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export class Scheduler {
  private readonly sleepers = new SleeperHeap();
  /** Timers by their delay (`timer`), each queue in due order. */
  private readonly timers = new Map<number, SleeperQueue>();
  private order = 0;
  private current = 0;
  private stopped: Error | undefined;
  /** Steps taken (sleepers woken). */
  steps = 0;

  /** Virtual milliseconds since the start of the run. */
  get now(): number {
    return this.current;
  }

  /** Resolves after `ms` virtual milliseconds (0: after everything already due now). */
  sleep(ms: number): Promise<void> {
    return new Promise((wake) =>
      this.sleepers.push({ at: this.current + Math.max(0, ms), order: (this.order += 1), wake }),
    );
  }

  /**
   * Calls `fire` after `ms` virtual milliseconds, unless cancelled first. A cheap timeout: a sleep whose promise
   * nobody needs, so a cancelled one holds no closure while it waits; it is woken (counted as a step) either way,
   * so a run takes the same steps at the same times as with a sleep.
   */
  timer(ms: number, fire: () => void): Timer {
    const delay = Math.max(0, ms);
    const sleeper: Sleeper = { at: this.current + delay, order: (this.order += 1), wake: fire };
    let queue = this.timers.get(delay);
    if (!queue) {
      queue = new SleeperQueue();
      this.timers.set(delay, queue);
    }
    queue.push(sleeper);
    return {
      cancel: () => {
        sleeper.wake = undefined;
      },
    };
  }

  /** Stops the run at the next step with this error (a broken invariant). */
  stop(error: Error): void {
    this.stopped ??= error;
  }

  get stoppedBy(): Error | undefined {
    return this.stopped;
  }

  /** Runs steps until virtual time `untilMs` (sleepers due later stay asleep), or until stopped. */
  async runUntil(untilMs: number): Promise<void> {
    await settle();
    while (!this.stopped) {
      // The first due of the heap's head and the timer queues' heads, by (time, order).
      let next = this.sleepers.peek();
      let from: SleeperQueue | undefined;
      for (const queue of this.timers.values()) {
        const head = queue.peek();
        if (head && (!next || before(head, next))) {
          next = head;
          from = queue;
        }
      }
      if (!next || next.at > untilMs) break;
      if (from) from.shift();
      else this.sleepers.pop();
      this.current = next.at;
      this.steps += 1;
      if (!next.wake) continue;
      next.wake();
      await settle();
    }
    if (!this.stopped) this.current = Math.max(this.current, untilMs);
  }

  /** Sleepers waiting. */
  get pending(): number {
    let timers = 0;
    for (const queue of this.timers.values()) timers += queue.size;
    return this.sleepers.size + timers;
  }
}
