// Over 300 lines: one protocol's decisions (Create, Update and Delete, and the answer each sends), which read each other's rules.
/**
 * The decisions of the `Custom::IpamClaim` provider (CloudFormation's custom resource protocol): a request read and
 * checked, the claim use cases it calls (the same ones the HTTP routes call), and the answer it gets. Sending the
 * answer to the pre-signed ResponseURL, the deadline and the retries are the adapter's (adapters/custom-resource).
 *
 *   request          what it does                                              answer
 *   Create           claim `Name`, or a name derived from the stack, the        SUCCESS with the claim's CIDRs, or
 *                    logical id and the RequestId (a retry, same RequestId,      FAILED with the API's code and
 *                    answers the same claim: the claim use case is idempotent)   sentence (nothing written)
 *   Update, Pool/    a new claim (Name, or a name derived from this Update's     a new PhysicalResourceId: CloudFormation
 *   Name/size moved  RequestId); the old one is left to CloudFormation's Delete  deletes the old one after the update
 *   Update, Labels   nothing: a claim's labels are part of its request (and of   the same PhysicalResourceId; SUCCESS when
 *   only             each lease), so they cannot change in place                 they are already so, else FAILED saying so
 *   Delete           releases the claim if this stack's resource holds it        SUCCESS also when absent, released, or
 *                                                                                not this resource's; FAILED naming the
 *                                                                                child range of a claim that has one
 *
 * A claim's owner is the stack (kind CloudFormationStack, name the stack name, uid the stack id) and it carries the
 * resource's logical id as a label, so a Delete never releases a claim another stack or resource holds under the same
 * name (a rollback after a Create that failed on a taken Name sends Delete for that name).
 */
import { createHash } from 'node:crypto';
import { requireMember, type Principal } from '../access.ts';
import { InvalidArgumentError, IpamError, NotFoundError, PreconditionFailedError } from '../errors.ts';
import { IpFamily } from '../ip/address.ts';
import { IpFamilyPolicy, prefixOf, type Claim, type Range } from '../model.ts';
import { checkDnsLabel } from '../names.ts';
import type { Deps } from './deps.ts';
import { createClaimGrowing } from './grow.ts';
import { deleteClaim, getClaim, type CreateClaimCommand } from './claims.ts';

export const STACK_OWNER_KIND = 'CloudFormationStack';
/** The label naming the resource's logical id in its stack. */
export const LOGICAL_ID_LABEL = 'cloudformation.ipam.dev/logical-id';

export const RequestType = { Create: 'Create', Update: 'Update', Delete: 'Delete' } as const;
export type RequestType = (typeof RequestType)[keyof typeof RequestType];

/** A custom resource request as CloudFormation sends it (the fields this provider reads). */
export interface ResourceRequest {
  readonly requestType: RequestType;
  readonly requestId: string;
  readonly stackId: string;
  readonly logicalResourceId: string;
  readonly responseUrl: string;
  readonly physicalResourceId?: string;
  readonly properties: Readonly<Record<string, unknown>>;
  readonly oldProperties?: Readonly<Record<string, unknown>>;
}

/** The answer to one request, before it is written as the response body. */
export interface ResourceAnswer {
  readonly status: 'SUCCESS' | 'FAILED';
  readonly reason?: string;
  readonly physicalResourceId: string;
  readonly data?: Readonly<Record<string, string>>;
}

/** The properties of `Custom::IpamClaim` (ServiceToken and ServiceTimeout are CloudFormation's own). */
export const CLAIM_PROPERTIES = [
  'ServiceToken',
  'ServiceTimeout',
  'Pool',
  'Name',
  'Count',
  'IpFamilyPolicy',
  'IpFamilies',
  'Prefixes',
  'Addresses',
  'Labels',
] as const;
/** Those whose change makes another claim (a replacement); a change of Labels alone does not. */
const REPLACING = ['Pool', 'Name', 'Count', 'IpFamilyPolicy', 'IpFamilies', 'Prefixes', 'Addresses'] as const;

