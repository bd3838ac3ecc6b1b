/** What a client asks for when it creates a claim, normalized so equal requests compare equal, and the idempotency rule. */
import { familyBits, formatAddress, IpFamily, parseAddress, type IpAddress } from '../ip/address.ts';
import { ConflictError, InvalidArgumentError, MismatchedNetworkError, NotInRangeError } from '../errors.ts';
import { formatCidr, lastAddress, parseCidr, type Cidr } from '../ip/cidr.ts';
import { checkDnsLabel, checkGenerateName, checkOwnerField } from '../names.ts';
import { checkLabels, formatLabels, type Labels } from '../labels.ts';
import { IpFamilyPolicy, isBlockPool, type Claim, type ClaimSpec, type Owner, type PoolView } from '../model.ts';
import type { FamilyRequest } from '../allocator/allocator.ts';
import { rangesOf } from '../base/pool-geometry.ts';
import type { Principal } from '../access.ts';
import { checkHostname } from '../dns/settings.ts';

export interface CreateClaimCommand {
  readonly pool: string;
  readonly name?: string;
  readonly generateName?: string;
  readonly owner: Owner;
  readonly ipFamilyPolicy?: IpFamilyPolicy;
  readonly ipFamilies?: readonly IpFamily[];
  readonly addresses?: readonly string[];
  readonly ttlSeconds?: number;
  /** Addresses per family, 1 to MAX_BATCH_COUNT (default 1). */
  readonly count?: number;
  /** The caller, recorded as the claim's `createdBy` (not part of the spec: a retry by another principal is the same request). */
  readonly createdBy?: Principal;
  /** Key/value labels (labels.ts); part of the spec, so another set under an existing name is a conflict. */
  readonly labels?: Labels;
  /**
   * Epoch milliseconds after which the claim must not be committed (the client has given up on the request by then):
   * checked before each commit, so a slow request cannot leave a claim its client never learnt of.
   */
  readonly commitBy?: number;
  /** Explicit blocks of a block-pool claim (canonical CIDRs of the pool's block size, one per family). */
  readonly prefixes?: readonly string[];
  /** Answer what the claim would get now and write nothing (a preview is not a hold). */
  readonly dryRun?: boolean;
  /** The DNS label to publish instead of the claim's name (dns/settings.ts); part of the spec. */
  readonly hostname?: string;
}

/**
 * Most addresses per family one claim may take. A dual-stack batch writes the claim, its generateName marker and
 * 2 x 32 leases: 66 items, well inside a transaction's 100.
 */
export const MAX_BATCH_COUNT = 32;

/** Longest lease a claim may ask for: one year. */
export const MAX_TTL_SECONDS = 365 * 24 * 3600;

function checkOwner(owner: Owner): Owner {
  return {
    kind: checkOwnerField(owner?.kind, 'owner.kind'),
    name: checkOwnerField(owner?.name, 'owner.name'),
    uid: checkOwnerField(owner?.uid, 'owner.uid'),
  };
}

export function checkTtl(ttl: number | undefined, field = 'ttlSeconds'): number | undefined {
  if (ttl === undefined) return undefined;
  if (!Number.isInteger(ttl) || ttl < 1 || ttl > MAX_TTL_SECONDS) {
    throw new InvalidArgumentError(`${field} must be a whole number of seconds from 1 to ${MAX_TTL_SECONDS}.`, field);
  }
  return ttl;
}

/** Normalizes what the client asked for, so equal requests compare equal. @throws InvalidArgumentError */
export function normalizeSpec(cmd: CreateClaimCommand): { spec: ClaimSpec; explicit: IpAddress[] } {
  if ((cmd.name === undefined) === (cmd.generateName === undefined)) {
    throw new InvalidArgumentError('Give exactly one of name and generateName.', 'name');
  }
  if (cmd.name !== undefined) checkDnsLabel(cmd.name, 'name');
  if (cmd.generateName !== undefined) checkGenerateName(cmd.generateName);
  const { policy, families } = checkFamilies(cmd);
  const count = checkCount(cmd);
  const labels = cmd.labels === undefined ? {} : checkLabels(cmd.labels);
  const blocks = checkPrefixes(cmd);
  const explicit =
    blocks.length > 0
      ? blocks.map((b) => ({ family: b.family, value: b.base }))
      : (cmd.addresses ?? []).map((a, i) => parseAddress(a, `addresses[${i}]`));
  if (new Set(explicit.map((a) => a.family)).size !== explicit.length) {
    const field = blocks.length > 0 ? 'prefixes' : 'addresses';
    throw new InvalidArgumentError(
      `${field} may hold at most one ${blocks.length > 0 ? 'block' : 'address'} per family.`,
      field,
    );
  }
  if (policy === IpFamilyPolicy.SingleStack && explicit.length > 1) {
    throw new InvalidArgumentError('A SingleStack claim takes one address.', 'addresses');
  }
  for (const a of explicit) {
    if (families.length && !families.includes(a.family)) {
      throw new MismatchedNetworkError(
        `Address ${formatAddress(a)} is ${a.family}, which is not among the claim's ipFamilies (${families.join(', ')}).`,
      );
    }
  }
  const spec: ClaimSpec = {
    owner: checkOwner(cmd.owner),
    ipFamilyPolicy: policy,
    ipFamilies: families,
    addresses: blocks.length > 0 ? [] : explicit.map(formatAddress),
    ...(blocks.length > 0 ? { prefixes: blocks.map(formatCidr) } : {}),
    ...(cmd.ttlSeconds !== undefined ? { ttlSeconds: checkTtl(cmd.ttlSeconds) } : {}),
    ...(cmd.generateName !== undefined ? { generateName: cmd.generateName } : {}),
    // Kept only above 1: a request with count 1 and one without count are the same request.
    ...(count > 1 ? { count } : {}),
    // Kept only when there are some: a request with `labels: {}` and one without are the same request.
    ...(Object.keys(labels).length > 0 ? { labels } : {}),
    ...(cmd.hostname !== undefined ? { hostname: checkHostname(cmd.hostname) } : {}),
  };
  return { spec, explicit };
}

