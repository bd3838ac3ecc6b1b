import { claimToItem, leaseToItem } from '../../shared/adapters/dynamodb/codec.ts';
import { keys } from '../../shared/adapters/dynamodb/keys.ts';
import { formatAddress } from '../../shared/core/ip/address.ts';
import { hostAt, parseCidr } from '../../shared/core/ip/cidr.ts';
import { IpFamilyPolicy, type Claim, type Lease } from '../../shared/core/model.ts';
import { batchGet, batchWrite, deleteRequest, putRequest, scanEntities } from '../lib/storage.ts';
import type { Inspection, StrategyContext } from './strategy.ts';

/** The owner every benchmark claim names: one per caller, as one controller per container would. */
export const benchOwner = (caller: number) => ({
  kind: 'Pod',
  name: `bench-caller-${caller}`,
  uid: `bench-caller-${caller}`,
});

/** Claims and leases written straight into the table with the adapter's own codec (pre-fill: not through the API). */
export async function prefillLeases(
  ctx: StrategyContext,
  rangeName: string,
  offsets: readonly bigint[],
  shards: number,
  tag: string,
): Promise<void> {
  const cidr = parseCidr(ctx.cidr);
  const createdAt = new Date().toISOString();
  const owner = benchOwner(-1);
  const requests = offsets.flatMap((offset, i) => {
    const address = formatAddress({ family: cidr.family, value: hostAt(cidr, offset) });
    const claim: Claim = {
      pool: ctx.pool,
      name: `prefill-${tag}-${i}`,
      uid: `prefill-${tag}-${i}`,
      spec: { owner, ipFamilyPolicy: IpFamilyPolicy.SingleStack, ipFamilies: [cidr.family], addresses: [] },
      addresses: [{ address, family: cidr.family, range: rangeName }],
      createdAt,
      version: 1,
    };
    const lease: Lease = {
      pool: ctx.pool,
      address,
      family: cidr.family,
      range: rangeName,
      claim: claim.name,
      claimUid: claim.uid,
      owner,
      createdAt,
    };
    return [putRequest(claimToItem(claim, shards)), putRequest(leaseToItem(lease, shards))];
  });
  await batchWrite(ctx.setupClient, ctx.tableName, requests, 8);
}

/**
 * Deletes the claims and leases of allocations made during a measurement: the answered ones, and those of the
 * `unanswered` calls whose claim was committed after all (read back by name).
 */
export async function deleteLeases(
  ctx: StrategyContext,
  claims: readonly { claimName: string; address: string }[],
  unanswered: readonly string[],
): Promise<void> {
  const committed = await batchGet(
    ctx.setupClient,
    ctx.tableName,
    unanswered.map((name) => ({ ...keys.claim(ctx.pool, name) })),
  );
  const late = committed.flatMap((c) =>
    (c.addresses as { address: string }[]).map((a) => ({ claimName: c.name as string, address: a.address })),
  );
  const requests = [...claims, ...late].flatMap(({ claimName, address }) => [
    deleteRequest({ ...keys.claim(ctx.pool, claimName) }),
    deleteRequest({ ...keys.lease(ctx.pool, address) }),
  ]);
  await batchWrite(ctx.setupClient, ctx.tableName, requests, 8);
}

/**
 * Leases and claims as stored. A lease is one item per address, so the table cannot hold an address twice; a claim
 * naming an address whose lease belongs to another claim can, and is reported.
 */
export async function inspectLeases(ctx: StrategyContext): Promise<Inspection & { leased: ReadonlySet<string> }> {
  const leases = await scanEntities(ctx.setupClient, ctx.tableName, 'lease');
  const claims = await scanEntities(ctx.setupClient, ctx.tableName, 'claim');
  const byLease = new Map(leases.map((l) => [l.address as string, l.claimUid as string]));
  const held = leases.map((l) => ({ address: l.address as string, holder: l.claimUid as string }));
  const problems: string[] = [];
  for (const c of claims) {
    for (const a of c.addresses as { address: string }[]) {
      if (byLease.get(a.address) !== c.uid)
        problems.push(`claim ${c.name as string} names ${a.address}, whose lease it does not hold`);
    }
  }
  return { held, problems, leased: new Set(byLease.keys()) };
}
