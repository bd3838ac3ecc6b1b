import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Stage {
  readonly n: number;
  readonly files: readonly string[];
  /** How it is reached: the earlier stage whose files use `symbol`, which this stage's files define. */
  readonly from?: { readonly n: number; readonly symbol: string };
}

/** The walk's stages: each numbered item, its files and its `(from N: symbol)` link. */
function stagesOf(section: string): Stage[] {
  const items = section.split(/\n(?=\d+\. )/).filter((item) => /^\d+\. /.test(item));
  return items.map((item) => {
    const text = item.replace(/\s+/g, ' ');
    const link = /\(from (\d+): `([A-Za-z_]+)`\)/.exec(text);
    return {
      n: Number(/^(\d+)\./.exec(text)![1]),
      files: [...text.matchAll(/`((?:functions|shared)\/[^`]+\.ts)`/g)].map((m) => m[1]!),
      ...(link ? { from: { n: Number(link[1]), symbol: link[2]! } } : {}),
    };
  });
}

const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');

/** Whether a file defines `symbol`: a declaration, or a method of a class or interface. */
function defines(source: string, symbol: string): boolean {
  const declaration = new RegExp(`\\b(?:function|class|interface|type|const|let)\\s+${symbol}\\b`);
  const method = new RegExp(`^\\s+(?:async\\s+)?${symbol}\\s*[(<]`, 'm');
  return declaration.test(source) || method.test(source);
}

/** Whether a file uses `symbol` other than by defining it: a call, a property read, or an import. */
function uses(source: string, symbol: string): boolean {
  const call = new RegExp(`(?:\\.|\\b)${symbol}\\s*[(.[]|\\b${symbol}\\b[^\\n]*\\bfrom\\b|[{,]\\s*${symbol}\\s*[,}]`);
  return call.test(source.replace(new RegExp(`\\b(?:function|class|interface|type|const)\\s+${symbol}\\b`, 'g'), ''));
}

describe('docs/architecture.md: one allocation, stage by stage', () => {
  const doc = read('docs/architecture.md');
  const section = doc.slice(doc.indexOf('## One allocation, stage by stage'));
  const stages = stagesOf(section);

  it('names at least one file for each of its stages, growth among them', () => {
    expect(stages.length).toBeGreaterThanOrEqual(10);
    expect(stages.filter((s) => s.files.length === 0).map((s) => s.n)).toEqual([]);
    expect(stages.flatMap((s) => s.files)).toContain('shared/core/use-cases/grow.ts');
  });

  it('names only files that exist', () => {
    const named = stages.flatMap((s) => s.files);
    expect(named.filter((file) => !existsSync(join(ROOT, file)))).toEqual([]);
  });

  it('reaches every stage after the first from an earlier one that calls or imports what it defines', () => {
    const broken = stages.slice(1).flatMap((stage) => {
      const from = stage.from;
      if (!from) return [`${stage.n}: no (from N: symbol) link`];
      const caller = stages.find((s) => s.n === from.n);
      if (!caller || caller.n >= stage.n) return [`${stage.n}: from ${from.n}, which is not an earlier stage`];
      const problems: string[] = [];
      if (!stage.files.some((f) => existsSync(join(ROOT, f)) && defines(read(f), from.symbol)))
        problems.push(`${stage.n}: none of ${stage.files.join(', ')} defines ${from.symbol}`);
      if (!caller.files.some((f) => existsSync(join(ROOT, f)) && uses(read(f), from.symbol)))
        problems.push(`${stage.n}: none of stage ${from.n}'s files (${caller.files.join(', ')}) uses ${from.symbol}`);
      return problems;
    });
    expect(broken).toEqual([]);
  });

  it('tells a link from a broken one (the check itself)', () => {
    expect(defines('export async function createClaim(deps) {}', 'createClaim')).toBe(true);
    expect(defines('interface X {\n  commitClaim(claim: Claim): Promise<void>;\n}', 'commitClaim')).toBe(true);
    expect(defines('const other = createClaim(deps);', 'createClaim')).toBe(false);
    expect(uses("import { createClaim, type X } from './create-claim.ts';", 'createClaim')).toBe(true);
    expect(uses('await deps.allocator.allocate(view, draft)', 'allocate')).toBe(true);
    expect(uses('export async function createClaim(deps) {}', 'createClaim')).toBe(false);
    expect(uses('const createClaimGrowing = 1;', 'createClaim')).toBe(false);
  });
});
