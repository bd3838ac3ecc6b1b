/**
 * The two comparison designs that are not this project's code, written once against the Table port so the bench (on
 * DynamoDB Local, through SdkTable) and the simulator (sim/compare.ts, through SimTable) run the same requests:
 *
 *   global lock      whereabouts: a lock item taken "if absent or expired", a read-modify-write of the pool's one
 *                    allocation map (a bit per address, as compact as it gets), the lock deleted "if still ours"
 *   parent document  go-ipam's AcquireChildPrefix / ReleaseChildPrefix: the parent prefix is one document read
 *                    consistently and rewritten under its version; a claim also writes the child's document, a
 *                    release deletes it. The parent keeps every child it ever handed out in
 *                    `availableChildPrefixes` (taken false, released true: go-ipam never removes an entry), stored
 *                    as go-ipam's JSON form, so the item's size and its units grow with the children as go-ipam's do.
 *
 * Time, randomness and waiting come in as ports (the simulator's are virtual). Comparison-only code, here because
 * sim/ imports nothing from bench/.
 */
import type { Table } from '../../shared/adapters/dynamodb/table.ts';
import { attributeIs, either, hasExpired, itemIsAbsent, versionIs } from '../../shared/adapters/dynamodb/conditions.ts';
import { Bitmap } from '../../shared/core/bitmap/bitmap.ts';
import { NotReadyError } from '../../shared/core/errors.ts';
import { familyBits, formatAddress } from '../../shared/core/ip/address.ts';
import { hostAt, lastAddress, parseCidr, type Cidr } from '../../shared/core/ip/cidr.ts';

/** What a design needs besides its table. */
export interface DesignPorts {
  readonly nowMs: () => number;
  /** A uniform draw in [0, 1). */
  readonly unit: () => number;
  readonly sleep: (ms: number) => Promise<void>;
}

export type DesignOutcome<T> = { readonly kind: 'ok'; readonly value: T } | { readonly kind: 'full' | 'busy' };

/** How long a taken lock stays valid if its holder dies (whereabouts' leader-election LeaseDuration). */
export const LOCK_LEASE_MS = 1500;
/** client-go's JitterUntil factor: a retry waits between `period` and `period * 2.2`. */
const JITTER = 1.2;

export const lockKey = (pool: string) => ({ PK: `BENCHLOCK#${pool}`, SK: 'LOCK' });
export const mapKey = (pool: string) => ({ PK: `BENCHMAP#${pool}`, SK: 'MAP' });

/** The allocation map item of the global-lock design. */
export function mapItem(pool: string, bits: Bitmap, version: number): Record<string, unknown> {
  const data = bits.encode();
  return { ...mapKey(pool), entity: 'bench-map', version, ...(data.length ? { data } : {}) };
}

/**
 * One caller of the global-lock design. `allocate` takes the lock (polling every `retryPeriodMs`, jittered, until
 * `stopped()`), reads the map, sets the first clear bit, writes the map if its version is unchanged, unlocks;
 * `release` clears a bit the same way.
 */
export function globalLockCaller(options: {
  readonly table: Table;
  readonly pool: string;
  readonly size: number;
  readonly me: string;
  readonly retryPeriodMs: number;
  readonly ports: DesignPorts;
  readonly stopped?: () => boolean;
}) {
  const { table, pool, size, me, retryPeriodMs, ports } = options;
  const takeLock = async (): Promise<boolean> => {
    const now = ports.nowMs();
    try {
      const out = await table.write({
        kind: 'put',
        item: { ...lockKey(pool), entity: 'bench-lock', owner: me, expiresAt: now + LOCK_LEASE_MS },
        condition: either(itemIsAbsent(), hasExpired(now)),
      });
      return out.ok;
    } catch (error) {
      if (error instanceof NotReadyError) return false;
      throw error;
    }
  };
  const releaseLock = async (): Promise<void> => {
    for (let attempt = 0; attempt < 5; attempt += 1) {
      try {
        await table.write({ kind: 'delete', key: lockKey(pool), condition: attributeIs('owner', me) });
        return;
      } catch (error) {
        if (!(error instanceof NotReadyError)) throw error;
        await ports.sleep(retryPeriodMs);
      }
    }
    // Left to expire after LOCK_LEASE_MS, as a crashed holder's lock would.
  };
  const underLock = async (change: (bits: Bitmap) => number | undefined): Promise<DesignOutcome<number>> => {
    while (!(await takeLock())) {
      if (options.stopped?.()) return { kind: 'busy' };
      await ports.sleep(retryPeriodMs * (1 + JITTER * ports.unit()));
    }
    try {
      const item = await table.get(mapKey(pool));
      const version = (item?.version as number | undefined) ?? 0;
      const bits = Bitmap.decode((item?.data as Uint8Array | undefined) ?? new Uint8Array(), size);
      const bit = change(bits);
      if (bit === undefined) return { kind: 'full' };
      // The lock's lease may have run out while this caller held it: the map's version catches a second writer, as
      // whereabouts relies on the IPPool's resourceVersion.
      const written = await table.write({
        kind: 'put',
        item: mapItem(pool, bits, version + 1),
        condition: versionIs(version),
      });
      return written.ok ? { kind: 'ok', value: bit } : { kind: 'busy' };
    } catch (error) {
      if (error instanceof NotReadyError) return { kind: 'busy' };
      throw error;
    } finally {
      await releaseLock();
    }
  };
  return {
    /** Whereabouts takes the first free address from the start of the range. */
    allocate: () =>
      underLock((bits) => {
        const free = bits.firstClear(0);
        if (free !== undefined) bits.set(free);
        return free;
      }),
    release: (bit: number) =>
      underLock((bits) => {
        bits.clear(bit);
        return bit;
      }),
  };
}