const text = (raw: Record<string, unknown>, field: string): string => {
  const value = raw[field];
  if (typeof value !== 'string' || value === '')
    throw new InvalidArgumentError(`The request has no ${field}: it is not a CloudFormation custom resource request.`);
  return value;
};

const record = (value: unknown, field: string): Record<string, unknown> => {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new InvalidArgumentError(`${field} must be an object.`, field);
  return value as Record<string, unknown>;
};

/**
 * Reads a request. The response URL is read first and apart (`responseUrlOf`), so even a request refused here is
 * answered. @throws InvalidArgumentError
 */
export function readRequest(raw: unknown): ResourceRequest {
  const event = record(raw, 'the request');
  const requestType = text(event, 'RequestType');
  if (!Object.values(RequestType).includes(requestType as RequestType))
    throw new InvalidArgumentError(`RequestType must be Create, Update or Delete, not ${JSON.stringify(requestType)}.`);
  const physical = event.PhysicalResourceId;
  return {
    requestType: requestType as RequestType,
    requestId: text(event, 'RequestId'),
    stackId: text(event, 'StackId'),
    logicalResourceId: text(event, 'LogicalResourceId'),
    responseUrl: text(event, 'ResponseURL'),
    ...(typeof physical === 'string' && physical !== '' ? { physicalResourceId: physical } : {}),
    properties: record(event.ResourceProperties, 'ResourceProperties'),
    ...(event.OldResourceProperties !== undefined
      ? { oldProperties: record(event.OldResourceProperties, 'OldResourceProperties') }
      : {}),
  };
}

/** The response URL of anything that may be a request, or undefined (then no answer can be sent). */
export function responseUrlOf(raw: unknown): string | undefined {
  const url = (raw as { ResponseURL?: unknown } | null)?.ResponseURL;
  return typeof url === 'string' && /^https?:\/\//.test(url) ? url : undefined;
}

/** `<pool>/<claim>`. */
export const physicalIdOf = (pool: string, claim: string): string => `${pool}/${claim}`;

/** The pool and claim of a PhysicalResourceId this provider gave, or undefined for any other text. */
export function parsePhysicalId(id: string | undefined): { pool: string; claim: string } | undefined {
  const m = /^([a-z0-9-]{1,63})\/([a-z0-9-]{1,63})$/.exec(id ?? '');
  return m ? { pool: m[1]!, claim: m[2]! } : undefined;
}

/** The stack's name, from its id (`arn:aws:cloudformation:<region>:<account>:stack/<name>/<uuid>`). */
export function stackNameOf(stackId: string): string {
  const m = /:stack\/([^/]+)\//.exec(stackId);
  return m ? m[1]! : stackId.slice(0, 253);
}

const slug = (value: string, most: number): string =>
  value
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, most)
    .replace(/-+$/, '');

/**
 * The claim name of a resource without `Name`: readable parts of the stack name and logical id, and a hash of the
 * stack id, the logical id and the RequestId of the request that makes the claim. A retried request (same RequestId)
 * gets the same name, so the claim use case answers the claim it already made; a replacing Update gets another one,
 * so the new claim can be held beside the old until CloudFormation deletes that.
 */
export function derivedName(request: Pick<ResourceRequest, 'stackId' | 'logicalResourceId' | 'requestId'>): string {
  const hash = createHash('sha256')
    .update(`${request.stackId}\n${request.logicalResourceId}\n${request.requestId}`)
    .digest('hex')
    .slice(0, 12);
  const parts = [slug(stackNameOf(request.stackId), 20), slug(request.logicalResourceId, 24), hash];
  return parts.filter((p) => p !== '').join('-');
}

/** A property sent as a string (CloudFormation sends numbers as strings) or a number, as a whole number. */
function wholeNumber(value: unknown, field: string): number | undefined {
  if (value === undefined) return undefined;
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n)) throw new InvalidArgumentError(`${field} must be a whole number.`, field);
  return n;
}

function strings(value: unknown, field: string): string[] | undefined {
  if (value === undefined) return undefined;
  const list = typeof value === 'string' ? value.split(',').map((s) => s.trim()) : value;
  if (!Array.isArray(list) || list.some((s) => typeof s !== 'string'))
    throw new InvalidArgumentError(`${field} must be a list of strings.`, field);
  return list as string[];
}

