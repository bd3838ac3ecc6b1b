import { formatCidr } from '../../shared/core/ip/cidr.ts';
import { countOf, fillOf, labelOf, Zone, zoneOf, type MapModel } from './layout.ts';
import { countsLine, type TextMapMeta } from './render-text.ts';

/** Background of a free cell by zone. */
const FREE_FILL: Readonly<Record<Zone, string>> = {
  [Zone.Upper]: '#e9eef4',
  [Zone.Lower]: '#cfe8f3',
  [Zone.Excluded]: '#f4c7c3',
  [Zone.Reserved]: '#9aa5b1',
  [Zone.Outside]: '#ffffff',
};
/** Held addresses are drawn over the background, opaque in proportion to the cell's fill. */
const HELD_FILL = '#1f5fa8';

const escapeXml = (text: string): string =>
  text.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);

/**
 * The map as a standalone SVG: the range and pool as a title, the counts and the time of the read, the grid with
 * row labels, and a legend. Every cell is one <rect> (plus one for its held share), so the cell count is what
 * bounds the file's size: 16,384 cells (a /16 at 4 addresses a cell) is about 1.5 MB.
 */
export function renderSvgMap(model: MapModel, meta: TextMapMeta, at: Date): string {
  const cell = model.columns >= 128 ? 6 : model.columns >= 64 ? 10 : 16;
  const gap = 1;
  const labelWidth = model.cidr.family === 'IPv4' ? 96 : 250;
  const top = 92;
  const gridWidth = model.columns * cell;
  const gridHeight = model.rows.length * cell;
  const legend: [string, string][] = [
    [HELD_FILL, 'held (opacity: share of the cell)'],
    [FREE_FILL.upper, 'free, upper band'],
    [FREE_FILL.lower, 'free, lower band'],
    [FREE_FILL.excluded, 'excluded'],
    [FREE_FILL.reserved, 'network/broadcast'],
    ...(model.window !== undefined ? ([[FREE_FILL.outside, 'outside the legacy window']] as [string, string][]) : []),
  ];
  const legendStep = (text: string) => 24 + text.length * 7;
  const width = Math.max(labelWidth + gridWidth + 24, 12 + legend.reduce((sum, [, text]) => sum + legendStep(text), 0));
  const legendTop = top + gridHeight + 24;
  const height = legendTop + 40;
  // A label every few rows when rows are thin, so they do not overlap.
  const labelEvery = Math.max(1, Math.ceil(12 / cell));

  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="ui-monospace, Menlo, Consolas, monospace" font-size="11">`,
    `<title>${escapeXml(`${meta.pool}/${meta.range} ${formatCidr(model.cidr)}`)}</title>`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="12" y="22" font-size="15" font-weight="bold">${escapeXml(`pool ${meta.pool}, range ${meta.range} (${formatCidr(model.cidr)}, ${meta.state}${meta.legacy ? ', legacy' : ''})`)}</text>`,
    `<text x="12" y="42">${escapeXml(countsLine(model))}</text>`,
    `<text x="12" y="60">${escapeXml(`1 cell = ${countOf(model, model.cellSize)}, ${model.columns} per row; lower band ${countOf(model, model.lowerBand)}${model.window !== undefined ? `; legacy window ${model.window}` : ''}`)}</text>`,
    `<text x="12" y="78" fill="#555">${escapeXml(`read at ${at.toISOString()}`)}</text>`,
  ];
  model.rows.forEach((row, r) => {
    const y = top + r * cell;
    if (r % labelEvery === 0)
      out.push(
        `<text x="${labelWidth - 6}" y="${y + cell - 1}" text-anchor="end" font-size="${Math.min(11, cell * labelEvery - 1)}">${escapeXml(labelOf(model.cidr, row[0]!.first))}</text>`,
      );
    row.forEach((c, i) => {
      const x = labelWidth + i * cell;
      const size = cell - gap;
      out.push(`<rect x="${x}" y="${y}" width="${size}" height="${size}" fill="${FREE_FILL[zoneOf(c)]}"/>`);
      if (c.held > 0n)
        out.push(
          `<rect x="${x}" y="${y}" width="${size}" height="${size}" fill="${HELD_FILL}" fill-opacity="${Math.max(0.25, fillOf(c)).toFixed(2)}"/>`,
        );
    });
  });
  let x = 12;
  for (const [fill, text] of legend) {
    out.push(
      `<rect x="${x}" y="${legendTop}" width="12" height="12" fill="${fill}" stroke="#666" stroke-width="0.5"/>`,
    );
    out.push(`<text x="${x + 17}" y="${legendTop + 10}">${escapeXml(text)}</text>`);
    x += legendStep(text);
  }
  out.push('</svg>', '');
  return out.join('\n');
}
