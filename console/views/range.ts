import { isNotFound } from '../../cli/errors.ts';
import { api } from '../api.ts';
import type { Lease } from '../../cli/api/types.ts';
import { legacyWindow } from '../../shared/core/bitmap/bitmap.ts';
import { formatAddress } from '../../shared/core/ip/address.ts';
import { formatCidr, hostAt } from '../../shared/core/ip/cidr.ts';
import { rangeCidr } from '../../shared/core/base/pool-geometry.ts';
import {
  exclusionIntervals,
  fillOf,
  labelOf,
  layoutMap,
  Zone,
  zoneOf,
  type MapCell,
  type MapModel,
} from '../../cli/map/layout.ts';
import { heldOf } from '../../cli/map/occupancy.ts';
import { blockSizesText, cellText, mapSummaryText, rangeSourceText } from './blocks.ts';
import { consolePath, facts, h, link } from '../dom.ts';
import { time, utilizationBar } from '../format.ts';
import type { View } from '../main.ts';

/** One cell per address up to a /22; beyond, aligned blocks shaded by fill (the picture of `ipam map`). */
export const MAP_CELLS = 1024;

const ZONE_TEXT: Readonly<Record<Zone, string>> = {
  [Zone.Upper]: 'upper band (dynamic picks first)',
  [Zone.Lower]: 'lower band (static first, dynamic last)',
  [Zone.Excluded]: 'excluded by the pool',
  [Zone.Reserved]: 'network or broadcast address',
  [Zone.Outside]: "outside the legacy range's bitmap window",
};

/**
 * /console/pools/{pool}/ranges/{range}: the range's occupancy map, from the bulk occupancy route (the summary's
 * bit slices, a few items whatever the number of leases), laid out by the CLI's own layout (cli/map/layout.ts).
 * Hovering or focusing a cell shows its address and, for a held address, its holder (one lookup, on demand).
 */
export const rangeView: View = async ([poolName, rangeName]) => {
  const pool = poolName!;
  const [details, occupancy] = await Promise.all([api.getPool(pool), api.getOccupancy(pool, rangeName!)]);
  const range = details.ranges.find((r) => r.name === rangeName) ?? (await api.getRange(pool, rangeName!));
  performance.clearMarks('map-data');
  performance.mark('map-data');
  // A block pool's range is drawn a block to a cell (at most).
  const cidr = rangeCidr(range);
  const model = layoutMap({
    cidr,
    held: heldOf(occupancy),
    exclude: exclusionIntervals(details.exclude, cidr.family),
    ...(range.legacy ? { window: legacyWindow(cidr) } : {}),
    maxCells: MAP_CELLS,
    maxColumns: cidr.family === 'IPv4' && blockCells(cidr.prefix) <= 256 ? 32 : 64,
  });
  const info = h(
    'div',
    { class: 'cell-info', id: 'cell-info', 'aria-live': 'polite' },
    'Hover over or focus a cell (arrow keys move) to see its address and holder.',
  );
  const grid = mapGrid(pool, model, info);
  // The time from the data's arrival to the map on screen (the frame after it is in the page), for the benchmark.
  requestAnimationFrame(() =>
    setTimeout(() => {
      performance.clearMeasures('map-render');
      performance.measure('map-render', 'map-data');
    }),
  );

  const at = (offset: bigint) => labelOf(cidr, hostAt(cidr, offset));
  const content = h(
    'div',
    {},
    h('p', { class: 'crumbs' }, link(consolePath('pools', pool), `Pool ${pool}`)),
    h('h1', { tabindex: '-1' }, 'Range ', h('span', { class: 'name' }, range.name)),
    facts([
      ['CIDR', h('code', {}, formatCidr(cidr))],
      ['Block size', blockSizesText(details)],
      [
        'Made from',
        range.source
          ? link(consolePath('pools', range.source.pool, 'claims', range.source.claim), rangeSourceText(range))
          : null,
      ],
      ['State', `${range.state}${range.legacy ? ', legacy' : ''}`],
      ['Utilization', utilizationBar(range.name, range)],
      ['Lower band', model.lowerBand > 0n ? `${at(0n)} – ${at(model.lowerBand - 1n)} (${model.lowerBand})` : 'none'],
      [
        'Legacy window',
        model.window !== undefined
          ? `${at(0n)} – ${at(model.window - 1n)} (${model.window} of ${model.counts.usable})`
          : '',
      ],
      ['Exclusions', details.exclude.length ? details.exclude.join(', ') : 'none'],
      [
        'Read from',
        [
          `${occupancy.source === 'summary' ? 'the occupancy summary' : 'the lease listing'}${occupancy.slices[0] ? ', as of ' : ''}`,
          occupancy.slices[0] ? time(occupancy.slices[0].asOf) : null,
        ],
      ],
    ]),
    h('p', { class: 'map-summary' }, mapSummaryText(model)),
    h('div', { class: 'map-wrap' }, grid, info),
    legend(model),
  );
  return { title: `Range ${range.name}`, content };
};

