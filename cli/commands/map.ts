import type { Command } from 'commander';
import { legacyWindow } from '../../shared/core/bitmap/bitmap.ts';
import { rangeCidr } from '../../shared/core/base/pool-geometry.ts';
import { lastAddress } from '../../shared/core/ip/cidr.ts';
import { apiFor } from '../context.ts';
import type { CliIo } from '../io.ts';
import { exclusionIntervals, labelOf, layoutMap } from '../map/layout.ts';
import { readOccupancy } from '../map/occupancy.ts';
import { renderSvgMap } from '../map/render-svg.ts';
import { renderTextMap } from '../map/render-text.ts';
import { intArg } from '../options.ts';

/** Cells of the terminal picture: 16 rows of 64, small enough for one screen. A /22 still gets a cell per address. */
export const TEXT_CELLS = 1024;
/** Cells of the SVG picture: a /18 at one address a cell, a /16 at four. */
export const SVG_CELLS = 16_384;

interface MapOptions {
  readonly svg?: string;
  readonly cells?: number;
}

/** `ipam map POOL RANGE [--svg FILE]`: a picture of a range's occupancy. */
export function addMapCommand(program: Command, io: CliIo): void {
  program
    .command('map')
    .argument('<pool>')
    .argument('<range>', 'the range name (10.96.0.0-24 for 10.96.0.0/24 unless named otherwise)')
    .option('--svg <file>', 'also write the picture as SVG (legend, counts, time) to this file')
    .option(
      '--cells <n>',
      `cells of the terminal picture at most (default ${TEXT_CELLS}; a power of two)`,
      intArg(1, 65_536),
    )
    .description("Draw a range's occupancy: one cell per address, or per block for large ranges, shaded by fill")
    .addHelpText(
      'after',
      [
        '',
        "Bands: dynamic picks start in the upper band and take the lower band (':') last; pool exclusions are 'x'.",
        '',
        'Examples:',
        '  ipam map services 10.96.0.0-24',
        '  ipam map services 10.64.0.0-16 --svg services.svg',
      ].join('\n'),
    )
    .action(async (pool: string, rangeName: string, options: MapOptions, cmd: Command) => {
      const api = await apiFor(cmd, io);
      const occupancy = await readOccupancy(api, pool, rangeName);
      const readAt = new Date(io.now());
      // A block pool's range is drawn a block to a cell at most (its blockPrefixLength).
      const cidr = rangeCidr(occupancy.range);
      const base = {
        cidr,
        held: occupancy.held,
        exclude: exclusionIntervals(occupancy.pool.exclude, cidr.family),
        ...(occupancy.range.legacy ? { window: legacyWindow(cidr) } : {}),
      };
      // Row labels are at most as wide as the block's last address (or block); the cells get the rest of the terminal.
      const labelWidth = labelOf(cidr, lastAddress(cidr)).length;
      const meta = {
        pool,
        range: occupancy.range.name,
        family: occupancy.range.family,
        state: occupancy.range.state,
        legacy: occupancy.range.legacy,
      };
      const text = layoutMap({
        ...base,
        maxCells: options.cells ?? TEXT_CELLS,
        maxColumns: Math.min(64, io.columns - labelWidth - 2),
      });
      io.stdout(renderTextMap(text, meta, { colour: io.isTTY && !io.env.NO_COLOR }));
      if (options.svg) {
        await io.writeFile(
          options.svg,
          renderSvgMap(layoutMap({ ...base, maxCells: SVG_CELLS, maxColumns: 128 }), meta, readAt),
        );
        io.stderr(`wrote ${options.svg}\n`);
      }
    });
}
