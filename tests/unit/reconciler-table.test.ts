import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { EventReason } from '../../shared/core/events.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CODE_DIR = join(ROOT, 'shared/core/reconciler');

/** The text of every .ts file under a folder. */
const sources = (dir: string) =>
  readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.gen.ts'))
    .map((f) => readFileSync(join(dir, f), 'utf8'))
    .join('\n');

/** The rows of docs/reconciler.md's "What it repairs" table: number and the events of its last column. */
function tableRows(doc: string): { row: number; events: string[] }[] {
  const section = doc.slice(doc.indexOf('## What it repairs'));
  const table = section.slice(0, section.indexOf('\n\n', section.indexOf('| #')));
  return table
    .split('\n')
    .filter((line) => /^\| \d+ /.test(line))
    .map((line) => {
      const cells = line.split('|');
      const last = cells[cells.length - 2] ?? '';
      return { row: Number(cells[1]), events: [...last.matchAll(/`(\w+)`/g)].map((m) => m[1]!) };
    });
}

/** Every row number a comment cites: "row 9", "rows 3-5", "rows 1, 3-7 and 13". */
function citedRows(text: string): number[] {
  const out: number[] = [];
  for (const m of text.matchAll(/\b[Rr]ows? (\d+(?:-\d+)?(?:(?:, | and | or )\d+(?:-\d+)?)*)/g)) {
    for (const part of m[1]!.split(/, | and | or /)) {
      const [from, to] = part.split('-').map(Number);
      for (let row = from!; row <= (to ?? from!); row += 1) out.push(row);
    }
  }
  return out;
}

/** The events the reconciler's code writes: EventReason.X, or the events.x(...) builders. */
function writtenEvents(code: string): string[] {
  const reasons = new Set<string>(Object.values(EventReason));
  const direct = [...code.matchAll(/EventReason\.(\w+)/g)].map((m) => m[1]!);
  const built = [...code.matchAll(/events\.(\w+)\(/g)].map((m) => m[1]![0]!.toUpperCase() + m[1]!.slice(1));
  return [...direct, ...built].filter((name) => reasons.has(name));
}

describe("The reconciler's case table: docs/reconciler.md is the one source", () => {
  const doc = readFileSync(join(ROOT, 'docs/reconciler.md'), 'utf8');
  const rows = tableRows(doc);
  // Rows are cited across shared/ (the bitmap release, the write shapes); the events are the reconciler's own.
  const shared = sources(join(ROOT, 'shared'));
  const code = sources(CODE_DIR);

  it('numbers its rows 1 to N, in order', () => {
    expect(rows.length).toBeGreaterThanOrEqual(19);
    expect(rows.map((r) => r.row)).toEqual(rows.map((_, i) => i + 1));
  });

  it('is not copied into the code: reconcile.ts points to it instead', () => {
    const reconcile = readFileSync(join(CODE_DIR, 'reconcile.ts'), 'utf8');
    expect(reconcile.split('\n').filter((line) => /^\s*\*?\s*\|\s*\d+\s*\|/.test(line))).toEqual([]);
    expect(reconcile).toContain('docs/reconciler.md');
  });

  it('has every row the code cites', () => {
    const cited = citedRows(shared);
    expect(cited.length).toBeGreaterThan(20);
    expect([...new Set(cited)].filter((row) => row < 1 || row > rows.length)).toEqual([]);
  });

  it('lists every event the reconciler writes, and names only events that exist', () => {
    const listed = new Set(rows.flatMap((r) => r.events));
    expect([...new Set(writtenEvents(code))].filter((name) => !listed.has(name))).toEqual([]);
    const reasons = new Set<string>(Object.values(EventReason));
    expect([...listed].filter((name) => !reasons.has(name))).toEqual([]);
  });
});