/** The address of a bit of the global-lock map. */
export function addressOfBit(cidr: Cidr, bit: number): string {
  return formatAddress({ family: cidr.family, value: hostAt(cidr, BigInt(bit)) });
}

export const parentKey = (pool: string) => ({ PK: `PARENT#${pool}`, SK: 'doc' });
const childKey = (pool: string, cidr: string) => ({ PK: `PREFIX#${pool}#${cidr}`, SK: 'doc' });

/** The children of a parent: every child CIDR ever handed out, true when available again (go-ipam's map). */
export type Children = Map<string, boolean>;

/**
 * go-ipam's prefixJSON of a parent (json.go: Cidr, ParentCidr, AvailableChildPrefixes, ChildPrefixLength, IsParent,
 * IPs, Version), as its key-value backends store it: one string. The parent's own IPs hold its network and broadcast
 * addresses (newPrefix blocks both).
 */
export function parentDocument(parent: string, blockPrefix: number, children: Children, version: number): string {
  const c = parseCidr(parent);
  const last = formatAddress({ family: c.family, value: lastAddress(c) });
  return JSON.stringify({
    Cidr: parent,
    ParentCidr: '',
    AvailableChildPrefixes: Object.fromEntries(children),
    ChildPrefixLength: blockPrefix,
    IsParent: children.size > 0,
    IPs: { [formatAddress({ family: c.family, value: c.base })]: true, [last]: true },
    Version: version,
  });
}

const blockLists = new Map<string, readonly string[]>();

/**
 * The child CIDRs of `parent` at `blockPrefix`, in order; computed once per parent and prefix (a /12 has 16,384, and
 * the simulator builds a caller per container), so callers must not modify the list.
 */
export function blocksOf(parent: string, blockPrefix: number): readonly string[] {
  const id = `${parent}|${blockPrefix}`;
  let list = blockLists.get(id);
  if (!list) blockLists.set(id, (list = listBlocks(parent, blockPrefix)));
  return list;
}

function listBlocks(parent: string, blockPrefix: number): string[] {
  const c = parseCidr(parent);
  const bits = familyBits(c.family) - blockPrefix;
  const count = 2 ** (blockPrefix - c.prefix);
  return Array.from(
    { length: count },
    (_, i) => `${formatAddress({ family: c.family, value: c.base + (BigInt(i) << BigInt(bits)) })}/${blockPrefix}`,
  );
}

/** The parent item as stored: its key, its version and the document. */
export function parentItem(options: {
  readonly pool: string;
  readonly parent: string;
  readonly blockPrefix: number;
  readonly children: Children;
  readonly version: number;
}): Record<string, unknown> {
  const { pool, parent, blockPrefix, children, version } = options;
  return {
    ...parentKey(pool),
    entity: 'bench-parent',
    version,
    doc: parentDocument(parent, blockPrefix, children, version),
  };
}

/**
 * One caller of the parent-document design. `claim` reads the parent consistently, picks a free block at random,
 * writes the parent under its version and then the child's document; a lost race (or a throttled request) reads
 * again at once, up to `attempts` times. `release` marks the child available in the parent the same way and deletes
 * the child's document (go-ipam deletes the child first).
 */
export function parentDocumentCaller(options: {
  readonly table: Table;
  readonly pool: string;
  readonly parent: string;
  readonly blockPrefix: number;
  readonly ports: DesignPorts;
  readonly attempts?: number;
}) {
  const { table, pool, parent, blockPrefix, ports } = options;
  const all = blocksOf(parent, blockPrefix);
  const attempts = options.attempts ?? 200;
  const read = async (): Promise<{ children: Children; version: number }> => {
    const item = await table.get(parentKey(pool));
    const doc = JSON.parse(item!.doc as string) as { AvailableChildPrefixes: Record<string, boolean> };
    return { children: new Map(Object.entries(doc.AvailableChildPrefixes)), version: item!.version as number };
  };
  const rewrite = async (children: Children, version: number): Promise<boolean> =>
    (
      await table.write({
        kind: 'put',
        item: parentItem({ pool, parent, blockPrefix, children, version: version + 1 }),
        condition: versionIs(version),
      })
    ).ok;
  const retried = async <T>(round: () => Promise<DesignOutcome<T> | undefined>): Promise<DesignOutcome<T>> => {
    for (let attempt = 0; attempt < attempts; attempt += 1) {
      try {
        const out = await round();
        if (out) return out;
      } catch (error) {
        // Throttled or in conflict: read again at once. No back-off, which favours this design.
        if (!(error instanceof NotReadyError)) throw error;
      }
    }
    return { kind: 'busy' };
  };
  return {
    claim: (): Promise<DesignOutcome<string>> =>
      retried<string>(async () => {
        const { children, version } = await read();
        const free = all.filter((b) => children.get(b) !== false);
        if (free.length === 0) return { kind: 'full' };
        const block = free[Math.floor(ports.unit() * free.length)]!;
        children.set(block, false);
        if (!(await rewrite(children, version))) return undefined;
        await table.write({
          kind: 'put',
          item: {
            ...childKey(pool, block),
            entity: 'bench-prefix',
            doc: JSON.stringify({ Cidr: block, ParentCidr: parent, IPs: {}, Version: 0 }),
          },
        });
        return { kind: 'ok', value: block };
      }),
    release: (block: string): Promise<DesignOutcome<string>> =>
      retried<string>(async () => {
        const { children, version } = await read();
        children.set(block, true);
        await table.write({ kind: 'delete', key: childKey(pool, block) });
        if (!(await rewrite(children, version))) return undefined;
        return { kind: 'ok', value: block };
      }),
  };
}
