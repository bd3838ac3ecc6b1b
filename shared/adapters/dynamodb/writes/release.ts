import type { BitmapWrite } from '../../../core/bitmap/ports.ts';
import { leaseOfClaim, releasedLease, type Claim, type Hold } from '../../../core/model.ts';
import type { IpamEvent } from '../../../core/use-cases/reconcile-ports.ts';
import type { EndReason } from '../../../core/history/holding.ts';
import { bitmapToItem, eventToItem, leaseToItem, type Item } from '../codec.ts';
import { bitmapIs, belongsToClaim, itemIsAbsent, type Condition } from '../conditions.ts';
import { Entity, keys, type Key } from '../keys.ts';
import type { Table, TxVerdict, WriteOp } from '../table.ts';
import { freedBumps, packFreeing } from './freed.ts';
import { lostRace } from './verdicts.ts';

/** What a claim still holds: the addresses whose lease is still this incarnation's, and whether its generateName marker is. */
export interface Holdings {
  readonly addresses: readonly string[];
  readonly marker: boolean;
}

/** The key of a claim's generateName marker; undefined for a claim made with a name. */
export function markerKeyOf(claim: Claim): Key | undefined {
  return claim.spec.generateName !== undefined
    ? keys.generated(claim.pool, claim.spec.owner.uid, claim.spec.generateName)
    : undefined;
}

/** Whether the claim's generateName marker is still this incarnation's: one consistent read (none without a marker). */
export async function markerHeld(table: Table, claim: Claim): Promise<boolean> {
  const key = markerKeyOf(claim);
  return key !== undefined && (await table.get(key))?.claimUid === claim.uid;
}

/** Reads what a claim still holds, in one strongly consistent batch (its leases and its marker). */
export async function readHoldings(table: Table, claim: Claim): Promise<Holdings> {
  const markerKey = markerKeyOf(claim);
  const items = await table.batchGet(
    [...claim.addresses.map((a) => keys.lease(claim.pool, a.address)), ...(markerKey ? [markerKey] : [])],
    ['PK', 'entity', 'address', 'claimUid'],
  );
  const mine = (item: Item) => item.claimUid === claim.uid;
  return {
    addresses: items.filter((i) => i.entity === Entity.Lease && mine(i)).map((i) => i.address as string),
    marker: items.some((i) => i.entity === Entity.Generated && mine(i)),
  };
}

/** What a release writes besides the claim, its marker and its leases. */
export interface ReleaseExtras {
  /** Legacy bitmaps with the released bits cleared (legacy mode releases bit and lease together). */
  readonly bitmaps?: readonly BitmapWrite[];
  /** The reconciler's record of the repair, written with it exactly once. */
  readonly event?: { readonly event: IpamEvent; readonly id: string };
  /**
   * A pool with a reuse delay: each held lease is replaced by a Released lease that holds the address for the
   * claim's owner until `hold.reusableAt`, instead of being deleted. `shards` places it in the listing index.
   */
  readonly hold?: { readonly hold: Hold; readonly shards: number };
  /** Why the claim let go, written on each Released lease for the address history (absent: a client's release). */
  readonly endReason?: EndReason;
}

/**
 * - `claimChanged`: the claim is no longer as the condition says (renewed, released, replaced): read it again.
 * - `retry`: a lease, the marker or a bitmap changed between the read and the write: read the holdings again.
 */
export type ReleaseVerdict = 'released' | 'claimChanged' | 'retry';

/**
 * A claim release: one TransactWriteItems, in this order:
 *
 *   Delete claim       claimCondition (this incarnation [, at this version] [, expired])   -> claimChanged
 *   Delete generated   claimUid = claim.uid                                                 -> retry   (when held)
 *   Delete lease       claimUid = claim.uid                                                 -> retry   (each held address)
 *     or Put Released  claimUid = claim.uid                                                 -> retry   (extras.hold: a reuse delay)
 *   Put bitmap         version = v                                                          -> retry   (extras.bitmaps)
 *   Put event          absent                                                                          (extras.event)
 *   Update freed       ADD n 1 (one shard per range of the held addresses: writes/freed.ts)
 *
 * Leases are deleted only while they are this incarnation's, so a stale release never frees an address that has
 * gone to someone else. A Released lease held for the owner counts as freed too: free for that owner.
 *
 * A claim whose addresses lie in more ranges than one transaction holds with their bumps (packFreeing) releases the
 * others in `later` transactions (releaseLater), each with the bumps of its ranges, once the first has committed: the
 * claim is gone with the first, and a lease a later one could not free is an orphan of a claim that no longer
 * exists, which the reconciler releases after its grace (row 3). The legacy bitmaps' leases go in the first.
 */
