/**
 * ADD, DEL, CHECK, STATUS and GC against the IPAM service. Each takes the parsed config and the service client
 * (the CLI's and the console's IpamApi, typed from openapi.yaml); every failure leaves as a CniError (errors.ts maps
 * the client's errors to the spec's codes).
 */
import { createHash } from 'node:crypto';
import type { IpamApi } from '../cli/api/ipam-api.ts';
import { isNotFound, ProblemError } from '../cli/errors.ts';
import type { Claim, ClaimRenewal, ClaimSpec, Owner, PoolDetails } from '../cli/api/types.ts';
import { parseAddress } from '../shared/core/ip/address.ts';
import { claimName, labelsOf, LabelKey, type NodeIdentity } from './attachment.ts';
import type { Attachment, Family, IpamConfig, NetworkConfig, RangeConfig } from './config.ts';
import { CniCode, CniError, toCniError } from './errors.ts';
import { prevResultAddresses, type IpamResult, type ResultIp } from './versions.ts';

/**
 * What a node remembers about pools it has checked: ensurePool's answer (the pool's range prefixes) under a key of
 * the endpoint, the pool and everything the config asks of it. With it an ADD is one request (the claim) instead of
 * three: reading a pool costs the service its utilization counts, and 100 pods attaching at once would pay that 100
 * times. A config that differs in anything the pool is made of has another key, so a node with a conflicting
 * config still checks and gets its code-7 error. A claim answered 404 (the pool was deleted) checks again.
 */
export interface PoolCheckCache {
  read(key: string): Map<string, number> | undefined;
  write(key: string, prefixes: ReadonlyMap<string, number>): void;
  /**
   * Runs `check` in one process of the node at a time for a key, so the first pods of a node do not all read and
   * create the pool at once; a process that waited reads the cache its predecessor wrote instead of checking again.
   */
  exclusive<T>(key: string, check: () => Promise<T>, cachedMeanwhile: () => T | undefined): Promise<T>;
  /**
   * The families an ADD of this node last found exhausted in a pool (RangeFull), and when: what STATUS answers from
   * (an empty list forgets). Node-local, so a readiness poll costs the service nothing whatever the pool's size.
   */
  readExhausted(key: string): { families: string[]; atMs: number; reason?: string } | undefined;
  /** `reason` says where the families came from when not from an ADD's RangeFull (the service's warning). */
  writeExhausted(key: string, families: readonly string[], reason?: string): void;
  /**
   * The claims of this node's attachments under a key (nodeClaimsKey: the network, the node identity, the pool):
   * what RENEW renews, by name, without listing the pool. ADD records a claim once it holds it, DEL and GC forget it.
   * Each record is a file of its own with a token in its name, so RENEW forgets exactly the records it read (a DEL
   * and a new ADD of the same attachment meanwhile leave the new one). `seeded`: a RENEW has listed the node's
   * claims by label once and recorded those made before records were kept.
   */
  recordedClaims(key: string): { records: readonly ClaimRecord[]; seeded: boolean };
  /** @throws Error when the record cannot be written (ADD fails then: the claim would never be renewed). */
  recordClaim(key: string, name: string): void;
  /** Forgets `records` (those RENEW read), or every record of `name`. */
  forgetClaim(key: string, name: string, records?: readonly ClaimRecord[]): void;
  markSeeded(key: string): void;
}

/** A claim a node recorded: its name, and the record's own file. */
export interface ClaimRecord {
  readonly name: string;
  readonly file: string;
}

/** The key of a node's claim records: the endpoint, the pool, the network and the node identity. */
export function nodeClaimsKey(config: NetworkConfig, identity: NodeIdentity): string {
  return createHash('sha256')
    .update(JSON.stringify([config.ipam.endpoint.href, config.ipam.pool, config.name, identity.node, identity.cluster]))
    .digest('hex')
    .slice(0, 32);
}

/** The key of a pool's exhaustion memory: the endpoint and the pool. */
export function poolKey(ipam: IpamConfig): string {
  return createHash('sha256')
    .update(JSON.stringify([ipam.endpoint.href, ipam.pool]))
    .digest('hex')
    .slice(0, 32);
}

/** How long STATUS trusts an ADD's RangeFull of this node (another node's DEL may have freed an address since). */
export const EXHAUSTED_MEMORY_MS = 30_000;

