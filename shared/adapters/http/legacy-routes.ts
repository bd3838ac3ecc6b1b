import { toCbor, toJson } from '../../core/bitmap/range-allocation.ts';
import { getRangeAllocation } from '../../core/use-cases/allocations.ts';
import { etagOf } from './etag.ts';
import { header, pathParam } from './request.ts';
import { json, type RouteMap } from './routes.ts';

export const MediaType = { Json: 'application/json', Cbor: 'application/cbor' } as const;
export type MediaType = (typeof MediaType)[keyof typeof MediaType];

/**
 * Picks the representation for an Accept header (RFC 9110 §12.5.1): the offered type with the highest q, exact
 * types over `application/*` over `* /*`; JSON on a tie, on no Accept, and for anything we cannot serve (406 is not
 * among our error codes, and JSON is what every client of this route understands).
 */
export function negotiate(accept: string | undefined): MediaType {
  if (!accept) return MediaType.Json;
  const ranges = accept.split(',').map((part) => {
    const [type = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    const q = params.find((p) => p.startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    return { type, q: Number.isFinite(weight) ? weight : 0 };
  });
  const quality = (offered: MediaType): number => {
    const match =
      ranges.find((r) => r.type === offered) ??
      ranges.find((r) => r.type === 'application/*') ??
      ranges.find((r) => r.type === '*/*');
    return match?.q ?? 0;
  };
  return quality(MediaType.Cbor) > quality(MediaType.Json) ? MediaType.Cbor : MediaType.Json;
}

/** Routes of the legacy bitmap view. */
export const legacyRoutes = {
  'GET /v1/pools/{pool}/ranges/{range}/allocation': async ({ event, deps }) => {
    const doc = await getRangeAllocation(deps, pathParam(event, 'pool'), pathParam(event, 'range'));
    const headers = { vary: 'accept', etag: etagOf(doc.version) };
    if (negotiate(header(event, 'accept')) === MediaType.Json) return json(200, toJson(doc), headers);
    // API Gateway (payload v2) carries binary bodies as base64 with isBase64Encoded.
    const body = Buffer.from(toCbor(doc)).toString('base64');
    return { statusCode: 200, headers: { 'content-type': MediaType.Cbor, ...headers }, body, isBase64Encoded: true };
  },
} as const satisfies RouteMap;