export function claimRelease(
  claim: Claim,
  claimCondition: Condition,
  holdings: Holdings,
  extras: ReleaseExtras = {},
): { ops: WriteOp[]; later: string[][]; decode: (verdicts: readonly TxVerdict[]) => ReleaseVerdict } {
  const ops: WriteOp[] = [{ kind: 'delete', key: keys.claim(claim.pool, claim.name), condition: claimCondition }];
  const markerKey = markerKeyOf(claim);
  if (holdings.marker && markerKey) ops.push({ kind: 'delete', key: markerKey, condition: belongsToClaim(claim.uid) });
  const bitmaps = extras.bitmaps ?? [];
  const first = new Set(bitmaps.map((b) => b.rangeName));
  const rangeOf = (address: string) => claim.addresses.find((a) => a.address === address)?.range;
  // Grouped by range, the bitmaps' ranges first.
  const rank = (address: string): string => `${first.has(rangeOf(address) ?? '') ? 0 : 1}${rangeOf(address) ?? ''}`;
  const addresses = [...holdings.addresses].sort((a, b) => rank(a).localeCompare(rank(b)));
  const [now = [], ...later] = packFreeing(addresses, rangeOf, {
    first: ops.length + bitmaps.length + (extras.event ? 1 : 0),
    later: 0,
  });
  const { leases, bumps } = freeingOps(claim, now, extras);
  ops.push(...leases);
  for (const bitmap of bitmaps)
    ops.push({ kind: 'put', item: bitmapToItem(bitmap), condition: bitmapIs(bitmap.expected) });
  if (extras.event)
    ops.push({ kind: 'put', item: eventToItem(extras.event.event, extras.event.id), condition: itemIsAbsent() });
  ops.push(...bumps);
  const decode = (verdicts: readonly TxVerdict[]): ReleaseVerdict => (lostRace(verdicts[0]) ? 'claimChanged' : 'retry');
  return { ops, later, decode };
}

/** The lease operations that free these addresses of the claim (a delete, or a Released lease), and their ranges' bumps. */
function freeingOps(
  claim: Claim,
  addresses: readonly string[],
  extras: Pick<ReleaseExtras, 'hold' | 'endReason'>,
): { leases: WriteOp[]; bumps: WriteOp[] } {
  const mine = belongsToClaim(claim.uid);
  const freedRanges: string[] = [];
  const leases = addresses.map((address): WriteOp => {
    const entry = claim.addresses.find((a) => a.address === address);
    if (entry) freedRanges.push(entry.range);
    const held = extras.hold && entry;
    return held
      ? {
          kind: 'put',
          item: leaseToItem(
            releasedLease(leaseOfClaim(claim, held), extras.hold!.hold, extras.endReason),
            extras.hold!.shards,
          ),
          condition: mine,
        }
      : { kind: 'delete', key: keys.lease(claim.pool, address), condition: mine };
  });
  return { leases, bumps: freedBumps(claim.pool, freedRanges, claim.uid) };
}

/** Rounds a release (or a later transaction of one) is written again after a cancellation. */
const RELEASE_ATTEMPTS = 5;

/**
 * The later transactions of a release whose first one committed (claimRelease's `later`): each frees its addresses
 * while they are still the claim's, with its ranges' bumps. A cancelled one is written again with the addresses a
 * fresh read shows the claim still holds, up to `attempts` times; what is left after that is orphaned, for the
 * reconciler (the claim is gone either way).
 */
export async function releaseLater(
  table: Table,
  claim: Claim,
  later: readonly (readonly string[])[],
  extras: Pick<ReleaseExtras, 'hold' | 'endReason'> & { readonly attempts?: number },
): Promise<void> {
  const attempts = extras.attempts ?? RELEASE_ATTEMPTS;
  for (const share of later) {
    let addresses = share;
    for (let attempt = 0; attempt < attempts && addresses.length > 0; attempt += 1) {
      const { leases, bumps } = freeingOps(claim, addresses, extras);
      if (!(await table.transact([...leases, ...bumps]))) break;
      const held = new Set((await readHoldings(table, claim)).addresses);
      addresses = addresses.filter((a) => held.has(a));
    }
  }
}

/** Runs a release until it commits or the claim changed: `attempts` rounds of reading the holdings and writing. */
export async function releaseWithRetries(
  table: Table,
  claim: Claim,
  release: {
    readonly condition: Condition;
    readonly extras: (holdings: Holdings) => Promise<ReleaseExtras | undefined> | ReleaseExtras;
    /** Rounds before giving up (RELEASE_ATTEMPTS unless given). */
    readonly attempts?: number;
  },
): Promise<'released' | 'claimChanged' | 'gaveUp'> {
  const { condition: claimCondition, extras, attempts = RELEASE_ATTEMPTS } = release;
  for (let attempt = 0; attempt < attempts; attempt += 1) {
    const holdings = await readHoldings(table, claim);
    const more = await extras(holdings);
    if (more === undefined) return 'gaveUp';
    const { ops, later, decode } = claimRelease(claim, claimCondition, holdings, more);
    const verdicts = await table.transact(ops);
    if (!verdicts) {
      await releaseLater(table, claim, later, more);
      return 'released';
    }
    if (decode(verdicts) === 'claimChanged') return 'claimChanged';
  }
  return 'gaveUp';
}