/** The node as its claims name it: ipam.nodeName (default the host name) and ipam.clusterId. */
export function identityOf(ctx: CommandContext, ipam: IpamConfig): NodeIdentity {
  return { node: ipam.nodeName ?? ctx.node, ...(ipam.clusterId !== undefined ? { cluster: ipam.clusterId } : {}) };
}

/**
 * The commit deadline an attempt sends (x-ipam-commit-deadline): the attempt's timeout less a margin, so that a
 * commit the service sends just before the deadline has landed (and clocks a little apart have agreed) before this
 * process gives up on the attempt. Past the deadline the service commits nothing, so an ADD that gave up (and the
 * runtime's DEL that found nothing) can never be followed by its claim.
 */
export function commitDeadline(timeoutMs: number, nowMs = Date.now()): Date {
  return new Date(nowMs + timeoutMs - Math.min(COMMIT_MARGIN_MS, timeoutMs / 2));
}
const COMMIT_MARGIN_MS = 3000;

/** The cache key of a config's pool: a hash of what ensurePool compares. */
export function poolCheckKey(ipam: IpamConfig): string {
  const spec = JSON.stringify([
    ipam.endpoint.href,
    ipam.pool,
    ipam.ranges.map((r) => r.cidr),
    ipam.exclude,
    ipam.reuseDelaySeconds,
  ]);
  return createHash('sha256').update(spec).digest('hex').slice(0, 32);
}

/** Where a command runs: the host's name (the default node label), a line logger and the pool check cache. */
export interface CommandContext {
  readonly api: IpamApi;
  readonly node: string;
  readonly log: (level: 'error' | 'warn' | 'info' | 'debug', message: string) => void;
  readonly cache: PoolCheckCache;
}

/** Attempts of a request that failed for a reason a retry may fix (code 11), and the first pause between them. */
export const RETRY_ATTEMPTS = 4;
const RETRY_BASE_MS = 250;

/**
 * Runs an idempotent request again after a transient failure (unreachable, throttled, 5xx, a Lambda timeout), up to
 * RETRY_ATTEMPTS times with jittered exponential pauses (250, 500, 1000 ms on average): a runtime's own retry of a
 * failed ADD costs a DEL, a new sandbox and seconds of back-off. Every request retried here is safe to repeat: a
 * claim is created under its attachment's name (the same request answers the same claim), a release of a released
 * claim is a 204, reads change nothing.
 */
