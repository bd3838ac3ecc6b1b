import { describe, expect, it } from 'vitest';
import { NotFoundError } from '../../shared/core/errors.ts';
import { IpFamily } from '../../shared/core/ip/address.ts';
import { RangeState, type PoolView } from '../../shared/core/model.ts';
import { PoolViewCache } from '../../shared/core/pool-view-cache.ts';
import { buildContainer } from '../../shared/adapters/composition.ts';
import { MemoryTable } from '../../shared/adapters/memory/memory-table.ts';
import { loadConfig } from '../../shared/config.ts';
import { createPool, deletePool } from '../../shared/core/use-cases/pools.ts';
import { createRange, deleteRange } from '../../shared/core/use-cases/ranges.ts';
import { ManualClock } from '../support/fakes.ts';
import { SeededRandom } from './fakes.ts';

/** A pool store whose view and generation the test sets, counting the reads of each. */
function storeOf(initial: PoolView | undefined) {
  const state = { view: initial, generation: initial?.generation, viewReads: 0, generationReads: 0 };
  return {
    state,
    getPoolView: (): Promise<PoolView | undefined> => {
      state.viewReads += 1;
      return Promise.resolve(
        state.view && (state.generation === undefined ? state.view : { ...state.view, generation: state.generation }),
      );
    },
    rangeGeneration: (): Promise<string | undefined> => {
      state.generationReads += 1;
      return Promise.resolve(state.generation);
    },
  };
}

const viewOf = (generation?: string): PoolView => ({
  pool: { name: 'p', exclude: [], createdAt: '2035-01-01T00:00:00.000Z' },
  ranges: [],
  ...(generation ? { generation } : {}),
});

describe('Class: PoolViewCache', () => {
  it('serves a copy younger than its age without reading anything', async () => {
    // Prepare
    const store = storeOf(viewOf('g1'));
    const cache = new PoolViewCache(store, 1_000);
    await cache.get('p', 0);
    // Act
    const { readNow } = await cache.read('p', 999);
    // Assess
    expect(readNow).toBe(false);
    expect(store.state).toMatchObject({ viewReads: 1, generationReads: 0 });
  });

  it('keeps a copy past its age whose generation is unchanged: one generation read, no read of the pool partition', async () => {
    // Prepare
    const store = storeOf(viewOf('g1'));
    const cache = new PoolViewCache(store, 1_000);
    await cache.get('p', 0);
    // Act
    const first = await cache.read('p', 1_500);
    const second = await cache.read('p', 2_000);
    // Assess: current as of the check, and renewed by it (the second call is within the age again)
    expect(first.readNow).toBe(true);
    expect(second.readNow).toBe(false);
    expect(store.state).toMatchObject({ viewReads: 1, generationReads: 1 });
  });

  it('reads the view again when the generation changed since the copy was read', async () => {
    // Prepare: another container added a range (a new generation and a new range)
    const store = storeOf(viewOf('g1'));
    const cache = new PoolViewCache(store, 1_000);
    await cache.get('p', 0);
    store.state.view = {
      ...viewOf(),
      ranges: [
        {
          pool: 'p',
          name: 'r',
          cidr: '10.0.0.0/24',
          family: IpFamily.IPv4,
          state: RangeState.Ready,
          legacy: false,
          createdAt: '2035-01-01T00:00:00.000Z',
        },
      ],
    };
    store.state.generation = 'g2';
    // Act
    const { view, readNow } = await cache.read('p', 1_500);
    // Assess
    expect(readNow).toBe(true);
    expect(view.generation).toBe('g2');
    expect(view.ranges).toHaveLength(1);
    expect(store.state.viewReads).toBe(2);
  });

  it('reads the view again when the copy has no generation (a pool whose ranges have not changed since generations exist)', async () => {
    // Prepare
    const store = storeOf(viewOf());
    const cache = new PoolViewCache(store, 1_000);
    await cache.get('p', 0);
    // Act
    await cache.read('p', 1_500);
    // Assess
    expect(store.state).toMatchObject({ viewReads: 2, generationReads: 0 });
  });

  it('finds a pool deleted since its copy was read gone (its generation copies go with it)', async () => {
    // Prepare
    const store = storeOf(viewOf('g1'));
    const cache = new PoolViewCache(store, 1_000);
    await cache.get('p', 0);
    store.state.view = undefined;
    store.state.generation = undefined;
    // Act
    const read = cache.read('p', 1_500);
    // Assess
    await expect(read).rejects.toBeInstanceOf(NotFoundError);
  });

  it('reads the pool partition when asked for a fresh view, whatever the generation', async () => {
    // Prepare
    const store = storeOf(viewOf('g1'));
    const cache = new PoolViewCache(store, 1_000);
    await cache.get('p', 0);
    // Act
    await cache.read('p', 1_500, true);
    // Assess
    expect(store.state).toMatchObject({ viewReads: 2, generationReads: 0 });
  });

  it('on the memory engine, reads the new ranges of a pool deleted and created again under the same name', async () => {
    // Prepare: container a keeps a view of pool p; container b deletes p and creates it again with another range
    const table = new MemoryTable();
    const clock = new ManualClock();
    const a = buildContainer(loadConfig({ TABLE_NAME: 'memory', LOCAL_STACK: 'true' }), {
      table,
      clock,
      random: new SeededRandom(1),
    });
    const b = buildContainer(loadConfig({ TABLE_NAME: 'memory', LOCAL_STACK: 'true' }), {
      table,
      clock,
      random: new SeededRandom(2),
    });
    await createPool(a.deps, { name: 'p' });
    await createRange(a.deps, { pool: 'p', cidr: '10.0.0.0/24' });
    expect((await a.deps.views.get('p', clock.nowMs())).ranges.map((r) => r.cidr)).toEqual(['10.0.0.0/24']);
    await deleteRange(b.deps, 'p', (await b.deps.views.get('p', clock.nowMs(), true)).ranges[0]!.name);
    await deletePool(b.deps, 'p');
    await createPool(b.deps, { name: 'p' });
    await createRange(b.deps, { pool: 'p', cidr: '10.1.0.0/24' });
    clock.advance(1_100);
    // Act
    const { view } = await a.deps.views.read('p', clock.nowMs());
    // Assess
    expect(view.ranges.map((r) => r.cidr)).toEqual(['10.1.0.0/24']);
  });
});
