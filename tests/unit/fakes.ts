import type { Random } from '../../shared/core/ports.ts';

/** mulberry32: a tiny seeded generator of 32-bit words, so a failing run can be replayed from its seed. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** A deterministic Random: the same seed gives the same rolls. `rolls` counts calls of below(). */
export class SeededRandom implements Random {
  rolls = 0;
  private readonly next: () => number;
  private uids = 0;

  constructor(seed: number) {
    this.next = mulberry32(seed);
  }

  below(bound: bigint): bigint {
    if (bound <= 0n) throw new RangeError('bound must be positive');
    this.rolls += 1;
    // 32 bits more than the bound needs keeps the modulo bias far below anything a test could see.
    let value = 0n;
    for (let bits = 0; bits < bound.toString(2).length + 32; bits += 32) value = (value << 32n) | BigInt(this.next());
    return value % bound;
  }

  unit(): number {
    return this.next() / 2 ** 32;
  }

  suffix(length: number): string {
    return Array.from({ length }, () => 'bcdfghjklmnpqrstvwxz2456789'[this.next() % 27]).join('');
  }

  uid(): string {
    this.uids += 1;
    return `uid-${this.uids}`;
  }
}

/**
 * A Random that answers below() from a script, so a test names the exact start offset of a scan.
 * A roll outside [0, bound) or a call past the end of the script fails the test instead of passing by luck.
 */
export class ScriptedRandom implements Random {
  readonly bounds: bigint[] = [];

  constructor(private readonly script: bigint[]) {}

  below(bound: bigint): bigint {
    this.bounds.push(bound);
    const roll = this.script.shift();
    if (roll === undefined) throw new Error(`ScriptedRandom: no roll left for below(${bound})`);
    if (roll < 0n || roll >= bound) throw new Error(`ScriptedRandom: roll ${roll} is outside [0, ${bound})`);
    return roll;
  }

  unit(): number {
    return 0;
  }

  suffix(length: number): string {
    return 'x'.repeat(length);
  }

  uid(): string {
    return 'uid-scripted';
  }
}