function labelsOf(value: unknown, logicalId: string): Record<string, string> {
  const labels = record(value, 'Labels');
  for (const [key, v] of Object.entries(labels))
    if (typeof v !== 'string') throw new InvalidArgumentError(`Labels.${key} must be a string.`, `Labels.${key}`);
  return { ...(labels as Record<string, string>), [LOGICAL_ID_LABEL]: logicalId.slice(0, 128) };
}

/**
 * The claim command of a request's properties. Names and values are checked again by the claim use case; here only
 * what the properties' own shape needs. @throws InvalidArgumentError
 */
export function claimCommandOf(request: ResourceRequest, name: string): CreateClaimCommand {
  const props = request.properties;
  const unknown = Object.keys(props).filter((k) => !(CLAIM_PROPERTIES as readonly string[]).includes(k));
  if (unknown.length)
    throw new InvalidArgumentError(
      `Custom::IpamClaim has no propert${unknown.length === 1 ? 'y' : 'ies'} ${unknown.join(', ')}; it takes ${CLAIM_PROPERTIES.slice(2).join(', ')}.`,
    );
  if (typeof props.Pool !== 'string' || props.Pool === '')
    throw new InvalidArgumentError('Custom::IpamClaim needs Pool: the name of the pool to claim from.', 'Pool');
  const count = wholeNumber(props.Count, 'Count');
  const families = strings(props.IpFamilies, 'IpFamilies');
  const prefixes = strings(props.Prefixes, 'Prefixes');
  const addresses = strings(props.Addresses, 'Addresses');
  const policy = props.IpFamilyPolicy;
  if (policy !== undefined && !Object.values(IpFamilyPolicy).includes(policy as IpFamilyPolicy))
    throw new InvalidArgumentError(
      `IpFamilyPolicy must be one of ${Object.values(IpFamilyPolicy).join(', ')}.`,
      'IpFamilyPolicy',
    );
  if (families?.some((f) => !Object.values(IpFamily).includes(f as IpFamily)))
    throw new InvalidArgumentError(`IpFamilies must name ${Object.values(IpFamily).join(' and/or ')}.`, 'IpFamilies');
  return {
    pool: props.Pool,
    name,
    owner: { kind: STACK_OWNER_KIND, name: stackNameOf(request.stackId), uid: request.stackId },
    labels: labelsOf(props.Labels, request.logicalResourceId),
    ...(count !== undefined ? { count } : {}),
    ...(policy !== undefined ? { ipFamilyPolicy: policy as IpFamilyPolicy } : {}),
    ...(families ? { ipFamilies: families as IpFamily[] } : {}),
    ...(prefixes ? { prefixes } : {}),
    ...(addresses ? { addresses } : {}),
  };
}

/** The attributes of `Custom::IpamClaim`: what `Fn::GetAtt` reads from an answer's Data. */
export const CLAIM_ATTRIBUTES = ['Cidr', 'Cidrs', 'Ipv4Cidr', 'Ipv6Cidr', 'RangeCidr', 'ClaimName', 'Pool'] as const;

/**
 * The answer's Data. A family the claim has none of is an empty string. `RangeCidr` is the CIDR of the range its first
 * block or address is in: in a pool that grows from another, the block it grew by (a VPC's /16 whose subnets are
 * the claims).
 */
export function dataOf(claim: Claim, ranges: readonly Range[] = []): Record<(typeof CLAIM_ATTRIBUTES)[number], string> {
  const cidrs = claim.addresses.map((a) => (a.prefixLength !== undefined ? prefixOf(a) : a.address));
  const first = (family: IpFamily) => {
    const i = claim.addresses.findIndex((a) => a.family === family);
    return i < 0 ? '' : cidrs[i]!;
  };
  return {
    Cidr: cidrs[0] ?? '',
    Cidrs: cidrs.join(','),
    Ipv4Cidr: first(IpFamily.IPv4),
    Ipv6Cidr: first(IpFamily.IPv6),
    RangeCidr: ranges.find((r) => r.name === claim.addresses[0]?.range)?.cidr ?? '',
    ClaimName: claim.name,
    Pool: claim.pool,
  };
}