const blockCells = (prefix: number): number => 2 ** Math.min(32, 32 - prefix);

function mapGrid(pool: string, model: MapModel, info: HTMLElement): HTMLElement {
  const cells: { element: HTMLElement; cell: MapCell }[] = [];
  const grid = h('div', {
    class: `map cols-${model.columns}`,
    role: 'grid',
    'aria-label': `Occupancy of ${formatCidr(model.cidr)}`,
    'aria-describedby': 'cell-info',
  });
  grid.style.setProperty('--columns', String(model.columns));
  const fragment = document.createDocumentFragment();
  for (const row of model.rows) {
    const rowElement = h(
      'div',
      { role: 'row', class: 'map-row' },
      h('span', { role: 'rowheader', class: 'map-label' }, labelOf(model.cidr, row[0]!.first)),
    );
    for (const cell of row) {
      const zone = zoneOf(cell);
      const element = h('span', {
        role: 'gridcell',
        class: `cell z-${zone}${cell.held > 0n ? ' held' : ''}`,
        tabindex: cells.length === 0 ? '0' : '-1',
        'aria-label': cellText(model, cell, ZONE_TEXT[zone]),
        'data-i': cells.length,
      });
      if (cell.held > 0n && model.cellSize > 1n)
        element.style.setProperty('--fill', String(Math.max(0.25, fillOf(cell))));
      rowElement.append(element);
      cells.push({ element, cell });
    }
    fragment.append(rowElement);
  }
  grid.append(fragment);

  const holders = new Map<string, Promise<Lease | undefined>>();
  let shown = -1;
  const show = (index: number) => {
    const entry = cells[index];
    if (entry === undefined || index === shown) return;
    shown = index;
    const { cell } = entry;
    const lines: (Node | string)[] = [h('strong', {}, cellText(model, cell, ZONE_TEXT[zoneOf(cell)]))];
    info.replaceChildren(...lines);
    if (model.cellSize !== 1n || cell.held === 0n) return;
    const address = formatAddress({ family: model.cidr.family, value: cell.first });
    let holder = holders.get(address);
    if (holder === undefined) {
      holder = api
        .getAddress(pool, address)
        .catch((error: unknown) => (isNotFound(error) ? undefined : Promise.reject(error)));
      holders.set(address, holder);
    }
    holder.then(
      (lease) => {
        if (shown !== index) return;
        if (lease === undefined) info.append(h('div', {}, 'not held any more'));
        else if (lease.state === 'Released')
          info.append(
            h(
              'div',
              {},
              `released by ${lease.previousClaim} (${lease.previousOwner.kind}/${lease.previousOwner.name}), reusable `,
              time(lease.reusableAt),
            ),
          );
        else
          info.append(
            h(
              'div',
              {},
              'held by claim ',
              link(consolePath('pools', pool, 'claims', lease.claim), lease.claim),
              ` (${lease.owner.kind}/${lease.owner.name}, uid ${lease.owner.uid})`,
            ),
          );
      },
      () => undefined,
    );
  };
  const indexOf = (target: EventTarget | null): number => {
    const element = (target as Element | null)?.closest?.('[data-i]');
    return element ? Number(element.getAttribute('data-i')) : -1;
  };
  grid.addEventListener('mouseover', (event) => show(indexOf(event.target)));
  grid.addEventListener('focusin', (event) => show(indexOf(event.target)));
  grid.addEventListener('keydown', (event) => {
    const index = indexOf(event.target);
    if (index < 0) return;
    const columns = model.columns;
    const moves: Record<string, number> = {
      ArrowRight: index + 1,
      ArrowLeft: index - 1,
      ArrowDown: index + columns,
      ArrowUp: index - columns,
      Home: index - (index % columns),
      End: index - (index % columns) + columns - 1,
    };
    const next = moves[event.key];
    if (next === undefined || next < 0 || next >= cells.length) return;
    event.preventDefault();
    cells[index]!.element.tabIndex = -1;
    const target = cells[next]!.element;
    target.tabIndex = 0;
    target.focus();
  });
  return grid;
}

function legend(model: MapModel): HTMLElement {
  const items: [string, string][] = [
    ['held', model.cellSize === 1n ? 'held' : 'held (darker: a larger share of the block)'],
    [`z-${Zone.Upper}`, 'free, upper band'],
    [`z-${Zone.Lower}`, 'free, lower band'],
    [`z-${Zone.Excluded}`, 'excluded'],
    [`z-${Zone.Reserved}`, 'network / broadcast'],
    ...(model.window !== undefined ? ([[`z-${Zone.Outside}`, 'outside the legacy window']] as [string, string][]) : []),
  ];
  return h(
    'ul',
    { class: 'legend', 'aria-label': 'Legend' },
    items.map(([cls, text]) => h('li', {}, h('span', { class: `swatch cell ${cls}`, 'aria-hidden': 'true' }), text)),
  );
}
