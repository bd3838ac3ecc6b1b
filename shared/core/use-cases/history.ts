import { InvalidArgumentError } from '../errors.ts';
import { afterStart, effectiveEnds, heldAt, holdingAt, holdingId, type Holding } from '../history/holding.ts';
import type { HistoryCursors, HistoryMark, HistoryReader } from '../history/ports.ts';
import { formatAddress, parseAddress } from '../ip/address.ts';
import { leasePlaceOf } from '../base/pool-geometry.ts';
import { blockContaining, blockSize, capacity, formatCidr, hostAt, parseCidr, slotted, type Cidr } from '../ip/cidr.ts';
import { type Deps } from './deps.ts';
import { pageLimit } from '../base/time.ts';
import type { PageQuery } from '../ports.ts';

/** A history answer says how far the history is complete: it lags the leases by the stream's delay. */
export interface HistoryAnswer {
  /**
   * ISO time before which every lease change of the pool is recorded (the stream position the history reflects, to the
   * second; changes stamped at it or later may still come); absent before the first.
   */
  readonly completeUntil?: string;
}

export interface HistoryPage extends HistoryAnswer {
  readonly items: readonly Holding[];
  readonly nextCursor?: string;
}

export interface AtAnswer extends HistoryAnswer {
  /** Who held the address at the instant asked about; absent: nobody. */
  readonly holding?: Holding;
}

/** A time window of a history read (epoch ms, both optional). */
export interface Window {
  readonly fromMs?: number;
  readonly toMs?: number;
}

/** Largest CIDR the CIDR form reads: addresses, or in a block pool blocks (one query per position, like AWS's small-block history). */
export const MAX_CIDR_HISTORY_ADDRESSES = 256;

/** What the history answers use: the history's reader role and its cursors, the leases, the claims and the pool. */
type HistoryDeps = Pick<Deps, 'leases' | 'claims' | 'views' | 'clock'> & {
  readonly history: HistoryReader & HistoryCursors;
};

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The mark as an answer's completeUntil, held back to a change the stream function noted as not recorded yet: with
 * several stream shards, another shard's batches can mark the pool past a change that keeps failing on its own shard.
 */
function completeUntil(mark: HistoryMark | undefined): HistoryAnswer {
  if (mark?.through === undefined) return {};
  return {
    completeUntil: iso(mark.pendingSince !== undefined ? Math.min(mark.through, mark.pendingSince) : mark.through),
  };
}

const overlaps = (h: Holding, window: Window) =>
  (window.toMs === undefined || Date.parse(h.from) < window.toMs) &&
  (window.fromMs === undefined || h.to === undefined || Date.parse(h.to) > window.fromMs);

/**
 * One address's holdings, newest first, paged: the lease item (the holding that lasts, or one expired and not yet
 * deleted) joined to the ended holdings the stream function wrote. Each end is cut at the next holding's start (a
 * deletion's end is known to the second only), also across pages (the cursor carries the start). @throws NotFoundError
 */
export async function addressHistory(
  deps: HistoryDeps,
  pool: string,
  text: string,
  query: Window & PageQuery = {},
): Promise<HistoryPage> {
  const { limit, cursor, ...window } = query;
  const { since, address } = await addressIn(deps, pool, text);
  // The mark first: whatever it vouches for was written before it, so the reads after it see it.
  const mark = await deps.history.mark(pool, [address]);
  return addressPage(deps, { pool, address, mark }, { ...window, since }, { limit, cursor });
}

/** A history read's window within the pool's life: holdings from `since` (its createdAt) on. */
interface PoolWindow extends Window {
  readonly since: string;
}

/**
 * The pool's createdAt, after the check that it exists: an earlier pool of the same name (deleted, then made again)
 * left holdings that stay until their TTL; every listing reads only those that began since. @throws NotFoundError
 */
async function poolSince(deps: HistoryDeps, pool: string): Promise<string> {
  return (await deps.views.get(pool, deps.clock.nowMs())).pool.createdAt;
}

/**
 * The pool's createdAt (as poolSince) and the address whose holdings answer for `text`: the address, or in a block pool
 * the network address of the block containing it (each held block is one lease, its holdings kept under that address).
 * @throws NotFoundError
 */
async function addressIn(deps: HistoryDeps, pool: string, text: string): Promise<{ since: string; address: string }> {
  const view = await deps.views.get(pool, deps.clock.nowMs());
  return { since: view.pool.createdAt, address: leasePlaceOf(view.pool, parseAddress(text)).key };
}

