/** Time and paging helpers every layer of the core uses. */
import type { Clock } from '../ports.ts';

/** ISO time of the clock's now. */
export function nowIso(deps: { readonly clock: Clock }): string {
  return new Date(deps.clock.nowMs()).toISOString();
}

/** A page size: the one asked for (the HTTP layer checked it is 1-1000), or 100. */
export function pageLimit(value: number | undefined): number {
  return value ?? 100;
}
