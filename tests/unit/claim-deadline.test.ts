import { describe, expect, it } from 'vitest';
import { testApi, type TestApi } from '../support/api.ts';
import { conflictOnceOn, hookedEngine } from '../support/engines.ts';
import { ManualClock, owner } from '../support/fakes.ts';

async function poolWith(api: TestApi, pool: string, cidr: string): Promise<void> {
  expect((await api.call('POST', '/v1/pools', { name: pool })).status).toBe(201);
  expect((await api.call('POST', `/v1/pools/${pool}/ranges`, { cidr })).status).toBe(201);
}

const DEADLINE = 'x-ipam-commit-deadline';

describe('Claims: a commit deadline (x-ipam-commit-deadline) the service never commits past', () => {
  it('refuses a claim whose deadline has passed with 408 DeadlineExceeded, and writes nothing', async () => {
    // Prepare
    const clock = new ManualClock();
    const api = await testApi(
      { clock },
      {},
      undefined,
      hookedEngine(() => undefined),
    );
    await poolWith(api, 'p', '10.0.0.0/24');
    // Act
    const late = await api.call(
      'POST',
      '/v1/pools/p/claims',
      { name: 'c1', owner: owner('u1') },
      { [DEADLINE]: new Date(clock.nowMs() - 1).toISOString() },
    );
    // Assess
    expect(late.status).toBe(408);
    expect(late.body.code).toBe('DeadlineExceeded');
    expect(String(late.body.detail)).toContain('deadline');
    expect((await api.call('GET', '/v1/pools/p/claims/c1')).status).toBe(404);
    expect((await api.call('GET', '/v1/pools/p/addresses')).body.items).toEqual([]);
  });

  it('commits a claim before its deadline, and answers its retry after the deadline with the claim it made', async () => {
    // Prepare
    const clock = new ManualClock();
    const api = await testApi(
      { clock },
      {},
      undefined,
      hookedEngine(() => undefined),
    );
    await poolWith(api, 'p', '10.0.0.0/24');
    const deadline = new Date(clock.nowMs() + 5000).toISOString();
    // Act
    const made = await api.call(
      'POST',
      '/v1/pools/p/claims',
      { name: 'c1', owner: owner('u1') },
      { [DEADLINE]: deadline },
    );
    clock.advance(10_000);
    const retried = await api.call(
      'POST',
      '/v1/pools/p/claims',
      { name: 'c1', owner: owner('u1') },
      { [DEADLINE]: deadline },
    );
    // Assess: nothing new is committed by the retry, so it may still answer what exists.
    expect(made.status).toBe(201);
    expect(retried.status).toBe(200);
    expect(retried.body.addresses).toEqual(made.body.addresses);
  });

  it('checks the deadline before the commit itself, not only when the request arrives', async () => {
    // Prepare: reading the pool's view takes 3 s of the clock, so the request arrives in time and its commit would not.
    const clock = new ManualClock();
    let slowReads = false;
    const api = await testApi(
      { clock },
      {},
      undefined,
      hookedEngine((call) => {
        if (slowReads && call.method !== 'transact') clock.advance(3000);
        return undefined;
      }),
    );
    await poolWith(api, 'p', '10.0.0.0/24');
    const deadline = new Date(clock.nowMs() + 2000).toISOString();
    slowReads = true;
    // Act
    const late = await api
      .sibling({ clock })
      .call('POST', '/v1/pools/p/claims', { name: 'c1', owner: owner('u1') }, { [DEADLINE]: deadline });
    // Assess
    slowReads = false;
    expect(late.status).toBe(408);
    expect((await api.call('GET', '/v1/pools/p/addresses')).body.items).toEqual([]);
  });

  it.each([['tomorrow'], ['2035-13-01T00:00:00Z'], ['1700000000000']])(
    'refuses a deadline that is not an RFC 3339 time (%s) with 400',
    async (value) => {
      const api = await testApi(
        {},
        {},
        undefined,
        hookedEngine(() => undefined),
      );
      await poolWith(api, 'p', '10.0.0.0/24');
      const response = await api.call(
        'POST',
        '/v1/pools/p/claims',
        { name: 'c1', owner: owner('u1') },
        { [DEADLINE]: value },
      );
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('InvalidArgument');
    },
  );
});

describe('Claims: a transaction conflict on an explicit address', () => {
  it('is tried again, not answered AlreadyAllocated, when the address is free', async () => {
    // Prepare: the first commit that writes the address meets another transaction in flight (TransactionConflict on
    // every item), as two requests racing for one free address can both be.
    const race = conflictOnceOn('10.0.0.10');
    const api = await testApi({}, {}, undefined, race.engine);
    await poolWith(api, 'p', '10.0.0.0/24');
    // Act
    const made = await api.call('POST', '/v1/pools/p/claims', {
      name: 'c1',
      owner: owner('u1'),
      addresses: ['10.0.0.10'],
    });
    // Assess
    expect(race.conflicts()).toBe(1);
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect((made.body.addresses as { address: string }[]).map((a) => a.address)).toEqual(['10.0.0.10']);
  });

  it('is still AlreadyAllocated when another claim holds the address', async () => {
    const api = await testApi(
      {},
      {},
      undefined,
      hookedEngine(() => undefined),
    );
    await poolWith(api, 'p', '10.0.0.0/24');
    expect(
      (await api.call('POST', '/v1/pools/p/claims', { name: 'c1', owner: owner('u1'), addresses: ['10.0.0.10'] }))
        .status,
    ).toBe(201);
    const second = await api.call('POST', '/v1/pools/p/claims', {
      name: 'c2',
      owner: owner('u2'),
      addresses: ['10.0.0.10'],
    });
    expect(second.status).toBe(409);
    expect(second.body.code).toBe('AlreadyAllocated');
  });
});
