import { ClaimHasChildrenError, NotReadyError } from '../../core/errors.ts';
import type { Claim, Hold, Lease } from '../../core/model.ts';
import type {
  ClaimFilter,
  ClaimStore,
  CommitOutcome,
  ConsumedClaim,
  ConsumerChange,
  Page,
  ReleaseOutcome,
  Replacing,
} from '../../core/ports.ts';
import { itemToClaim, newEventId } from './codec.ts';
import { both, claimIsAsRead, claimUidIs, hasLabels, hasNoChildren, stillAsRead, versionIs } from './conditions.ts';
import { isSingleScopePosition, type CursorCodec } from './cursor.ts';
import { filteredPage } from './index-reads.ts';
import { keys } from './keys.ts';
import { TRANSACTION_LIMIT, type Table, type TxVerdict, type WriteOp } from './table.ts';
import { claimCommit, type CommitVerdict } from './writes/commit.ts';
import { markerHeld, releaseWithRetries } from './writes/release.ts';
import { claimRenewal, type RenewVerdict } from './writes/renew.ts';
import { consumedOf, consumerChange, consumerIndexDrop } from './writes/consumers.ts';
import { queryAll } from './table.ts';
import type { IpamEvent } from '../../core/use-cases/reconcile-ports.ts';

/** Claims on the table; each write is one of the write shapes in writes/. */
export class TableClaimStore implements ClaimStore {
  constructor(
    private readonly table: Table,
    private readonly shards: number,
    private readonly cursors: CursorCodec,
  ) {}

  async commitClaim(
    claim: Claim,
    leases: readonly Lease[],
    nowMs: number,
    replacing?: Replacing,
  ): Promise<CommitOutcome> {
    let { ops, decode } = claimCommit({ claim, leases, nowMs, shards: this.shards }, replacing ? { replacing } : {});
    if (replacing && ops.length > TRANSACTION_LIMIT) {
      // Too wide to hold the replaced claim's leases for its owner in the commit's transaction: it is
      // released into its hold first, as the reconciler would release it, and the commit is made over a free name
      // (its owner's own addresses are takeable by it as Released ones). One more transaction, for such claims only.
      await this.releaseClaim(replacing.claim, replacing.claim.version, replacing.hold);
      ({ ops, decode } = claimCommit({ claim, leases, nowMs, shards: this.shards }));
    }
    const verdicts = await this.table.transact(ops);
    return verdicts ? this.outcomeOf(claim, decode(verdicts)) : { kind: 'committed' };
  }

  /** Completes a commit verdict with the reads DynamoDB did not answer, as the port's outcome. */
  async outcomeOf(claim: Claim, verdict: CommitVerdict): Promise<CommitOutcome> {
    switch (verdict.kind) {
      case 'claimExistsUnread': {
        const existing = await this.getClaim(claim.pool, claim.name);
        if (existing) return { kind: 'claimExists', existing };
        break;
      }
      case 'generatedNameExistsUnread': {
        const made = await this.findGeneratedClaim(claim.pool, claim.spec.owner.uid, claim.spec.generateName!);
        if (made !== undefined) return { kind: 'generatedNameExists', claimName: made };
        break;
      }
      case 'committed':
      case 'claimExists':
      case 'generatedNameExists':
      case 'addressesTaken':
        return verdict;
      case 'bitmapsChanged':
      case 'conflict':
        break;
    }
    // Conflicts on the claim item itself (a concurrent identical request): the caller may retry.
    throw new NotReadyError('A concurrent request changed this claim; retry the request.');
  }

  async getClaim(pool: string, name: string): Promise<Claim | undefined> {
    const item = await this.table.get(keys.claim(pool, name));
    return item ? itemToClaim(item) : undefined;
  }

  async getClaims(pool: string, names: readonly string[]): Promise<Claim[]> {
    if (names.length === 0) return [];
    return (await this.table.batchGet(names.map((name) => keys.claim(pool, name)))).map(itemToClaim);
  }

  async findGeneratedClaim(pool: string, ownerUid: string, generateName: string): Promise<string | undefined> {
    const item = await this.table.get(keys.generated(pool, ownerUid, generateName));
    return item?.claim as string | undefined;
  }

  async listClaims(pool: string, limit: number, cursor?: string, filter: ClaimFilter = {}): Promise<Page<Claim>> {
    // The filters are part of the listing: a cursor of another filter (or none) is refused.
    const scope = [
      'claims',
      pool,
      filter.ownerUid ?? '',
      (filter.labels ?? []).map(([key, value]) => `${key}=${value}`).join(','),
    ];
    const after = cursor ? this.cursors.decode(scope, cursor, isSingleScopePosition).k : undefined;
    const partitions =
      filter.ownerUid !== undefined
        ? [{ index: 'GSI2' as const, partition: keys.owner(pool, filter.ownerUid) }]
        : Array.from({ length: this.shards }, (_, shard) => ({
            index: 'GSI1' as const,
            partition: keys.claimsListing(pool, shard),
          }));
    const page = await filteredPage(this.table, partitions, {
      after,
      filter: filter.labels?.length ? hasLabels(filter.labels) : undefined,
      limit,
    });
    return {
      items: page.items.map(itemToClaim),
      ...(page.next !== undefined ? { nextCursor: this.cursors.encode(scope, { s: 0, k: page.next }) } : {}),
    };
  }

