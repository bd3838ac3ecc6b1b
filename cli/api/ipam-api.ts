import { encodePath, type HttpClient } from './http-client.ts';
import type {
  Claim,
  RenewalResults,
  ClaimSpec,
  Consumer,
  ConsumerRemoval,
  Holding,
  HoldingAt,
  HoldingPage,
  Lease,
  OwnerRelease,
  Page,
  Pool,
  PoolDetails,
  PoolSpec,
  Range,
  RangeSpec,
  RepairEvent,
  RangeOccupancy,
} from './types.ts';

/** The largest page the API serves (openapi.yaml: limit 1-1000). */
export const MAX_PAGE = 1000;

/** How a list is read: every page (the default), or one page of `limit` items from `cursor`. */
export interface ListOptions {
  readonly limit?: number;
  readonly cursor?: string;
}

export type PageReader<T> = (limit: number, cursor: string | undefined) => Promise<Page<T>>;

/**
 * Reads a list: one page when `limit` is given (its nextCursor is kept, so `-o json` shows where to go on), else
 * every page at the largest size, following nextCursor until there is none.
 */
export async function readList<T>(read: PageReader<T>, options: ListOptions = {}): Promise<Page<T>> {
  if (options.limit !== undefined) return read(options.limit, options.cursor);
  const items: T[] = [];
  const seen = new Set<string>();
  let cursor = options.cursor;
  for (;;) {
    const page = await read(MAX_PAGE, cursor);
    items.push(...page.items);
    if (!page.nextCursor) return { items };
    // A server that hands back the same cursor twice would loop forever: stop and say so.
    if (seen.has(page.nextCursor))
      throw new Error(`the server returned the same nextCursor twice (${page.nextCursor})`);
    seen.add(page.nextCursor);
    cursor = page.nextCursor;
  }
}

/** Each route of openapi.yaml as one typed call. Responses are the server's documents, not re-validated here. */
export class IpamApi {
  constructor(readonly http: HttpClient) {}

  private async get<T>(path: string, query?: Record<string, string | number | undefined>): Promise<T> {
    return (await this.http.request('GET', path, query ? { query } : {})).body as T;
  }

  private page<T>(path: string, extra: Record<string, string | undefined> = {}): PageReader<T> {
    return (limit, cursor) => this.get<Page<T>>(path, { ...extra, limit, cursor });
  }

  /** GET /v1/health: whether the service and its table answer. */
  health(): Promise<{ status: string }> {
    return this.get('/v1/health');
  }

  listPools(options?: ListOptions): Promise<Page<Pool>> {
    return readList(this.page<Pool>('/v1/pools'), options);
  }

  getPool(pool: string): Promise<PoolDetails> {
    return this.get(`/v1/pools/${encodePath(pool)}`);
  }

  async createPool(spec: PoolSpec): Promise<{ created: boolean; pool: Pool }> {
    const { name, exclude = [], reuseDelaySeconds, blockPrefixLength, grow, openToChildPools, dns } = spec;
    const body = {
      name,
      ...(exclude.length ? { exclude } : {}),
      ...(reuseDelaySeconds !== undefined ? { reuseDelaySeconds } : {}),
      ...(blockPrefixLength ? { blockPrefixLength } : {}),
      ...(grow ? { grow } : {}),
      ...(openToChildPools ? { openToChildPools } : {}),
      ...(dns ? { dns } : {}),
    };
    const res = await this.http.request('POST', '/v1/pools', { body });
    return { created: res.status === 201, pool: res.body as Pool };
  }

  async deletePool(pool: string): Promise<'gone' | 'terminating'> {
    const res = await this.http.request('DELETE', `/v1/pools/${encodePath(pool)}`);
    return res.status === 202 ? 'terminating' : 'gone';
  }

  async listRanges(pool: string): Promise<Page<Range>> {
    return this.get(`/v1/pools/${encodePath(pool)}/ranges`);
  }

  getRange(pool: string, range: string): Promise<Range> {
    return this.get(`/v1/pools/${encodePath(pool)}/ranges/${encodePath(range)}`);
  }

  getOccupancy(pool: string, range: string): Promise<RangeOccupancy> {
    return this.get(`/v1/pools/${encodePath(pool)}/ranges/${encodePath(range)}/occupancy`);
  }

  async createRange(pool: string, spec: RangeSpec): Promise<{ created: boolean; range: Range }> {
    const res = await this.http.request('POST', `/v1/pools/${encodePath(pool)}/ranges`, { body: spec });
    return { created: res.status === 201, range: res.body as Range };
  }

  /** `gone`: deleted at once (204); `terminating`: leases still depend on it (202). */
  async deleteRange(pool: string, range: string): Promise<'gone' | 'terminating'> {
    const res = await this.http.request('DELETE', `/v1/pools/${encodePath(pool)}/ranges/${encodePath(range)}`);
    return res.status === 202 ? 'terminating' : 'gone';
  }

  /** `commitBy`: the service commits nothing at or after it (x-ipam-commit-deadline; 408 DeadlineExceeded). */
  async createClaim(
    pool: string,
    spec: ClaimSpec,
    options: { commitBy?: Date } = {},
  ): Promise<{ created: boolean; claim: Claim }> {
    const headers = options.commitBy ? { 'x-ipam-commit-deadline': options.commitBy.toISOString() } : undefined;
    const res = await this.http.request('POST', `/v1/pools/${encodePath(pool)}/claims`, {
      body: spec,
      ...(headers ? { headers } : {}),
    });
    return { created: res.status === 201, claim: res.body as Claim };
  }

