import { listEvents } from '../../core/reconciler/events.ts';
import { EventReason } from '../../core/use-cases/reconcile-ports.ts';
import { releaseOwner } from '../../core/reconciler/owners.ts';
import { pageParams, pathParam } from './request.ts';
import { principalDto } from './dto.ts';
import { json, type RouteMap } from './routes.ts';

/** Routes of the reconciler's surface: the "owner is gone" signal, and the repair events of the last 24 hours. */
export const reconcileRoutes = {
  'DELETE /v1/pools/{pool}/owners/{uid}': async ({ event, deps, caller, audit }) => {
    const uid = pathParam(event, 'uid');
    const { released, left } = await releaseOwner(deps, pathParam(event, 'pool'), uid, caller);
    audit?.({ released, ...(left.length ? { left } : {}) });
    return json(200, {
      owner: { uid },
      released,
      ...(left.length ? { left } : {}),
      ...(caller ? { releasedBy: principalDto(caller) } : {}),
    });
  },
  'GET /v1/pools/{pool}/events': async ({ event, deps }) => {
    const { limit, cursor } = pageParams(event);
    const page = await listEvents(deps, pathParam(event, 'pool'), limit, cursor);
    return json(200, {
      items: page.items.map((e) => ({
        time: e.time,
        reason: e.reason,
        object: e.object,
        message: e.message,
        ...(e.labels ? { labels: e.labels } : {}),
        by:
          e.principal ??
          (e.anonymous ? 'anonymous' : undefined) ??
          (e.reason === EventReason.PoolFreeBelowThreshold ||
          e.reason === EventReason.PoolFreeRecovered ||
          e.reason === EventReason.DnsNameTaken
            ? 'stream'
            : 'reconciler'),
      })),
      ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
    });
  },
} as const satisfies RouteMap;
