/**
 * The batch renewal: many claims of one pool renewed in one request (a node's renewer renews its pods' claims so).
 * Not one transaction: each claim's renewal is its own, as renewClaim writes it (a claim, its marker and its leases
 * together), judged against the claim as one batch read found it. So one claim gone, expired or refused does not stop
 * the others, and each gets its own result.
 *
 *   claim                                               result
 *   leased, renewed                                     Renewed (its new expiry and version)
 *   absent (never made, released, another pool's)       NotFound
 *   its lease expired and another claim took an address Expired
 *   without an expiry (made without a TTL, confirmed)   NotLeased: a batch never gives a held claim an expiry
 *   refused as renewClaim refuses it                    its code: Forbidden, Conflict (kept changing), NotReady
 *
 * Cost on DynamoDB: one BatchGetItem (MAX_RENEWAL_CLAIMS is its 100 keys) and one TransactWriteItems per claim
 * renewed; a claim that changed under the read is read again alone.
 */
import { ClaimExpiredError, InvalidArgumentError, IpamError, NotLeasedError, type ErrorCode } from '../errors.ts';
import type { Principal } from '../access.ts';
import type { Claim } from '../model.ts';
import { checkDnsLabel } from '../names.ts';
import { checkTtl } from './claim-spec.ts';
import { renewInPool } from './claims.ts';
import type { Deps } from './deps.ts';

/** The most claims one batch renewal takes: one DynamoDB batch read's keys. */
export const MAX_RENEWAL_CLAIMS = 100;

/** Renewals written at once: enough to hide the round trips of a full batch, few enough not to burst the table. */
const RENEWALS_AT_ONCE = 8;

export interface RenewClaimsCommand {
  readonly pool: string;
  /** The claims' names: 1 to MAX_RENEWAL_CLAIMS, each once. */
  readonly names: readonly string[];
  /** Seconds from now for every claim; default each claim's own TTL. */
  readonly ttlSeconds?: number;
  readonly caller?: Principal;
}

/** The codes of a claim's refusal that a batch reports as that claim's result (openapi.yaml's ClaimRenewal). */
const PER_CLAIM = ['NotFound', 'Forbidden', 'Conflict', 'NotReady', 'ClaimHasChildren', 'ClaimHasConsumers'] as const;
type PerClaimCode = (typeof PER_CLAIM)[number];

/** One claim's result, in the order the names were given. */
export type ClaimRenewal =
  | { readonly name: string; readonly result: 'Renewed'; readonly claim: Claim }
  | { readonly name: string; readonly result: 'Expired' | 'NotLeased' | PerClaimCode; readonly detail: string };

const isPerClaim = (code: ErrorCode): code is PerClaimCode => (PER_CLAIM as readonly string[]).includes(code);

/** Checks the names: a list of 1 to MAX_RENEWAL_CLAIMS claim names, none twice. @throws InvalidArgumentError */
function checkNames(names: readonly string[]): void {
  if (names.length === 0 || names.length > MAX_RENEWAL_CLAIMS)
    throw new InvalidArgumentError(
      `claims must list 1 to ${MAX_RENEWAL_CLAIMS} claim names (it lists ${names.length}); renew more in several requests.`,
      'claims',
    );
  const seen = new Set<string>();
  names.forEach((name, i) => {
    checkDnsLabel(name, `claims[${i}]`);
    if (seen.has(name))
      throw new InvalidArgumentError(`claims lists ${JSON.stringify(name)} more than once.`, `claims[${i}]`);
    seen.add(name);
  });
}

/** A renewal's refusal as the claim's result; any other failure (the store's) is the request's. */
function failureOf(name: string, error: unknown): ClaimRenewal {
  if (!(error instanceof IpamError)) throw error;
  if (error instanceof ClaimExpiredError) return { name, result: 'Expired', detail: error.message };
  if (error instanceof NotLeasedError) return { name, result: 'NotLeased', detail: error.message };
  if (!isPerClaim(error.code)) throw error;
  return { name, result: error.code, detail: error.message };
}

/**
 * Renews each named claim of the pool that has an expiry, to `ttlSeconds` from now (default: its own TTL), and
 * answers a result per name. Checks the whole request before writing anything.
 * @throws InvalidArgumentError for a bad list or ttlSeconds; NotFoundError when the pool does not exist; a store's
 *   failure (not a claim's refusal) fails the request, after the renewals already started have finished
 */
export async function renewClaims(
  deps: Pick<Deps, 'claims' | 'views' | 'clock'>,
  cmd: RenewClaimsCommand,
): Promise<ClaimRenewal[]> {
  checkNames(cmd.names);
  const ttlSeconds = checkTtl(cmd.ttlSeconds);
  const { pool } = await deps.views.get(cmd.pool, deps.clock.nowMs());
  const found = new Map((await deps.claims.getClaims(pool.name, cmd.names)).map((c) => [c.name, c]));
  const results: ClaimRenewal[] = new Array(cmd.names.length);
  const failures: unknown[] = [];
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < cmd.names.length; i = next++) {
      const name = cmd.names[i]!;
      try {
        const claim = await renewInPool(deps, {
          pool,
          name,
          first: { claim: found.get(name) },
          leasedOnly: true,
          ...(ttlSeconds !== undefined ? { ttlSeconds } : {}),
          ...(cmd.caller ? { caller: cmd.caller } : {}),
        });
        results[i] = { name, result: 'Renewed', claim };
      } catch (error) {
        try {
          results[i] = failureOf(name, error);
        } catch (unexpected) {
          // The store failed, not the claim: start no more renewals.
          failures.push(unexpected);
          next = cmd.names.length;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(RENEWALS_AT_ONCE, cmd.names.length) }, worker));
  if (failures.length > 0) throw failures[0];
  return results;
}
