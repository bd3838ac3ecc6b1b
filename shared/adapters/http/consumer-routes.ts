import { addConsumer, removeConsumer } from '../../core/use-cases/consumers.ts';
import { claimDto } from './dto.ts';
import { etagOf } from './etag.ts';
import { pathParam } from './request.ts';
import { bodyOf, json, type RouteMap } from './routes.ts';

/** A claim's consumers: add one, remove one (the last one's removal releases the claim). */
export const consumerRoutes = {
  'POST /v1/pools/{pool}/claims/{claim}/consumers': async ({ event, deps, caller, audit }) => {
    const body = bodyOf(event, 'POST /v1/pools/{pool}/claims/{claim}/consumers');
    const { claim, added } = await addConsumer(deps, {
      pool: pathParam(event, 'pool'),
      claim: pathParam(event, 'claim'),
      consumer: { kind: body.kind, name: body.name, uid: body.uid },
      ...(caller ? { caller } : {}),
    });
    audit?.({ claim: claim.name, consumer: body.uid, added });
    return json(added ? 201 : 200, claimDto(claim), { etag: etagOf(claim.version) });
  },
  'DELETE /v1/pools/{pool}/claims/{claim}/consumers/{uid}': async ({ event, deps, caller, audit }) => {
    const uid = pathParam(event, 'uid');
    const outcome = await removeConsumer(deps, {
      pool: pathParam(event, 'pool'),
      claim: pathParam(event, 'claim'),
      uid,
      ...(caller ? { caller } : {}),
    });
    audit?.({ claim: pathParam(event, 'claim'), consumer: uid, removed: outcome.removed, released: outcome.released });
    return json(200, {
      uid,
      removed: outcome.removed,
      released: outcome.released,
      ...(outcome.claim ? { claim: claimDto(outcome.claim) } : {}),
    });
  },
} as const satisfies RouteMap;