/** The Reason of a refused request: the API's code and sentence. */
export const reasonOf = (error: IpamError): string => `${error.code}: ${error.message}`;

export interface ResourceOptions {
  /** Who the provider acts as in the pool's `access` (its own role). */
  readonly caller?: Principal;
  /** Epoch milliseconds after which no claim is committed (the answer is sent by then, whatever it is). */
  readonly commitBy?: number;
}

const sameValue = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Answers one request. Domain errors become FAILED answers with their code and sentence; anything else is thrown
 * (the adapter answers it FAILED too, without the internals).
 */
export async function answerResource(
  deps: Deps,
  request: ResourceRequest,
  options: ResourceOptions = {},
): Promise<ResourceAnswer> {
  try {
    if (request.requestType === RequestType.Delete) return await deleteResource(deps, request, options);
    const held = parsePhysicalId(request.physicalResourceId);
    const replacing =
      request.requestType === RequestType.Create ||
      held === undefined ||
      REPLACING.some((k) => !sameValue(request.properties[k], request.oldProperties?.[k]));
    if (!replacing) return await keepResource(deps, request, held, options);
    const name = typeof request.properties.Name === 'string' ? request.properties.Name : derivedName(request);
    return await claimResource(deps, request, name, options);
  } catch (error) {
    if (error instanceof IpamError && !(error.code === 'Internal'))
      return { status: 'FAILED', reason: reasonOf(error), physicalResourceId: failedPhysicalId(request) };
    throw error;
  }
}

/**
 * The PhysicalResourceId of a FAILED answer: an Update or Delete keeps the resource's; a failed Create names the claim
 * it asked for, which a rollback's Delete then finds absent or not this resource's (so it releases nothing else).
 */
export function failedPhysicalId(request: ResourceRequest): string {
  const fallback = request.physicalResourceId ?? `unclaimed/${request.requestId}`;
  if (request.requestType !== RequestType.Create) return fallback;
  const pool = request.properties.Pool;
  const name = typeof request.properties.Name === 'string' ? request.properties.Name : derivedName(request);
  const id = typeof pool === 'string' ? physicalIdOf(pool, name) : '';
  return parsePhysicalId(id) ? id : fallback;
}

async function claimResource(
  deps: Deps,
  request: ResourceRequest,
  name: string,
  options: ResourceOptions,
): Promise<ResourceAnswer> {
  checkDnsLabel(name, 'Name');
  const cmd = claimCommandOf(request, name);
  // The HTTP API checks a pool's `access` before every route under it (api.ts authorize): the same check here.
  requireMember((await deps.views.get(cmd.pool, deps.clock.nowMs())).pool, options.caller);
  const result = await createClaimGrowing(deps, {
    ...cmd,
    ...(options.caller ? { createdBy: options.caller } : {}),
    ...(options.commitBy !== undefined ? { commitBy: options.commitBy } : {}),
  });
  // Read afresh: a claim that grew the pool is in a range the view read before it did not have.
  const { ranges } = await deps.views.get(cmd.pool, deps.clock.nowMs(), true);
  return { status: 'SUCCESS', physicalResourceId: physicalIdOf(cmd.pool, name), data: dataOf(result.claim, ranges) };
}

/** An Update that changes only Labels: the claim stays; SUCCESS when it already has them (a rollback's Update). */
async function keepResource(
  deps: Deps,
  request: ResourceRequest,
  held: { pool: string; claim: string },
  options: ResourceOptions,
): Promise<ResourceAnswer> {
  const id = physicalIdOf(held.pool, held.claim);
  const wanted = labelsOf(request.properties.Labels, request.logicalResourceId);
  const view = await deps.views.get(held.pool, deps.clock.nowMs(), true);
  requireMember(view.pool, options.caller);
  const claim = await getClaim(deps, held.pool, held.claim);
  if (sameValue(Object.entries(claim.spec.labels ?? {}).sort(), Object.entries(wanted).sort()))
    return { status: 'SUCCESS', physicalResourceId: id, data: dataOf(claim, view.ranges) };
  return {
    status: 'FAILED',
    reason: `Labels cannot change in place: they are part of claim ${JSON.stringify(held.claim)}'s request and of each of its leases. Nothing changed; to relabel, change Name too (or, without Name, change Pool or the size), and CloudFormation replaces the claim.`,
    physicalResourceId: id,
  };
}

