import type { Route } from './routes.ts';

/** Routes of the legacy bitmap view (GET .../ranges/{range}/allocation). */
export const legacyRoutes: Readonly<Record<string, Route>> = {};
