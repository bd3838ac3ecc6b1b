/**
 * Every knob of the allocation path, in one object: its unit and why it has its value. The stages read them from
 * here (a LeaseAllocator's deps may override the four marked "per allocator"); nothing else on the path holds a number
 * but the used-up rule's own seal knobs (used-up/tuning.ts), which this object includes.
 * The measurements and history behind the values are in docs/decisions/ (0002, 0003) and BENCHMARKS.md.
 */
import { SEAL_TUNING } from '../used-up/tuning.ts';

export const TUNING = {
  /**
   * Transactions (commit rounds) one allocate call tries before answering NotReady, per allocator: a hinted pick
   * collides rarely, so 64 rounds mean a pool contended far past its design. Per allocator.
   */
  maxCommitsHinted: 64,
  /** The same for blind picks (uniform random, no hint), which collide in proportion to how full the pool is. */
  maxCommitsBlind: 4096,

  /**
   * Milliseconds a summary copy may age and still steer picks near full without being read again (behindNearFull),
   * and before a copy that shows nothing free is read again rather than trusted. Per allocator.
   */
  fullTrustMs: 1_000,

  /**
   * Random probes of a band before its scan (candidates.ts). Callers that share a view and scan from random starts
   * converge on the first free address after each run of taken ones; probes spread them over every free address
   * instead. At 90 % full, 16 probes miss all free addresses with probability 0.9^16 = 19 %, and the scan then finds
   * one anyway. Per allocator (0 leaves only the scan, as tests script it).
   */
  randomProbes: 16,

  /**
   * Collisions of one call in a family after which its hint is read again (forced), counted since its last forced
   * read: a stale view must not cost more than a couple of failed transactions.
   */
  refreshEveryCollisions: 2,

  /**
   * Reads of the hint one dynamic pick makes before the leases decide "used up" in bulk: the first read, one more when
   * the copy is likely behind near full or shows nothing free, and a third after an upper band was decided used up.
   */
  hintReadsPerPick: 3,

  /**
   * Addresses: when a summary shows at most this many free in a family's ranges, they are all read (one consistent
   * BatchGetItem, up to 16 read units) before committing. Near full, a summary behind by the stream's lag would
   * otherwise send every caller into the same few just-taken addresses, one failed transaction each.
   */
  verifyLimit: 32,

  /**
   * Addresses read at once after a collision, when more than verifyLimit show free (pickSampled). All of them are
   * taken with probability p^k when a share p of what the copy shows free was taken since it was read: at 90 % full
   * callers collide on about one first pick in eight, so 4 leaves a sample of nothing free well under one time in a
   * hundred (and that only costs another read). A larger sample pays read units on every collision.
   */
  sampleSize: 4,

  /**
   * Addresses: near full, a summary copy showing more than verifyLimit but at most this many free is read again before
   * picking when it is older than fullTrustMs or this call collided on it. The last seconds of a fill take more
   * addresses than that while the stream lags, so a pick from such a copy is likely taken: a failed transaction and a
   * sample read, where the summary costs one eventually consistent read.
   */
  nearFullLimit: 128,

  /**
   * Collisions in one call after which it stops trusting the occupancy summary and reads the lease listing: the
   * summary is then far behind the leases (a stream outage, or no stream function at all), and every further pick
   * from it would collide again.
   */
  summaryCollisionLimit: 6,

  /**
   * Addresses: near full, when a view shows at most this many free in the bands picks draw from (but more than
   * verifyLimit), a pick is drawn uniformly among all of them rather than by probes and a scan: near the end of a band
   * most probes miss, and a scan from a random start lands after the longest runs of taken ones, where callers sharing
   * a view would converge and collide. Collecting them reads the band's positions once per pick, only in this state.
   */
  spreadLimit: 512,

  /**
   * Lease keys the first wave of a bulk "used up" confirmation reads (two BatchGetItem requests at once); each next
   * wave twice as many, up to confirmWaveMax (16 requests at once). A band with a free address left is then usually
   * answered by the first wave; a band really used up is read whole in a few round trips.
   */
  confirmWave: 200,
  confirmWaveMax: 1_600,

  /**
   * Addresses one "used up" decision reads at most (a /16's hosts). A view showing more than this used up cannot be
   * confirmed within a request: the answer is NotReady (retry), never a RangeFull resting on the summary alone.
   */
  confirmLimit: 65_536,

  /** The used-up rule's seals (used-up/tuning.ts). */
  ...SEAL_TUNING,

  /**
   * Milliseconds a container keeps a listing read when nothing says it is stale. Collisions and a view that shows the
   * range full are what refresh it; the age is only a backstop. A listing reads every taken lease of the pool family,
   * so a short age would make each warm container read the range again and again whatever its allocation rate.
   */
  hintMaxAgeMs: 30_000,

  /** Milliseconds a summary read is kept: it is a handful of small items, so it can be refreshed often. */
  summaryMaxAgeMs: 2_000,

  /**
   * Milliseconds a container remembers its own commits, collisions and releases over what it reads: longer than the
   * stream's lag (about a second, see docs/architecture.md), so a fresh summary that does not show them yet does not
   * make the container collide on them again.
   */
  localMemoryMs: 30_000,
} as const;

export type Tuning = typeof TUNING;
