/**
 * The simulated clients' side of the HTTP API: each request is an API Gateway (payload 2.0) event handed to a
 * container's real HTTP handler (shared/adapters/http/api.ts: routing, body validation, the pool's access check, the
 * problem mapping), and each answer is read back as a client reads it, from the status and the JSON body. So the
 * simulator maps no error to a status itself: the statuses it counts are the ones the deployed API would send.
 */
import type { Context } from 'aws-lambda';
import { httpEvent } from '../scripts/lib/http-event.ts';
import { createHttpHandler, type ErrorLogger } from '../shared/adapters/http/api.ts';
import type { components } from '../shared/adapters/http/openapi.gen.ts';
import type { Deps } from '../shared/core/use-cases/deps.ts';
import type { AnsweredClaim } from './invariants.ts';

type Schemas = components['schemas'];
export type ClaimDocument = Schemas['Claim'];
export type ClaimPage = Schemas['ClaimPage'];
export type RangeDocument = Schemas['Range'];
export type PoolDetailsDocument = Schemas['PoolDetails'];

/** An answer: its status, its JSON body, and for an error a line saying what it was (for the trace and the checks). */
export interface Reply {
  readonly status: number;
  readonly body: unknown;
  readonly error?: string;
}

/** Sends one request to the container's handler and reads its answer. */
export type Http = (method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown) => Promise<Reply>;

/**
 * The HTTP API of one container over its dependencies. A container runs one request at a time, so the failure its
 * handler logs for a 5xx (whose details never reach the answer) is that request's, and is put in the reply's `error`.
 */
export function httpOf(deps: Deps, name: string, localStack: boolean): Http {
  let failure: string | undefined;
  const log: ErrorLogger = (entry) => {
    if (entry.level === 'error') failure = `${String(entry.error)}: ${String(entry.detail)}`;
  };
  const handler = createHttpHandler(
    () => deps,
    { version: 'sim', health: () => deps.health.health(), localStack },
    log,
  );
  let sent = 0;
  return async (method, path, body) => {
    failure = undefined;
    sent += 1;
    const out = await handler(httpEvent(method, path, { body, requestId: `${name}-${sent}` }), {} as Context);
    const status = out.statusCode ?? 200;
    const parsed: unknown = out.body ? JSON.parse(out.body) : undefined;
    if (status < 400) return { status, body: parsed };
    const problem = parsed as Schemas['Problem'];
    return { status, body: parsed, error: (status >= 500 && failure) || `${problem.code}: ${problem.detail}` };
  };
}

/** The claim a Claim document answers, in the pool the request named (the document does not repeat it). */
export function answeredClaim(pool: string, doc: ClaimDocument): AnsweredClaim {
  return {
    pool,
    name: doc.name,
    uid: doc.uid,
    owner: doc.owner.uid,
    addresses: doc.addresses.map((a) => ({ address: a.address })),
    ...(doc.expiresAt !== undefined ? { expiresAt: Date.parse(doc.expiresAt) } : {}),
  };
}

/** A path segment (an owner uid may need encoding; names never do, and are sent as they are). */
export const segment = (value: string): string => encodeURIComponent(value);