/** The claim's family policy and families, checked against each other. @throws InvalidArgumentError */
function checkFamilies(cmd: CreateClaimCommand): { policy: IpFamilyPolicy; families: IpFamily[] } {
  const policy = cmd.ipFamilyPolicy ?? IpFamilyPolicy.SingleStack;
  if (!Object.values(IpFamilyPolicy).includes(policy)) {
    throw new InvalidArgumentError(
      `ipFamilyPolicy must be one of ${Object.values(IpFamilyPolicy).join(', ')}.`,
      'ipFamilyPolicy',
    );
  }
  const families = [...(cmd.ipFamilies ?? [])];
  for (const f of families) {
    if (!Object.values(IpFamily).includes(f))
      throw new InvalidArgumentError('ipFamilies entries must be IPv4 or IPv6.', 'ipFamilies');
  }
  if (new Set(families).size !== families.length)
    throw new InvalidArgumentError('ipFamilies must not repeat a family.', 'ipFamilies');
  if (policy === IpFamilyPolicy.SingleStack && families.length > 1) {
    throw new InvalidArgumentError(
      'A SingleStack claim takes one family; use PreferDualStack or RequireDualStack for two.',
      'ipFamilies',
    );
  }
  return { policy, families };
}

/** The claim's count: 1 to MAX_BATCH_COUNT, and 1 when it names addresses. @throws InvalidArgumentError */
function checkCount(cmd: CreateClaimCommand): number {
  const count = cmd.count ?? 1;
  if (!Number.isInteger(count) || count < 1 || count > MAX_BATCH_COUNT) {
    throw new InvalidArgumentError(`count must be a whole number from 1 to ${MAX_BATCH_COUNT}.`, 'count');
  }
  if (count > 1 && (cmd.addresses ?? []).length > 0) {
    throw new InvalidArgumentError(
      'A claim with count greater than 1 takes its addresses dynamically; leave out addresses, or ask for one address per family.',
      'count',
    );
  }
  return count;
}

/** A claim's explicit blocks (`prefixes`), canonical; none when it names none. @throws InvalidArgumentError */
function checkPrefixes(cmd: CreateClaimCommand): Cidr[] {
  const prefixes = cmd.prefixes ?? [];
  if (prefixes.length > 0 && (cmd.addresses ?? []).length > 0) {
    throw new InvalidArgumentError(
      'Give explicit blocks in prefixes or explicit addresses in addresses, not both: a pool hands out one or the other.',
      'prefixes',
    );
  }
  if (prefixes.length > 0 && (cmd.count ?? 1) > 1) {
    throw new InvalidArgumentError(
      'A claim with count greater than 1 takes its blocks dynamically; leave out prefixes, or ask for one block per family.',
      'count',
    );
  }
  return prefixes.map((p, i) => parseCidr(p, `prefixes[${i}]`));
}

/**
 * What a pool hands out must be what the claim names: blocks of the pool's size in a block pool (`prefixes`),
 * addresses in an address pool. @throws InvalidArgumentError
 */
