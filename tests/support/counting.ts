import type { Stores } from '../../shared/adapters/dynamodb/stores.ts';

/** Wraps a container's stores to count calls per method name (what a request read and wrote, in store operations). */
export function countingStores(counts: Map<string, number>): (stores: Stores) => Stores {
  const counting = <T extends object>(store: T): T =>
    new Proxy(store, {
      get(target, prop, receiver) {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          counts.set(String(prop), (counts.get(String(prop)) ?? 0) + 1);
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  return (stores) => ({
    ...stores,
    pools: counting(stores.pools),
    claims: counting(stores.claims),
    leases: counting(stores.leases),
    occupancy: counting(stores.occupancy),
    seals: counting(stores.seals),
  });
}