/** One address of a pool, and the pool's history mark read before its holdings. */
interface MarkedAddress {
  readonly pool: string;
  readonly address: string;
  readonly mark: HistoryMark | undefined;
}

async function addressPage(
  deps: HistoryDeps,
  at: MarkedAddress,
  window: PoolWindow,
  page: PageQuery,
): Promise<HistoryPage> {
  const { pool, address, mark } = at;
  const { limit, cursor } = page;
  const size = pageLimit(limit);
  const scope = ['addressHistory', pool, address];
  const position = cursor === undefined ? undefined : deps.history.decode(scope, cursor);
  const lease = position ? undefined : await deps.leases.getLease(pool, address);
  const current = lease ? holdingAt(lease, deps.clock.nowMs()) : undefined;
  const before = position?.k ?? (window.toMs !== undefined ? afterStart(window.toMs - 1) : undefined);
  const items: Holding[] = [];
  let newer = position?.n;
  if (current && overlaps(current, window)) items.push(current);
  else if (current) newer = current.from;
  let next = before;
  let more = true;
  while (items.length <= size && more) {
    const page = await deps.history.addressHoldings(pool, address, size + 1 - items.length, {
      ...(next !== undefined ? { before: next } : {}),
      since: window.since,
    });
    for (const h of page.items) {
      if (current && holdingId(h) === holdingId(current)) continue;
      items.push(h);
    }
    more = page.next !== undefined;
    next = page.next;
  }
  const cut = effectiveEnds(items, newer);
  const inWindow: Holding[] = [];
  let ended = false;
  for (const h of cut) {
    if (!overlaps(h, window)) {
      // Holdings never overlap: once one ends before the window, every older one does too.
      if (window.fromMs !== undefined && h.to !== undefined && Date.parse(h.to) <= window.fromMs) {
        ended = true;
        break;
      }
      continue;
    }
    inWindow.push(h);
  }
  const pageItems = inWindow.slice(0, size);
  const last = pageItems[pageItems.length - 1];
  const hasMore = !ended && (inWindow.length > size || more);
  return {
    items: pageItems,
    ...(hasMore && last ? { nextCursor: deps.history.encode(scope, { k: holdingId(last), n: last.from }) } : {}),
    ...completeUntil(mark),
  };
}

/** Who held an address at an instant (or nobody). @throws NotFoundError */
export async function addressAt(deps: HistoryDeps, pool: string, text: string, atMs: number): Promise<AtAnswer> {
  const { since, address } = await addressIn(deps, pool, text);
  const mark = await deps.history.mark(pool, [address]);
  const [lease, older] = await Promise.all([
    deps.leases.getLease(pool, address),
    deps.history.addressHoldings(pool, address, 2, { before: afterStart(atMs), since }),
  ]);
  const current = lease ? holdingAt(lease, deps.clock.nowMs()) : undefined;
  // The newest holding that began at or before the instant, and the one after it (which cuts its end).
  const candidates = [
    ...(current ? [current] : []),
    ...older.items.filter((h) => !current || holdingId(h) !== holdingId(current)),
  ];
  const startedBy = candidates.filter((h) => Date.parse(h.from) <= atMs);
  const holder = startedBy[0];
  if (!holder) return completeUntil(mark);
  const successor =
    current && Date.parse(current.from) > atMs
      ? current
      : await deps.history.addressHoldingAfter(pool, address, holdingId(holder));
  const [cut] = effectiveEnds([holder], successor?.from);
  return { ...(cut && heldAt(cut, atMs) ? { holding: cut } : {}), ...completeUntil(mark) };
}

/**
 * What an owner held, newest first: its claims' current leases (first page), then its ended holdings from the owner
 * index (eventually consistent). Ends here are not cut by other holdings (each address's own listing does that).
 */
