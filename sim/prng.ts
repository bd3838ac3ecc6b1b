/**
 * The simulator's one source of randomness: xoroshiro128+ from pure-rand (the generator fast-check uses), seeded by
 * the run's seed. Every random choice of a run (latencies, faults, workload, and the core's own `Random` port) is
 * drawn from a stream forked off it by name, so adding draws to one stream does not shift the others, and one seed
 * replays one history exactly.
 */
import { uniformBigInt } from 'pure-rand/distribution/uniformBigInt';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import type { Random } from '../shared/core/ports.ts';

type Generator = ReturnType<typeof xoroshiro128plus>;

/** FNV-1a of a name, mixed into the seed of a forked stream. */
function hashName(name: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < name.length; i += 1) {
    hash ^= name.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** Kubernetes' generateName alphabet, as the system Random uses (shared/adapters/system.ts). */
const ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

export class Prng implements Random {
  private readonly rng: Generator;
  private uids = 0;

  constructor(
    readonly seed: number,
    readonly name = 'root',
  ) {
    this.rng = xoroshiro128plus((seed ^ hashName(name)) | 0);
  }

  /** An independent stream for one part of the simulation. */
  fork(name: string): Prng {
    return new Prng(this.seed, `${this.name}/${name}`);
  }

  /** A uniform integer in [from, to]. */
  int(from: number, to: number): number {
    return uniformInt(this.rng, from, to);
  }

  /** A uniform float in [0, 1). */
  unit(): number {
    return uniformFloat64(this.rng);
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return p > 0 && this.unit() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty list');
    return items[this.int(0, items.length - 1)]!;
  }

  /** A lognormal draw with the given median and 99th percentile (a right-skewed latency). */
  lognormal(median: number, p99: number): number {
    const sigma = Math.log(p99 / median) / 2.326;
    // Box-Muller; 1 - unit() keeps the logarithm finite.
    const z = Math.sqrt(-2 * Math.log(1 - this.unit())) * Math.cos(2 * Math.PI * this.unit());
    return median * Math.exp(sigma * z);
  }

  /** An exponential draw with the given mean (inter-arrival times). */
  exponential(mean: number): number {
    return -mean * Math.log(1 - this.unit());
  }

  below(bound: bigint): bigint {
    if (bound <= 0n) throw new RangeError('bound must be positive');
    return uniformBigInt(this.rng, 0n, bound - 1n);
  }

  suffix(length: number): string {
    return Array.from({ length }, () => ALPHABET[this.int(0, ALPHABET.length - 1)]).join('');
  }

  /** A unique id: a stream-local counter and random bits (unique within a run, as the core needs). */
  uid(): string {
    this.uids += 1;
    const bits = (this.int(0, 0x7fffffff) >>> 0).toString(16).padStart(8, '0');
    return `${hashName(this.name).toString(16).padStart(8, '0')}-${this.uids.toString(16)}-${bits}`;
  }
}
