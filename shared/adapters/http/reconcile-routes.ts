import type { Route } from './routes.ts';

/** Routes of the reconciler's surface (owner release, events). */
export const reconcileRoutes: Readonly<Record<string, Route>> = {};