function checkUnit(view: PoolView, spec: ClaimSpec): void {
  const pool = JSON.stringify(view.pool.name);
  if (!isBlockPool(view.pool)) {
    if (spec.prefixes?.length)
      throw new InvalidArgumentError(
        `Pool ${pool} hands out addresses, not blocks: name an explicit address in addresses.`,
        'prefixes',
      );
    return;
  }
  if (spec.addresses.length > 0)
    throw new InvalidArgumentError(
      `Pool ${pool} hands out blocks, not addresses: name an explicit block in prefixes (e.g. 10.244.7.0/26).`,
      'addresses',
    );
  for (const text of spec.prefixes ?? []) {
    const block = parseCidr(text);
    const size = view.pool.blockPrefixLength?.[block.family];
    if (size !== undefined && block.prefix !== size) {
      throw new InvalidArgumentError(
        `Block ${text} is a /${block.prefix}; pool ${pool} hands out ${block.family} blocks of /${size} only.`,
        'prefixes',
      );
    }
    checkNotExcluded(view, block);
  }
}

/**
 * A block that holds an excluded address is never handed out, named or not: unlike an address pool's explicit address
 * (given when named), a named block would hand out with it addresses its client never named. @throws NotInRangeError
 */
function checkNotExcluded(view: PoolView, block: Cidr): void {
  const last = lastAddress(block);
  for (const text of view.pool.exclude) {
    const excluded = parseCidr(text);
    const overlaps = excluded.family === block.family && excluded.base <= last && lastAddress(excluded) >= block.base;
    if (!overlaps) continue;
    const what =
      excluded.prefix === familyBits(excluded.family)
        ? `address ${formatAddress({ family: excluded.family, value: excluded.base })}`
        : `addresses of ${text}`;
    throw new NotInRangeError(
      formatCidr(block),
      `Block ${formatCidr(block)} holds ${what}, excluded in pool ${JSON.stringify(view.pool.name)}; a block that holds an excluded address is never handed out: name another block.`,
    );
  }
}

/**
 * The families a claim gets, primary first: SingleStack takes the named family (or the explicit address's, or the
 * pool's first); PreferDualStack takes every requested family the pool serves; RequireDualStack needs both.
 * @throws MismatchedNetworkError when the pool serves no requested family
 */
export function resolveFamilies(view: PoolView, spec: ClaimSpec, explicit: readonly IpAddress[]): FamilyRequest[] {
  checkUnit(view, spec);
  const served = [IpFamily.IPv4, IpFamily.IPv6].filter((f) => rangesOf(view, f).length > 0);
  const pool = JSON.stringify(view.pool.name);
  let families: IpFamily[];
  switch (spec.ipFamilyPolicy) {
    case IpFamilyPolicy.SingleStack:
      families = [spec.ipFamilies[0] ?? explicit[0]?.family ?? served[0] ?? IpFamily.IPv4];
      break;
    case IpFamilyPolicy.PreferDualStack: {
      // Both families when the pool serves both, primary first (the first named family, else the explicit address's).
      const primary = spec.ipFamilies[0] ?? explicit[0]?.family ?? served[0] ?? IpFamily.IPv4;
      const ordered = [primary, primary === IpFamily.IPv4 ? IpFamily.IPv6 : IpFamily.IPv4];
      // The primary must be served (checked below); the secondary is taken only when the pool serves it.
      families = ordered.filter((f, i) => i === 0 || served.includes(f) || explicit.some((a) => a.family === f));
      break;
    }
    case IpFamilyPolicy.RequireDualStack: {
      // The primary family is the first named one, else the first explicit address's (as Kubernetes does).
      const primary = spec.ipFamilies[0] ?? explicit[0]?.family ?? IpFamily.IPv4;
      families = [primary, primary === IpFamily.IPv4 ? IpFamily.IPv6 : IpFamily.IPv4];
      break;
    }
  }
  for (const family of families) {
    if (!served.includes(family))
      throw new MismatchedNetworkError(`Pool ${pool} has no Ready ${family} range for this claim.`, family);
  }
  const count = spec.count ?? 1;
  return families.map((family) => {
    const address = explicit.find((a) => a.family === family);
    if (address) return { family, explicit: address };
    return count > 1 ? { family, count } : { family };
  });
}

function sameSpec(a: ClaimSpec, b: ClaimSpec): boolean {
  const canon = (s: ClaimSpec) =>
    JSON.stringify([
      s.owner.kind,
      s.owner.name,
      s.owner.uid,
      s.ipFamilyPolicy,
      s.ipFamilies,
      s.addresses,
      s.ttlSeconds ?? null,
      s.generateName ?? null,
      s.count ?? 1,
      formatLabels(s.labels),
      s.prefixes ?? [],
      s.hostname ?? null,
    ]);
  return canon(a) === canon(b);
}

export function sameOrConflict(existing: Claim, spec: ClaimSpec): { claim: Claim; created: false } {
  if (!sameSpec(existing.spec, spec)) {
    throw new ConflictError(`Claim ${JSON.stringify(existing.name)} already exists with a different spec.`);
  }
  return { claim: existing, created: false };
}

/**
 * Tries of a use case that writes a claim as it read it (release, renewal, pinning an answer): when another request
 * wrote the claim first, it reads the claim again and judges anew, up to this many times.
 */
export const CLAIM_TRIES = 5;
