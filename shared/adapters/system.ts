import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import type { Clock, Random, Timer } from '../core/ports.ts';

/** The wall clock. */
export const systemClock: Clock = { nowMs: () => Date.now() };

/** Waits on a real timer. */
export const systemTimer: Timer = { sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)) };

const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** Cryptographic randomness (uniform BigInts by rejection sampling). */
export const cryptoRandom: Random = {
  below(bound: bigint): bigint {
    if (bound <= 0n) throw new RangeError('bound must be positive');
    if (bound <= 0xffffffffffffn) return BigInt(randomInt(0, Number(bound)));
    const bytes = Math.ceil(bound.toString(16).length / 2);
    for (;;) {
      const value = BigInt(`0x${randomBytes(bytes).toString('hex')}`);
      const limit = (1n << BigInt(bytes * 8)) - ((1n << BigInt(bytes * 8)) % bound);
      if (value < limit) return value % bound;
    }
  },
  // 48 random bits: randomInt's range must stay below 2^48.
  unit: () => randomBytes(6).readUIntBE(0, 6) / 2 ** 48,
  // Kubernetes' generateName alphabet: no vowels, so no words; no 0/1/3 look-alikes.
  suffix: (length: number) => Array.from({ length }, () => ALPHABET[randomInt(0, ALPHABET.length)]).join(''),
  uid: () => randomUUID(),
};
