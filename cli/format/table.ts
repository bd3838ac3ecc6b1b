import Table from 'cli-table3';

/** cli-table3 without borders: columns separated by three spaces, as kubectl's tabwriter aligns them. */
const BORDERLESS = {
  top: '',
  'top-mid': '',
  'top-left': '',
  'top-right': '',
  bottom: '',
  'bottom-mid': '',
  'bottom-left': '',
  'bottom-right': '',
  left: '',
  'left-mid': '',
  mid: '',
  'mid-mid': '',
  right: '',
  'right-mid': '',
  middle: '   ',
} as const;

/**
 * An aligned table with upper-case headers and no borders. cli-table3 measures cells by their display width
 * (wide characters, colour codes), which a padEnd would get wrong for the bars and map glyphs.
 * @returns the lines without trailing spaces, ending in a newline; an empty string for no rows (the caller says
 *          "No resources found" where kubectl would).
 */
export function renderTable(head: readonly string[], rows: readonly (readonly string[])[]): string {
  if (rows.length === 0) return '';
  const table = new Table({
    head: [...head],
    chars: BORDERLESS,
    style: { head: [], border: [], 'padding-left': 0, 'padding-right': 0, compact: true },
  });
  for (const row of rows) table.push([...row]);
  return `${table
    .toString()
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n')}\n`;
}