  async releaseClaim(claim: Claim, expectedVersion?: number, hold?: Hold, event?: IpamEvent): Promise<ReleaseOutcome> {
    for (let attempt = 0; attempt < 5; attempt += 1) {
      // A claim whose block is another pool's range is never released, whichever path asks (DELETE, its owner's
      // release, its last consumer, its expiry): the range's marker is on the claim (Claim.children).
      const condition = both(
        expectedVersion === undefined ? claimUidIs(claim.uid) : claimIsAsRead(claim, expectedVersion),
        hasNoChildren(),
      );
      // One round each: a lease that changed hands between the read and the write is read again by the next round.
      const outcome = await releaseWithRetries(this.table, claim, {
        condition,
        extras: () => ({
          ...(hold ? { hold: { hold, shards: this.shards } } : {}),
          ...(event ? { event: { event, id: newEventId() } } : {}),
        }),
        attempts: 1,
      });
      if (outcome === 'released') return 'released';
      if (outcome === 'gaveUp') continue;
      const current = await this.getClaim(claim.pool, claim.name);
      if (!current || current.uid !== claim.uid) return 'absent';
      if (current.children?.length) throw new ClaimHasChildrenError(current.name, current.children);
      if (expectedVersion !== undefined && !stillAsRead(current, claim, expectedVersion)) return 'versionMismatch';
      claim = current;
    }
    throw new NotReadyError('The claim kept changing while it was being released; retry the request.');
  }

  async pinClaim(claim: Claim): Promise<Claim | undefined> {
    const key = keys.claim(claim.pool, claim.name);
    const out = await this.table.write({
      kind: 'update',
      key,
      update: { set: { pinned: true } },
      condition: both(claimUidIs(claim.uid), versionIs(claim.version)),
    });
    return out.ok ? { ...claim, pinned: true } : undefined;
  }

  async renewClaim(
    claim: Claim,
    expiresAt: number | undefined,
    holdMs = 0,
  ): Promise<'renewed' | 'lost' | 'absent' | 'changed' | 'busy'> {
    const { ops, later, decode } = claimRenewal(claim, expiresAt, await markerHeld(this.table, claim), holdMs);
    const verdicts = await this.table.transact(ops);
    if (!verdicts) return this.renewLater(later, decode);
    const verdict = decode(verdicts);
    if (verdict === 'lost') return verdict;
    // Another transaction was writing one of its items (perhaps a renewal of the same claim): try again from a read.
    if (verdict === 'conflict') return 'busy';
    // Gone or another incarnation; or renewed meanwhile (its expiry is not the one read): the use case reads it again
    // and judges the renewal against what it finds.
    if ((await this.getClaim(claim.pool, claim.name))?.uid !== claim.uid) return 'absent';
    return 'changed';
  }

  /**
   * The later transactions of a renewal whose first committed (claimRenewal): each tried until it commits or the
   * claim changed (a later write of it moves every lease itself); 'lost' when a lease went to another claim; after
   * `attempts` cancellations the leases left keep their later expiry, which outlives the claim's.
   */
  private async renewLater(
    later: readonly (readonly WriteOp[])[],
    decode: (verdicts: readonly TxVerdict[], leasesFrom?: number) => RenewVerdict,
    attempts = 5,
  ): Promise<'renewed' | 'lost'> {
    for (const share of later) {
      for (let attempt = 0; attempt < attempts; attempt += 1) {
        const verdicts = await this.table.transact(share);
        if (!verdicts) break;
        const verdict = decode(verdicts, 1);
        if (verdict === 'claimChanged') return 'renewed';
        if (verdict === 'lost') return 'lost';
      }
    }
    return 'renewed';
  }

  async changeConsumers(claim: Claim, change: ConsumerChange): Promise<'written' | 'claimChanged' | 'busy'> {
    const { ops, decode } = consumerChange(claim, change);
    const verdicts = await this.table.transact(ops);
    return verdicts ? decode(verdicts) : 'written';
  }

  async consumedBy(pool: string, uid: string): Promise<ConsumedClaim[]> {
    // On the table, not an index: strongly consistent, so a consumer added before the read is always found.
    return (await queryAll(this.table, { partition: keys.consumerIndex(pool, uid), consistent: true })).map(consumedOf);
  }

  async dropConsumerIndex(pool: string, uid: string, consumed: ConsumedClaim): Promise<void> {
    // Lost condition: the item names another incarnation now (the claim was made again and the uid rejoined it).
    await this.table.write(consumerIndexDrop(pool, uid, consumed));
  }
}
