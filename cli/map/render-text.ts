import { styleText } from 'node:util';
import { formatCidr, hostAt } from '../../shared/core/ip/cidr.ts';
import { countOf, fillOf, labelOf, Zone, zoneOf, type MapCell, type MapModel } from './layout.ts';

/** Glyph of a free cell by zone; a cell holding anything is shaded by its fill instead. */
export const FREE_GLYPH: Readonly<Record<Zone, string>> = {
  [Zone.Upper]: '·',
  [Zone.Lower]: ':',
  [Zone.Excluded]: 'x',
  [Zone.Reserved]: '-',
  [Zone.Outside]: ' ',
};

/** Fill shades, from "some" to "all": a single-address cell is either free or `█`. */
export const SHADES = ['░', '▒', '▓', '█'] as const;

/** Colours of a terminal; the glyphs alone carry the picture when output is not a terminal (or NO_COLOR is set). */
const COLOUR: Readonly<Record<Zone, Parameters<typeof styleText>[0] | undefined>> = {
  [Zone.Upper]: undefined,
  [Zone.Lower]: 'cyan',
  [Zone.Excluded]: 'red',
  [Zone.Reserved]: 'gray',
  [Zone.Outside]: 'gray',
};

export function glyphOf(cell: MapCell): string {
  if (cell.held > 0n) {
    if (cell.held >= cell.usable) return SHADES[3];
    const fill = fillOf(cell);
    return fill >= 2 / 3 ? SHADES[2] : fill >= 1 / 3 ? SHADES[1] : SHADES[0];
  }
  return FREE_GLYPH[zoneOf(cell)];
}

export interface TextMapMeta {
  readonly pool: string;
  readonly range: string;
  readonly family: string;
  readonly state: string;
  readonly legacy: boolean;
}

/** `10.96.0.1 - 10.96.0.16 (16)` for host offsets [from, to); blocks as CIDRs in a block range. */
function span(model: MapModel, from: bigint, to: bigint): string {
  const at = (offset: bigint) => labelOf(model.cidr, hostAt(model.cidr, offset));
  return `${at(from)} - ${at(to - 1n)} (${to - from})`;
}

/** The counts line: `30 usable: ...`, or `4 blocks of /26: ...` for a block range. */
export function countsLine(model: MapModel): string {
  const { counts, cidr } = model;
  const total =
    cidr.slot === undefined ? `${counts.usable} usable` : `${countOf(model, counts.usable)} of /${cidr.slot}`;
  return `${total}: ${counts.held} held, ${counts.free} free, ${counts.excluded} excluded`;
}

/**
 * The map as text: a heading with the counts and the bands, one line per row of cells labelled with its first
 * address, and a legend naming only the glyphs that appear.
 */
export function renderTextMap(model: MapModel, meta: TextMapMeta, options: { colour: boolean }): string {
  const { counts } = model;
  const labelWidth = Math.max(...model.rows.map((row) => labelOf(model.cidr, row[0]!.first).length));
  const lines = [
    `pool ${meta.pool}, range ${meta.range} (${formatCidr(model.cidr)}, ${meta.family}, ${meta.state}${meta.legacy ? ', legacy' : ''})`,
    countsLine(model),
  ];
  const hosts = counts.usable;
  if (hosts > 0n) {
    lines.push(
      model.lowerBand > 0n
        ? `lower band ${span(model, 0n, model.lowerBand)}, upper band ${span(model, model.lowerBand, hosts)}`
        : `one band ${span(model, 0n, hosts)} (16 ${model.cidr.slot === undefined ? 'addresses' : 'blocks'} or fewer have no lower band)`,
    );
  }
  if (model.window !== undefined)
    lines.push(`legacy bitmap window ${span(model, 0n, model.window)}; dynamic picks stay inside it`);
  lines.push(`1 cell = ${countOf(model, model.cellSize)}, ${model.columns} per row`, '');

  const seen = new Set<string>();
  for (const row of model.rows) {
    const cells = row.map((cell) => {
      const glyph = glyphOf(cell);
      seen.add(glyph);
      const colour = COLOUR[zoneOf(cell)];
      // The caller decided whether colour is wanted (a terminal, no NO_COLOR): styleText must not second-guess it.
      return options.colour && colour ? styleText(colour, glyph, { validateStream: false }) : glyph;
    });
    lines.push(`${labelOf(model.cidr, row[0]!.first).padStart(labelWidth)}  ${cells.join('')}`.trimEnd());
  }

  const legend: string[] = [];
  const shades = SHADES.filter((s) => seen.has(s));
  if (shades.length)
    legend.push(
      `${shades.join('')} held (${model.cellSize === 1n ? `the ${model.cidr.slot === undefined ? 'address' : 'block'}` : 'some ░ ▒ ▓ █ all of the cell'})`,
    );
  const words: [string, string][] = [
    [FREE_GLYPH.upper, 'free'],
    [FREE_GLYPH.lower, 'free, lower band'],
    [FREE_GLYPH.excluded, 'excluded'],
    [FREE_GLYPH.reserved, 'network/broadcast'],
  ];
  for (const [glyph, word] of words) if (seen.has(glyph)) legend.push(`${glyph} ${word}`);
  if (seen.has(FREE_GLYPH.outside)) legend.push('(blank) outside the legacy window');
  lines.push('', `legend: ${legend.join('   ')}`, '');
  return lines.join('\n');
}
