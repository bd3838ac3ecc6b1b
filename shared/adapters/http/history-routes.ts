import { InvalidArgumentError } from '../../core/errors.ts';
import type { Holding } from '../../core/history/holding.ts';
import {
  addressAt,
  addressHistory,
  cidrHistory,
  ownerHistory,
  type HistoryPage,
} from '../../core/use-cases/history.ts';
import { principalDto } from './dto.ts';
import { pageParams, pathParam, queryParam } from './request.ts';
import { json, type RouteMap } from './routes.ts';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { components } from './openapi.gen.ts';

/** A holding as JSON: `to` absent while it lasts; a hold (reuse delay) has no claim uid. */
export function holdingDto(h: Holding): components['schemas']['Holding'] {
  return {
    address: h.address,
    family: h.family,
    range: h.range,
    kind: h.kind,
    claim: h.claim,
    ...(h.claimUid ? { claimUid: h.claimUid } : {}),
    owner: { kind: h.owner.kind, name: h.owner.name, uid: h.owner.uid },
    from: h.from,
    ...(h.to !== undefined ? { to: h.to, toExact: h.toExact ?? true } : {}),
    ...(h.endReason !== undefined ? { endReason: h.endReason } : {}),
    ...(h.expiresAt !== undefined ? { expiresAt: new Date(h.expiresAt).toISOString() } : {}),
    ...(h.labels ? { labels: h.labels } : {}),
    ...(h.createdBy ? { createdBy: principalDto(h.createdBy) } : {}),
    ...(h.releasedBy ? { releasedBy: principalDto(h.releasedBy) } : {}),
  };
}

/** A time query parameter (RFC 3339), as epoch ms. @throws InvalidArgumentError */
function timeParam(event: APIGatewayProxyEventV2, name: 'from' | 'to' | 'at'): number | undefined {
  const text = queryParam(event, name);
  if (text === undefined) return undefined;
  const ms = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(text)
    ? Date.parse(text)
    : Number.NaN;
  if (!Number.isFinite(ms))
    throw new InvalidArgumentError(
      `${name} must be an RFC 3339 time with its offset, such as 2026-11-25T14:02:00Z.`,
      name,
    );
  return ms;
}

/** The `from`/`to` window. @throws InvalidArgumentError when `to` is not after `from` */
function windowParams(event: APIGatewayProxyEventV2): { fromMs?: number; toMs?: number } {
  const fromMs = timeParam(event, 'from');
  const toMs = timeParam(event, 'to');
  if (fromMs !== undefined && toMs !== undefined && toMs <= fromMs)
    throw new InvalidArgumentError('to must be later than from.', 'to');
  return { ...(fromMs !== undefined ? { fromMs } : {}), ...(toMs !== undefined ? { toMs } : {}) };
}

const pageBody = (page: HistoryPage) => ({
  items: page.items.map(holdingDto),
  ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
  ...(page.completeUntil ? { completeUntil: page.completeUntil } : {}),
});

/** Routes of the address history (shared/core/history): per address, per owner, per small block. */
export const historyRoutes = {
  'GET /v1/pools/{pool}/addresses/{address}/history': async ({ event, deps }) => {
    const pool = pathParam(event, 'pool');
    const address = pathParam(event, 'address');
    const atMs = timeParam(event, 'at');
    if (atMs !== undefined) {
      for (const other of ['from', 'to', 'cursor'] as const) {
        if (queryParam(event, other) !== undefined)
          throw new InvalidArgumentError(`at asks about one instant: it cannot be combined with ${other}.`, other);
      }
      const answer = await addressAt(deps, pool, address, atMs);
      return json(200, {
        at: new Date(atMs).toISOString(),
        holding: answer.holding ? holdingDto(answer.holding) : null,
        ...(answer.completeUntil ? { completeUntil: answer.completeUntil } : {}),
      });
    }
    const query = { ...windowParams(event), ...pageParams(event) };
    return json(200, pageBody(await addressHistory(deps, pool, address, query)));
  },
  'GET /v1/pools/{pool}/owners/{uid}/history': async ({ event, deps }) => {
    return json(
      200,
      pageBody(await ownerHistory(deps, pathParam(event, 'pool'), pathParam(event, 'uid'), pageParams(event))),
    );
  },
  'GET /v1/pools/{pool}/history': async ({ event, deps }) => {
    const cidr = queryParam(event, 'cidr');
    if (cidr === undefined)
      throw new InvalidArgumentError(
        'The history of a pool is read per block: pass cidr (at most 256 addresses).',
        'cidr',
      );
    const { limit } = pageParams(event);
    const query = { ...windowParams(event), ...(limit !== undefined ? { limit } : {}) };
    return json(200, pageBody(await cidrHistory(deps, pathParam(event, 'pool'), cidr, query)));
  },
} as const satisfies RouteMap;