export async function retrying<T>(ctx: CommandContext, what: string, request: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await request();
    } catch (error) {
      if (attempt >= RETRY_ATTEMPTS || toCniError(error, what).code !== CniCode.TryAgainLater) throw error;
      const pause = RETRY_BASE_MS * 2 ** (attempt - 1) * (0.5 + Math.random());
      ctx.log(
        'warn',
        `${what}: attempt ${attempt} failed (${error instanceof Error ? error.message : String(error)}); again in ${Math.round(pause)} ms`,
      );
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

function invalid(details: string): CniError {
  return new CniError(CniCode.InvalidConfig, 'invalid IPAM configuration', details);
}

async function getPool(api: IpamApi, pool: string): Promise<PoolDetails | undefined> {
  try {
    return await api.getPool(pool);
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** Ready ranges of the pool by name, as prefix lengths: what an address's `/prefix` in the result comes from. */
function prefixesOf(pool: PoolDetails): Map<string, number> {
  return new Map(
    pool.ranges.filter((r) => r.state === 'Ready').map((r) => [r.name, Number(r.cidr.slice(r.cidr.indexOf('/') + 1))]),
  );
}

/**
 * Makes sure the pool and the config's ranges exist, idempotently, and answers the pool's range prefixes.
 *
 *   pool state                                            what happens
 *   absent, config names ranges                           created with the config's exclusions and reuse delay
 *   absent, config names no ranges                        code 7: the pool is configured on the service, create it there
 *   present, other exclusions or reuse delay              code 7 naming both
 *   present, a Ready range the config does not name       code 7 (another node's config, or the pool grew on the service)
 *   present, a config range missing                       created (another node may be creating it: a 409 is re-read)
 *
 * Requests: one GET for a pool that exists as configured; GET, POST pool and one POST per range for a new one (what
 * a POST answers is what this config asked for, so nothing is read back unless another node raced it).
 */
export async function ensurePool(api: IpamApi, ipam: IpamConfig): Promise<Map<string, number>> {
  let pool = await getPool(api, ipam.pool);
  if (ipam.ranges.length === 0) {
    if (!pool)
      throw invalid(
        `pool ${JSON.stringify(ipam.pool)} does not exist: create it on the service, or give ipam.range or ipam.ipRanges`,
      );
    return prefixesOf(pool);
  }
  if (!pool) {
    // Created as this config asks, with no range yet: nothing to read back or compare.
    if (await createPool(api, ipam)) return createRanges(api, ipam, ipam.ranges, new Map());
    // Another node created it first: read what it made and compare below.
    pool = await getPool(api, ipam.pool);
    if (!pool)
      throw new CniError(CniCode.TryAgainLater, 'the pool vanished while it was being created', `pool ${ipam.pool}`);
  }
  const theirs = [...pool.exclude].sort();
  if (JSON.stringify(theirs) !== JSON.stringify(ipam.exclude)) {
    throw invalid(
      `pool ${JSON.stringify(ipam.pool)} exists with exclude ${JSON.stringify(theirs)}, this config asks for ${JSON.stringify(ipam.exclude)} (from exclude, range_start, range_end and gateway): every node must use the same config`,
    );
  }
  if ((pool.reuseDelaySeconds ?? 0) !== ipam.reuseDelaySeconds) {
    throw invalid(
      `pool ${JSON.stringify(ipam.pool)} exists with reuseDelaySeconds ${pool.reuseDelaySeconds ?? 0}, this config asks for ${ipam.reuseDelaySeconds}`,
    );
  }
  const wanted = new Set(ipam.ranges.map((r) => r.cidr));
  const extra = pool.ranges.filter((r) => r.state === 'Ready' && !wanted.has(r.cidr));
  if (extra.length > 0) {
    throw invalid(
      `pool ${JSON.stringify(ipam.pool)} has ranges ${extra.map((r) => r.cidr).join(', ')} that this config does not name (it names ${[...wanted].join(', ')}): every node must use the same config`,
    );
  }
  const existing = pool.ranges;
  const missing = ipam.ranges.filter((r) => !existing.some((have) => have.cidr === r.cidr));
  return createRanges(api, ipam, missing, prefixesOf(pool));
}

/** Creates the config's pool: true when this call made it, false when it existed already (409). */
async function createPool(api: IpamApi, ipam: IpamConfig): Promise<boolean> {
  try {
    return (
      await api.createPool({
        name: ipam.pool,
        exclude: [...ipam.exclude],
        ...(ipam.reuseDelaySeconds > 0 ? { reuseDelaySeconds: ipam.reuseDelaySeconds } : {}),
      })
    ).created;
  } catch (error) {
    if (error instanceof ProblemError && error.status === 409) return false;
    throw error;
  }
}

/**
 * Creates the config's missing ranges and answers the pool's range prefixes: `known` (its Ready ranges already
 * read) and the ones created. Each creation answers its range, so only a race (409: another node creating the same
 * range, or a range of that name) costs a read of the pool again.
 */
async function createRanges(
  api: IpamApi,
  ipam: IpamConfig,
  missing: readonly RangeConfig[],
  known: ReadonlyMap<string, number>,
): Promise<Map<string, number>> {
  const prefixes = new Map(known);
  let raced = false;
  for (const range of missing) {
    try {
      const { range: made } = await api.createRange(ipam.pool, { cidr: range.cidr });
      if (made.state !== 'Ready')
        throw invalid(`range ${range.cidr} of pool ${JSON.stringify(ipam.pool)} is being deleted (${made.state})`);
      prefixes.set(made.name, range.prefix);
    } catch (error) {
      if (!(error instanceof ProblemError && error.status === 409)) throw error;
      raced = true;
    }
  }
  if (!raced) return prefixes;
  const after = await getPool(api, ipam.pool);
  if (!after)
    throw new CniError(
      CniCode.TryAgainLater,
      'the pool vanished while its ranges were being created',
      `pool ${ipam.pool}`,
    );
  for (const range of missing) {
    const made = after.ranges.find((r) => r.cidr === range.cidr);
    if (!made) throw invalid(`range ${range.cidr} could not be created in pool ${JSON.stringify(ipam.pool)}`);
    if (made.state !== 'Ready')
      throw invalid(`range ${range.cidr} of pool ${JSON.stringify(ipam.pool)} is being deleted (${made.state})`);
  }
  return prefixesOf(after);
}

/** A claim document, checked for the fields the result is made of; anything else is the service misbehaving. */
function asClaim(body: unknown): Claim {
  const claim = body as Partial<Claim> | undefined;
  if (
    typeof claim !== 'object' ||
    claim === null ||
    typeof claim.name !== 'string' ||
    !Array.isArray(claim.addresses)
  ) {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    throw new CniError(
      CniCode.TryAgainLater,
      'the IPAM service answered a claim request with something that is not a claim',
      String(text).slice(0, 300),
    );
  }
  return claim as Claim;
}

/** The claim request of an attachment (POST /v1/pools/{pool}/claims). */
export function claimRequest(
  config: NetworkConfig,
  attachment: Attachment,
  owner: Owner,
  identity: NodeIdentity,
): ClaimSpec {
  const { ipam } = config;
  return {
    name: claimName(config.name, attachment),
    owner,
    ipFamilyPolicy: ipam.ipFamilyPolicy,
    ...(ipam.ipFamilies.length > 0 ? { ipFamilies: ipam.ipFamilies } : {}),
    ...(config.staticAddresses ? { addresses: [...config.staticAddresses] } : {}),
    labels: labelsOf(config.name, identity, attachment),
    ...(ipam.leaseSeconds !== undefined ? { ttlSeconds: ipam.leaseSeconds } : {}),
  };
}

/** The result of a claim: each address with its range's prefix and its family's gateway; routes and dns as given. */
export function resultOf(claim: Claim, prefixes: ReadonlyMap<string, number>, ipam: IpamConfig): IpamResult {
  const ips: ResultIp[] = claim.addresses.map((a) => {
    const prefix = prefixes.get(a.range);
    if (prefix === undefined)
      throw new CniError(
        CniCode.TryAgainLater,
        'the claim holds an address of a range the pool does not list',
        `${a.address} (range ${a.range})`,
      );
    const gateway = ipam.gateways[a.family as Family];
    return {
      address: `${a.address}/${prefix}`,
      version: a.family === 'IPv4' ? '4' : '6',
      ...(gateway !== undefined ? { gateway } : {}),
    };
  });
  return { ips, routes: ipam.routes, ...(ipam.dns !== undefined ? { dns: ipam.dns } : {}) };
}

/**
 * Records a claim ADD now holds for the node's renewer. A claim RENEW does not know would expire under its pod, so
 * a record that cannot be written fails the ADD (code 11): the runtime's DEL then releases the claim.
 */
function recordForRenew(ctx: CommandContext, config: NetworkConfig, name: string): void {
  try {
    ctx.cache.recordClaim(nodeClaimsKey(config, identityOf(ctx, config.ipam)), name);
  } catch (error) {
    throw new CniError(
      CniCode.TryAgainLater,
      'cannot record the claim for RENEW',
      `claim ${name} in ${config.ipam.stateDir}: ${(error as Error).message}`,
    );
  }
}

/**
 * ADD: ensures the pool, then takes (or, for a retried ADD, finds again) the attachment's claim.
 * @throws CniError 7 (config conflicts with the pool), 11 (service unreachable, throttled, 5xx), 100 (pool exhausted),
 *   101 (refused otherwise)
 */
export async function add(
  ctx: CommandContext,
  config: NetworkConfig,
  attachment: Attachment,
  owner: Owner,
): Promise<IpamResult> {
  const { ipam } = config;
  const key = poolCheckKey(ipam);
  const check = async () => {
    const fresh = await retrying(ctx, 'ADD pool check', () => ensurePool(ctx.api, ipam));
    ctx.cache.write(key, fresh);
    ctx.log('debug', `pool ${ipam.pool} checked`);
    return fresh;
  };
  try {
    const cached = ctx.cache.read(key);
    let prefixes: Map<string, number>;
    if (cached) {
      prefixes = cached;
      ctx.log('debug', `timing: pool ${ipam.pool} known to this node`);
    } else {
      const waitStarted = performance.now();
      prefixes = await ctx.cache.exclusive(key, check, () => ctx.cache.read(key));
      ctx.log(
        'debug',
        `timing: pool ${ipam.pool} checked or waited for in ${Math.round(performance.now() - waitStarted)} ms`,
      );
    }
    const body = claimRequest(config, attachment, owner, identityOf(ctx, ipam));
    const post = () =>
      retrying(ctx, 'ADD claim', async () => {
        const { created, claim } = await ctx.api.createClaim(ipam.pool, body, {
          commitBy: commitDeadline(ipam.timeoutMs),
        });
        return { created, claim: asClaim(claim) };
      });
    let response;
    try {
      response = await post();
    } catch (error) {
      // The pool this node checked earlier is gone: check (and so re-create) it, then claim once more.
      if (!(cached && isNotFound(error))) throw error;
      prefixes = await check();
      response = await post();
    }
    const { claim } = response;
    if (ipam.leaseSeconds !== undefined) recordForRenew(ctx, config, claim.name);
    if (ctx.cache.readExhausted(poolKey(ipam))) ctx.cache.writeExhausted(poolKey(ipam), []);
    ctx.log(
      'info',
      `ADD ${attachment.containerID}/${attachment.ifname}: claim ${claim.name} ${response.created ? 'created' : 'found'} with ${claim.addresses.map((a) => a.address).join(', ')}`,
    );
    // A range the node has not seen (added to the pool on the service): read the pool again once.
    if (claim.addresses.some((a) => !prefixes.has(a.range))) prefixes = await check();
    return resultOf(claim, prefixes, ipam);
  } catch (error) {
    const failure = toCniError(error, 'ADD');
    if (failure.code === CniCode.PoolExhausted)
      ctx.cache.writeExhausted(poolKey(ipam), [/IPv6/.test(failure.details) ? 'IPv6' : 'IPv4']);
    throw failure;
  }
}

/**
 * DEL: releases the attachment's claim. Idempotent: an absent claim or pool is success, as the spec wants a second
 * DEL, a DEL after the netns is gone and a DEL of an attachment never added to succeed.
 * @throws CniError 11 when the service cannot be reached, so the runtime retries and no address leaks silently.
 */
export async function del(ctx: CommandContext, config: NetworkConfig, attachment: Attachment): Promise<void> {
  const name = claimName(config.name, attachment);
  try {
    await retrying(ctx, 'DEL claim', () => ctx.api.releaseClaim(config.ipam.pool, name));
    ctx.cache.forgetClaim(nodeClaimsKey(config, identityOf(ctx, config.ipam)), name);
    if (ctx.cache.readExhausted(poolKey(config.ipam))) ctx.cache.writeExhausted(poolKey(config.ipam), []);
    ctx.log('info', `DEL ${attachment.containerID}/${attachment.ifname}: claim ${name} released`);
  } catch (error) {
    if (isNotFound(error)) {
      ctx.cache.forgetClaim(nodeClaimsKey(config, identityOf(ctx, config.ipam)), name);
      ctx.log(
        'info',
        `DEL ${attachment.containerID}/${attachment.ifname}: pool ${config.ipam.pool} is gone; nothing to release`,
      );
      return;
    }
    throw toCniError(error, 'DEL');
  }
}

/** An address with or without /prefix, canonical. */
function canonical(text: string): string {
  const bare = text.includes('/') ? text.slice(0, text.indexOf('/')) : text;
  try {
    const a = parseAddress(bare);
    return `${a.family}:${a.value}`;
  } catch {
    return text;
  }
}

/**
 * CHECK: the attachment's claim exists and holds exactly the addresses prevResult lists.
 * @throws CniError 102 when it does not, 11 when the service cannot tell.
 */
export async function check(ctx: CommandContext, config: NetworkConfig, attachment: Attachment): Promise<void> {
  const expected = prevResultAddresses(config.prevResult ?? {});
  const name = claimName(config.name, attachment);
  let claim: Claim;
  try {
    claim = asClaim(await retrying(ctx, 'CHECK claim', () => ctx.api.getClaim(config.ipam.pool, name)));
  } catch (error) {
    if (isNotFound(error))
      throw new CniError(
        CniCode.CheckFailed,
        'the attachment holds no claim',
        `claim ${name} of pool ${config.ipam.pool} (attachment ${attachment.containerID}/${attachment.ifname}) does not exist`,
      );
    throw toCniError(error, 'CHECK');
  }
  const held = claim.addresses.map((a) => canonical(a.address)).sort();
  const listed = expected.map(canonical).sort();
  if (JSON.stringify(held) !== JSON.stringify(listed)) {
    throw new CniError(
      CniCode.CheckFailed,
      'the claim holds other addresses than prevResult lists',
      `claim ${name} holds ${claim.addresses.map((a) => a.address).join(', ') || 'nothing'}; prevResult lists ${expected.join(', ') || 'nothing'}`,
    );
  }
}

/**
 * STATUS: ready when the service answers, the pool exists (or the config's ranges let ADD create it), and no family
 * the network needs is exhausted. Exhaustion comes from two places, remembered by the node for EXHAUSTED_MEMORY_MS:
 * an ADD of this node answered RangeFull, and the service's own warning (GET pool's `warnings`, the signal of its
 * PoolFreeBelowThreshold events) reading "full". Every node polls STATUS, so the pool is read at most once per node in
 * EXHAUSTED_MEMORY_MS (GET pool counts leases when its summary cannot answer, which grows with the pool); the polls
 * between cost one GET /v1/health. A pool configured on the service (no ranges in the config) is read once, by the
 * first STATUS or ADD of the node, and remembered like ADD's check. An ADD or DEL of the node that succeeds forgets.
 *
 * The spec's STATUS codes are 50 (cannot serve ADD) and 51 (cannot, and existing containers may have limited
 * connectivity); an exhausted pool leaves existing containers as they are, so it is 50.
 * @throws CniError 50 otherwise.
 */
export async function status(ctx: CommandContext, config: NetworkConfig): Promise<void> {
  const { ipam } = config;
  const unavailable = (cause: CniError) =>
    new CniError(
      CniCode.NotAvailable,
      'the IPAM service cannot serve ADD',
      `${cause.msg}${cause.details ? `: ${cause.details}` : ''}`,
    );
  try {
    const health = await ctx.api.health();
    if (health.status !== 'ok')
      throw new CniError(CniCode.TryAgainLater, 'the IPAM service is degraded', `health: ${health.status}`);
    if (ipam.ranges.length === 0 && !ctx.cache.read(poolCheckKey(ipam)))
      ctx.cache.write(poolCheckKey(ipam), await ensurePool(ctx.api, ipam));
  } catch (error) {
    throw unavailable(toCniError(error, 'STATUS'));
  }
  const key = poolKey(ipam);
  let exhausted = ctx.cache.readExhausted(key);
  if (!exhausted || Date.now() - exhausted.atMs >= EXHAUSTED_MEMORY_MS) {
    const read = await fullFamiliesOf(ctx, config);
    ctx.cache.writeExhausted(key, read.families, read.reason);
    exhausted = { ...read, atMs: Date.now() };
  }
  if (exhausted.families.length > 0) {
    const why =
      exhausted.reason ??
      `an ADD of this node was answered RangeFull ${Math.round((Date.now() - exhausted.atMs) / 1000)} s ago`;
    throw new CniError(
      CniCode.NotAvailable,
      'the pool has no free address',
      `pool ${ipam.pool}: no free ${exhausted.families.join(' or ')} address (${why})`,
    );
  }
}

/**
 * The families the network needs that the service's warning reads "full": with RequireDualStack either one, else only
 * when every family it may take is full (PreferDualStack falls back to the other). The config's ranges name the
 * families; a pool configured on the service offers the families its warnings cover. A pool not yet created
 * (the config's ranges create it at the first ADD) is not full.
 */
async function fullFamiliesOf(
  ctx: CommandContext,
  config: NetworkConfig,
): Promise<{ families: string[]; reason?: string }> {
  const { ipam } = config;
  let warnings: Partial<Record<string, { below: number | 'full' | null; since: string }>>;
  try {
    warnings = (await ctx.api.getPool(ipam.pool)).warnings ?? {};
  } catch (error) {
    if (isNotFound(error)) return { families: [] };
    throw new CniError(CniCode.NotAvailable, 'the IPAM service cannot serve ADD', toCniError(error, 'STATUS').message);
  }
  const offered = ipam.ranges.length > 0 ? [...new Set(ipam.ranges.map((r) => r.family))] : Object.keys(warnings);
  const full = offered.filter((family) => warnings[family]?.below === 'full');
  const blocked =
    config.ipam.ipFamilyPolicy === 'RequireDualStack'
      ? full.length > 0
      : full.length > 0 && full.length === offered.length;
  if (!blocked) return { families: [] };
  return {
    families: full,
    reason: `the service's warning: ${full.map((f) => `${f} space full since ${warnings[f]!.since}`).join(', ')}`,
  };
}

/**
 * GC (1.1.0): releases this network's claims on this node whose attachment is not in `cni.dev/valid-attachments`,
 * and nothing else: claims are selected by the network and node labels, then kept when their name is a valid
 * attachment's claim name. Goes on past a failed release and reports the failures at the end.
 * @throws CniError 11 when the listing or a release failed for a transient reason, else the first failure's code.
 */
export async function gc(ctx: CommandContext, config: NetworkConfig): Promise<{ released: string[] }> {
  const { ipam } = config;
  // The spec has the runtime send the key; without it, "nothing is valid" would release every claim of the node.
  if (config.validAttachments === undefined)
    throw new CniError(
      CniCode.InvalidConfig,
      'GC needs cni.dev/valid-attachments',
      'the config has no cni.dev/valid-attachments list; nothing was released',
    );
  const keep = new Set(config.validAttachments.map((a) => claimName(config.name, a)));
  const labels = labelsOf(config.name, identityOf(ctx, ipam), { containerID: '', ifname: '' });
  const selector = `${LabelKey.network}=${labels[LabelKey.network]},${LabelKey.node}=${labels[LabelKey.node]}`;
  const stale: string[] = [];
  try {
    // Every page (the API's largest), following nextCursor: a page the selector emptied may still carry one.
    const claims = await ctx.api.listClaims(ipam.pool, { labelSelector: selector });
    // This identity's claims only: the cluster label as this node writes it (absent when no clusterId is set).
    const ours = claims.items.filter((claim) => claim.labels?.[LabelKey.cluster] === labels[LabelKey.cluster]);
    for (const claim of ours) if (!keep.has(claim.name)) stale.push(claim.name);
  } catch (error) {
    if (isNotFound(error)) return { released: [] };
    throw toCniError(error, 'GC');
  }
  const released: string[] = [];
  const failures: CniError[] = [];
  for (const name of stale) {
    try {
      await ctx.api.releaseClaim(ipam.pool, name);
      ctx.cache.forgetClaim(nodeClaimsKey(config, identityOf(ctx, ipam)), name);
      released.push(name);
      ctx.log('info', `GC: released stale claim ${name}`);
    } catch (error) {
      failures.push(toCniError(error, `GC release of ${name}`));
    }
  }
  if (failures.length > 0) {
    const transient = failures.some((f) => f.code === CniCode.TryAgainLater);
    throw new CniError(
      transient ? CniCode.TryAgainLater : (failures[0]?.code ?? CniCode.Refused),
      `GC released ${released.length} of ${stale.length} stale claims`,
      failures.map((f) => f.message).join('; '),
    );
  }
  return { released };
}

/** The selector of this network's claims on this node (the cluster label is checked on each claim). */
function nodeSelector(ctx: CommandContext, config: NetworkConfig): { selector: string; cluster: string | undefined } {
  const labels = labelsOf(config.name, identityOf(ctx, config.ipam), { containerID: '', ifname: '' });
  return {
    selector: `${LabelKey.network}=${labels[LabelKey.network]},${LabelKey.node}=${labels[LabelKey.node]}`,
    cluster: labels[LabelKey.cluster],
  };
}

/** The most claims one renewal request carries (the API's bound: one DynamoDB batch read). */
export const RENEW_BATCH = 100;

/**
 * RENEW (not a CNI command: the node's renewer, run by a systemd timer or a DaemonSet loop with the network's
 * config): moves every lease-carrying claim of this network and node identity to `leaseSeconds` from now. A node
 * that stops running it (crashed, cut off, deleted) has its claims expire, and the reconciler releases them.
 * The claims are the ones ADD recorded on the node (PoolCheckCache.recordedClaims), renewed by name in batches of
 * RENEW_BATCH (POST /v1/pools/{pool}/renewals): a run costs ceil(node claims / 100) requests, whatever the pool's
 * size. The node's first run (no `seeded` mark in the state folder) also lists the node's claims by label once (a
 * request per 1000 of the pool's claims) and records those it did not know: claims made before records were kept.
 * A claim the service answers NotFound (released meanwhile), Expired (its address was taken) or NotLeased is
 * forgotten.
 * @throws CniError 7 without ipam.leaseSeconds; 11 when a request or a claim's renewal failed for a transient reason.
 */
export async function renew(
  ctx: CommandContext,
  config: NetworkConfig,
): Promise<{ renewed: string[]; requests: number }> {
  const ttl = config.ipam.leaseSeconds;
  if (ttl === undefined)
    throw new CniError(
      CniCode.InvalidConfig,
      'RENEW needs ipam.leaseSeconds',
      'the network makes claims without a lease',
    );
  const key = nodeClaimsKey(config, identityOf(ctx, config.ipam));
  const counter = { requests: 0 };
  try {
    if (!ctx.cache.recordedClaims(key).seeded) await seedRecords(ctx, config, key, counter);
  } catch (error) {
    if (isNotFound(error)) return { renewed: [], requests: counter.requests };
    throw toCniError(error, 'RENEW');
  }
  const { records } = ctx.cache.recordedClaims(key);
  const names = [...new Set(records.map((r) => r.name))].sort();
  const renewed: string[] = [];
  const failures: CniError[] = [];
  for (let at = 0; at < names.length; at += RENEW_BATCH) {
    const batch = names.slice(at, at + RENEW_BATCH);
    let results: readonly ClaimRenewal[];
    try {
      results = (
        await retrying(ctx, 'RENEW', () => {
          counter.requests += 1;
          return ctx.api.renewClaims(config.ipam.pool, batch, ttl);
        })
      ).items;
    } catch (error) {
      if (isNotFound(error)) return { renewed, requests: counter.requests };
      throw toCniError(error, 'RENEW');
    }
    for (const item of results) {
      if (item.result === 'Renewed') renewed.push(item.name);
      else if (item.result === 'NotFound' || item.result === 'Expired' || item.result === 'NotLeased') {
        if (item.result === 'Expired') ctx.log('warn', `RENEW ${item.name}: ${item.detail ?? 'expired'}`);
        ctx.cache.forgetClaim(
          key,
          item.name,
          records.filter((r) => r.name === item.name),
        );
      } else failures.push(renewalFailure(item));
    }
  }
  ctx.log('info', `RENEW: ${renewed.length} claims renewed for ${ttl} s in ${counter.requests} requests`);
  if (failures.length > 0)
    throw new CniError(
      failures.some((f) => f.code === CniCode.TryAgainLater) ? CniCode.TryAgainLater : CniCode.Refused,
      `RENEW renewed ${renewed.length} of ${names.length} claims`,
      failures.map((f) => f.message).join('; '),
    );
  return { renewed, requests: counter.requests };
}

/** A claim's refusal in a batch renewal: transient when it kept changing or the engine was busy. */
function renewalFailure(item: ClaimRenewal): CniError {
  const transient = item.result === 'Conflict' || item.result === 'NotReady';
  return new CniError(
    transient ? CniCode.TryAgainLater : CniCode.Refused,
    `RENEW of ${item.name}: ${item.result}`,
    item.detail ?? '',
  );
}

/**
 * The node's first RENEW: lists this network's claims of the node identity by label and records the leased ones
 * the node does not know, then marks the folder seeded. @throws the listing's failure (nothing is marked then)
 */
async function seedRecords(
  ctx: CommandContext,
  config: NetworkConfig,
  key: string,
  counter: { requests: number },
): Promise<void> {
  const { selector, cluster } = nodeSelector(ctx, config);
  const claims = await retrying(ctx, 'RENEW listing', () => {
    counter.requests += 1;
    return ctx.api.listClaims(config.ipam.pool, { labelSelector: selector });
  });
  const known = new Set(ctx.cache.recordedClaims(key).records.map((r) => r.name));
  for (const claim of claims.items) {
    if (claim.labels?.[LabelKey.cluster] !== cluster || claim.expiresAt === undefined || known.has(claim.name))
      continue;
    try {
      ctx.cache.recordClaim(key, claim.name);
    } catch (error) {
      // Not marked seeded: the next run lists again.
      ctx.log('warn', `RENEW: cannot record claim ${claim.name}: ${(error as Error).message}`);
      return;
    }
  }
  ctx.cache.markSeeded(key);
}
