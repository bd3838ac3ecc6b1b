import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CORE = join(ROOT, 'shared/core');

/** The ranked units of docs/architecture.md's "Inside the core" list, bottom up. */
function rankedUnits(): string[] {
  const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const start = doc.indexOf('## Inside the core: layers, bottom up');
  const section = doc.slice(start, doc.indexOf('\n## ', start + 1));
  return [...section.matchAll(/^\d+\. `([^`]+)`/gm)].map((m) => m[1]!.replace(/\/$/, ''));
}

function coreFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return coreFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** A file's unit: its top-level folder, or the file itself at the top. */
const unitOf = (file: string): string => relative(CORE, file).split('/')[0]!;

/** Every relative import of a file that stays inside the core (type-only imports and re-exports included). */
function importsOf(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return info.importedFiles
    .map((f) => f.fileName)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => resolve(dirname(file), spec))
    .filter((target) => target.startsWith(CORE + '/'));
}

/** The cycles of a graph (its strongly connected components of more than one node, or a node importing itself). */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let top: string;
    do {
      top = stack.pop()!;
      onStack.delete(top);
      component.push(top);
    } while (top !== node);
    if (component.length > 1 || graph.get(node)?.includes(node)) found.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

describe('shared/core: ranked units, no cycles (docs/architecture.md, "Inside the core")', () => {
  const units = rankedUnits();
  const files = coreFiles(CORE);
  const graph = new Map(files.map((file) => [file, importsOf(file)]));

  it('ranks every folder and top-level file of the core, once', () => {
    expect(units.length).toBeGreaterThanOrEqual(10);
    expect(new Set(units).size).toBe(units.length);
    const present = [...new Set(files.map(unitOf))].sort();
    expect(present.filter((unit) => !units.includes(unit))).toEqual([]);
    expect(units.filter((unit) => !present.includes(unit))).toEqual([]);
  });

  it('has each unit import only units ranked below it', () => {
    const upward = [...graph].flatMap(([file, targets]) =>
      targets
        .filter((target) => units.indexOf(unitOf(target)) > units.indexOf(unitOf(file)))
        .map((target) => `${relative(CORE, file)} -> ${relative(CORE, target)}`),
    );
    expect(upward).toEqual([]);
  });

  it('has no cycle between files, type imports included', () => {
    const named = cycles(graph).map((cycle) => cycle.map((file) => relative(CORE, file)));
    expect(named).toEqual([]);
  });

  it('finds a cycle where there is one (the check itself)', () => {
    expect(
      cycles(
        new Map([
          ['a', ['b']],
          ['b', ['c']],
          ['c', ['a']],
          ['d', ['a']],
        ]),
      ),
    ).toEqual([['a', 'b', 'c']]);
    expect(
      cycles(
        new Map([
          ['a', ['b']],
          ['b', []],
        ]),
      ),
    ).toEqual([]);
  });
});