export async function ownerHistory(
  deps: HistoryDeps,
  pool: string,
  ownerUid: string,
  query: PageQuery = {},
): Promise<HistoryPage> {
  const { limit, cursor } = query;
  const since = await poolSince(deps, pool);
  const size = pageLimit(limit);
  const scope = ['ownerHistory', pool, ownerUid];
  const position = cursor === undefined ? undefined : deps.history.decode(scope, cursor);
  const nowMs = deps.clock.nowMs();
  const open: Holding[] = [];
  if (!position) {
    const claims = await deps.claims.listClaims(pool, 1000, undefined, { ownerUid });
    for (const claim of claims.items) {
      for (const a of claim.addresses) {
        const lease = await deps.leases.getLease(pool, a.address);
        if (lease && lease.claimUid === claim.uid) open.push(holdingAt(lease, nowMs));
      }
    }
  }
  // The index is eventually consistent, so this listing may lag completeUntil by the index's delay whatever the order;
  // the mark is read after the page to see the chunks of the addresses the owner held.
  const page = await deps.history.ownerHoldings(pool, ownerUid, size + 1, {
    ...(position ? { before: position.k } : {}),
    since,
  });
  const mark = await deps.history.mark(
    pool,
    [...open, ...page.items].map((h) => h.address),
  );
  const seen = new Set(open.map((h) => `${h.address}/${holdingId(h)}`));
  const all = [...open, ...page.items.filter((h) => !seen.has(`${h.address}/${holdingId(h)}`))].sort((a, b) =>
    a.from < b.from ? 1 : a.from > b.from ? -1 : 0,
  );
  const items = all.slice(0, size);
  const lastEnded = [...items].reverse().find((h) => h.to !== undefined && page.items.includes(h));
  const hasMore = all.length > size || page.next !== undefined;
  return {
    items,
    ...(hasMore && lastEnded
      ? { nextCursor: deps.history.encode(scope, { k: `${lastEnded.from}#${lastEnded.address}` }) }
      : {}),
    ...completeUntil(mark),
  };
}

/**
 * What a CIDR's history reads: each of its addresses, or in a block pool (a block size for the CIDR's family) the
 * network address of each block it overlaps (a CIDR inside one block reads that block), counted as slots.
 */
function historySpan(cidr: Cidr, block: number | undefined): Cidr {
  if (block === undefined) return cidr;
  return slotted(cidr.prefix > block ? blockContaining({ family: cidr.family, value: cidr.base }, block) : cidr, block);
}

/**
 * The holdings of every address of a small block in a window, newest first (at most `limit`); in a block pool, of every
 * block the CIDR overlaps, so the limit counts blocks there. @throws InvalidArgumentError
 */
export async function cidrHistory(
  deps: HistoryDeps,
  pool: string,
  cidrText: string,
  query: Window & Pick<PageQuery, 'limit'> = {},
): Promise<HistoryPage> {
  const { limit, ...window } = query;
  const cidr = parseCidr(cidrText, 'cidr');
  const view = await deps.views.get(pool, deps.clock.nowMs());
  const span = historySpan(cidr, view.pool.blockPrefixLength?.[cidr.family]);
  const size = span.slot === undefined ? blockSize(span) : capacity(span);
  if (size > BigInt(MAX_CIDR_HISTORY_ADDRESSES)) {
    throw new InvalidArgumentError(
      span.slot === undefined
        ? `cidr ${formatCidr(cidr)} holds ${size} addresses; the history of a block reads at most ${MAX_CIDR_HISTORY_ADDRESSES} (an IPv4 /24, an IPv6 /120).`
        : `cidr ${formatCidr(cidr)} holds ${size} blocks of /${span.slot}; the history of a block pool's CIDR reads at most ${MAX_CIDR_HISTORY_ADDRESSES} blocks.`,
      'cidr',
    );
  }
  const max = pageLimit(limit);
  const since = view.pool.createdAt;
  const addresses = Array.from({ length: Number(size) }, (_, i) =>
    formatAddress({
      family: cidr.family,
      value: span.slot === undefined ? span.base + BigInt(i) : hostAt(span, BigInt(i)),
    }),
  );
  // One mark for the CIDR (read first, as for one address): any summary chunk's mark is true for the whole pool.
  const mark = await deps.history.mark(pool, addresses.slice(0, 1));
  const pages: HistoryPage[] = [];
  // A few addresses at a time: a /24 is 256 reads of one partition each.
  for (let i = 0; i < addresses.length; i += 16) {
    pages.push(
      ...(await Promise.all(
        addresses
          .slice(i, i + 16)
          .map((a) => addressPage(deps, { pool, address: a, mark }, { ...window, since }, { limit: max })),
      )),
    );
  }
  const items = pages.flatMap((p) => p.items).sort((a, b) => (a.from < b.from ? 1 : a.from > b.from ? -1 : 0));
  return { items: items.slice(0, max), ...completeUntil(mark) };
}
