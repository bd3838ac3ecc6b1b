import type { IpFamily } from '../ip/address.ts';
import type { OccupancyChunk } from './chunk.ts';
import type { HoldIdentity } from '../model.ts';

/** What a lease item says about its address right now (a strongly consistent read). */
export interface LeaseExpiry {
  /** The lease has a TTL: once past it the address is free to take, before the reconciler deletes the item. */
  readonly expiring: boolean;
  /** Epoch ms it expires at, for a lease with a TTL. */
  readonly expiresAt?: number;
  /** A Released lease: the previous owner identity it is held for (ownerIdentity), who may take it back at once. */
  readonly heldFor?: string;
  /** The range the lease was taken through: the one whose freed counter its release bumps. */
  readonly range?: string;
}

/** The identity a Released lease is held for (model.ts HoldIdentity: owner kind, name and creator), as one string. */
export function ownerIdentity(identity: HoldIdentity): string {
  return JSON.stringify([identity.kind, identity.name, identity.creatorArn ?? null]);
}

/** The occupancy summary's chunks on the table (TableOccupancyStore is the adapter). */
export interface OccupancyStore {
  /** Existing chunks with index in [first, last], eventually consistent (cheap: a /16 is 4 items of 2 KB). */
  readChunks(pool: string, family: IpFamily, span: readonly [bigint, bigint]): Promise<OccupancyChunk[]>;
  /** One chunk, read consistently; undefined when it was never written. */
  getChunk(pool: string, family: IpFamily, index: bigint): Promise<OccupancyChunk | undefined>;
  /**
   * Writes a chunk if it is still at `expected` (its version, or absent); 'changed' when another writer got there
   * first. An emptied chunk stays (deleting it would restart its version, and a writer holding an old copy could then
   * succeed against a new chunk); the pool's deletion removes its chunks.
   */
  putChunk(chunk: OccupancyChunk, expected: number | 'absent'): Promise<'written' | 'changed'>;
  /** Which of these addresses of a pool have a lease item now, read consistently (expired ones included). */
  leaseStates(pool: string, addresses: readonly string[]): Promise<ReadonlyMap<string, LeaseExpiry>>;
  /** Records on the pool that its summary is complete from `sinceIso` on (after a build from the listing). */
  markSummarized(pool: string, sinceIso: string): Promise<void>;
}