async function deleteResource(deps: Deps, request: ResourceRequest, options: ResourceOptions): Promise<ResourceAnswer> {
  const id = request.physicalResourceId ?? `unclaimed/${request.requestId}`;
  const done: ResourceAnswer = { status: 'SUCCESS', physicalResourceId: id };
  const held = parsePhysicalId(request.physicalResourceId);
  if (!held) return done;
  for (let attempt = 0; attempt < 3; attempt += 1) {
    let claim: Claim;
    try {
      claim = await getClaim(deps, held.pool, held.claim);
    } catch (error) {
      // No pool, no claim, or an expired one: nothing of this resource's is held.
      if (error instanceof NotFoundError) return done;
      throw error;
    }
    const ours =
      claim.spec.owner.kind === STACK_OWNER_KIND &&
      claim.spec.owner.uid === request.stackId &&
      claim.spec.labels?.[LOGICAL_ID_LABEL] === request.logicalResourceId.slice(0, 128);
    if (!ours) return done;
    try {
      await deleteClaim(deps, held.pool, held.claim, {
        ifMatch: [claim.version],
        ...(options.caller ? { caller: options.caller } : {}),
      });
      return done;
    } catch (error) {
      // Changed since read (a renewal): read it again and judge anew.
      if (error instanceof PreconditionFailedError) continue;
      throw error;
    }
  }
  return {
    status: 'FAILED',
    reason: `Claim ${JSON.stringify(held.claim)} kept changing; retry.`,
    physicalResourceId: id,
  };
}

/** Most bytes of a response body (CloudFormation's limit). */
export const MAX_RESPONSE_BYTES = 4096;

/**
 * The response body of an answer, as CloudFormation reads it, within 4096 bytes: a long Reason is cut short, and an
 * answer whose Data alone would not fit is FAILED instead (a claim of many blocks: ask for fewer per resource).
 */
export function responseBody(
  request: Pick<ResourceRequest, 'requestId' | 'stackId' | 'logicalResourceId'>,
  answer: ResourceAnswer,
): string {
  const body = (a: ResourceAnswer) =>
    JSON.stringify({
      Status: a.status,
      ...(a.reason !== undefined ? { Reason: a.reason } : {}),
      PhysicalResourceId: a.physicalResourceId,
      StackId: request.stackId,
      RequestId: request.requestId,
      LogicalResourceId: request.logicalResourceId,
      ...(a.data ? { Data: a.data } : {}),
    });
  const bytes = (s: string) => new TextEncoder().encode(s).length;
  let out = body(answer);
  if (bytes(out) <= MAX_RESPONSE_BYTES) return out;
  if (answer.data) {
    out = body({
      status: 'FAILED',
      reason: `The claim's CIDRs do not fit CloudFormation's 4096-byte response; ask for fewer per resource.`,
      physicalResourceId: answer.physicalResourceId,
    });
    if (bytes(out) <= MAX_RESPONSE_BYTES) return out;
  }
  // Cut the Reason to what fits, counting each character as JSON escapes and UTF-8 encodes it.
  const short: ResourceAnswer = {
    status: answer.status,
    physicalResourceId: answer.physicalResourceId,
    reason: '...',
  };
  let budget = MAX_RESPONSE_BYTES - bytes(body(short));
  let kept = '';
  for (const ch of answer.reason ?? '') {
    const cost = bytes(JSON.stringify(ch)) - 2;
    if (cost > budget) break;
    budget -= cost;
    kept += ch;
  }
  return body({ ...short, reason: `${kept}...` });
}