  /** `labelSelector`: `k=v,k2=v2`, only claims whose labels hold every pair (pages may be short: all are followed). */
  listClaims(pool: string, options?: ListOptions & { owner?: string; labelSelector?: string }): Promise<Page<Claim>> {
    return readList(
      this.page<Claim>(`/v1/pools/${encodePath(pool)}/claims`, {
        owner: options?.owner,
        labelSelector: options?.labelSelector,
      }),
      options,
    );
  }

  getClaim(pool: string, claim: string): Promise<Claim> {
    return this.get(`/v1/pools/${encodePath(pool)}/claims/${encodePath(claim)}`);
  }

  /** `ttlSeconds`: a new lease time; absent, the claim's own; null, no expiry any more (a confirmed hold). */
  renewClaim(pool: string, claim: string, ttlSeconds?: number | null): Promise<Claim> {
    return this.http
      .request('POST', `/v1/pools/${encodePath(pool)}/claims/${encodePath(claim)}/renew`, {
        body: ttlSeconds === undefined ? {} : { ttlSeconds },
      })
      .then((res) => res.body as Claim);
  }

  /** Renews up to 100 claims of a pool in one request; a result per name, in the order given. */
  renewClaims(pool: string, claims: readonly string[], ttlSeconds?: number): Promise<RenewalResults> {
    return this.http
      .request('POST', `/v1/pools/${encodePath(pool)}/renewals`, {
        body: { claims: [...claims], ...(ttlSeconds !== undefined ? { ttlSeconds } : {}) },
      })
      .then((res) => res.body as RenewalResults);
  }

  /** Releases a claim; with `ifVersion`, only while the claim is at that version (412 PreconditionFailed otherwise). */
  async releaseClaim(pool: string, claim: string, ifVersion?: number): Promise<void> {
    await this.http.request(
      'DELETE',
      `/v1/pools/${encodePath(pool)}/claims/${encodePath(claim)}`,
      ifVersion === undefined ? {} : { headers: { 'if-match': `"${ifVersion}"` } },
    );
  }

  async releaseOwner(pool: string, uid: string): Promise<Pick<OwnerRelease, 'released'>> {
    const res = await this.http.request('DELETE', `/v1/pools/${encodePath(pool)}/owners/${encodePath(uid)}`);
    const body = res.body as Partial<OwnerRelease> | undefined;
    return { released: body?.released ?? [] };
  }

  /** Adds a consumer to a claim; `added` false when the uid was already one (the claim as it is). */
  async addConsumer(pool: string, claim: string, consumer: Consumer): Promise<{ added: boolean; claim: Claim }> {
    const res = await this.http.request('POST', `/v1/pools/${encodePath(pool)}/claims/${encodePath(claim)}/consumers`, {
      body: consumer,
    });
    return { added: res.status === 201, claim: res.body as Claim };
  }

  /** Removes a consumer; the last one's removal releases the claim (`released`). */
  async removeConsumer(pool: string, claim: string, uid: string): Promise<ConsumerRemoval> {
    const res = await this.http.request(
      'DELETE',
      `/v1/pools/${encodePath(pool)}/claims/${encodePath(claim)}/consumers/${encodePath(uid)}`,
    );
    return res.body as ConsumerRemoval;
  }

  listAddresses(pool: string, options?: ListOptions & { range?: string }): Promise<Page<Lease>> {
    return readList(this.page<Lease>(`/v1/pools/${encodePath(pool)}/addresses`, { range: options?.range }), options);
  }

  getAddress(pool: string, address: string): Promise<Lease> {
    return this.get(`/v1/pools/${encodePath(pool)}/addresses/${encodePath(address)}`);
  }

  listEvents(pool: string, options?: ListOptions): Promise<Page<RepairEvent>> {
    return readList(this.page<RepairEvent>(`/v1/pools/${encodePath(pool)}/events`), options);
  }

  /** An address's holdings, newest first, in a window (`from`/`to` RFC 3339); every page unless `limit` is given. */
  async addressHistory(
    pool: string,
    address: string,
    options: ListOptions & { from?: string; to?: string } = {},
  ): Promise<HoldingPage> {
    let completeUntil: string | undefined;
    const read: PageReader<Holding> = async (limit, cursor) => {
      const page = await this.get<HoldingPage>(
        `/v1/pools/${encodePath(pool)}/addresses/${encodePath(address)}/history`,
        { from: options.from, to: options.to, limit, cursor },
      );
      completeUntil ??= page.completeUntil;
      return page;
    };
    const page = await readList(read, options);
    return { ...page, ...(completeUntil ? { completeUntil } : {}) };
  }

  /** Who held an address at an instant. */
  addressAt(pool: string, address: string, at: string): Promise<HoldingAt> {
    return this.get(`/v1/pools/${encodePath(pool)}/addresses/${encodePath(address)}/history`, { at });
  }

  /** What an owner uid held, newest first; every page unless `limit` is given. */
  async ownerHistory(pool: string, uid: string, options: ListOptions = {}): Promise<HoldingPage> {
    let completeUntil: string | undefined;
    const read: PageReader<Holding> = async (limit, cursor) => {
      const page = await this.get<HoldingPage>(`/v1/pools/${encodePath(pool)}/owners/${encodePath(uid)}/history`, {
        limit,
        cursor,
      });
      completeUntil ??= page.completeUntil;
      return page;
    };
    const page = await readList(read, options);
    return { ...page, ...(completeUntil ? { completeUntil } : {}) };
  }
}
