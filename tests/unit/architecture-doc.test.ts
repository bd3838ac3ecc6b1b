import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('docs/architecture.md: one allocation, stage by stage', () => {
  const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## One allocation, stage by stage'));
  const named = [...section.matchAll(/`((?:functions|shared)\/[^`]+\.ts)`/g)].map((m) => m[1]!);

  it('names at least one file for each of its stages', () => {
    const stages = section.split('\n').filter((line) => /^\d+\. /.test(line));
    expect(stages.length).toBeGreaterThanOrEqual(10);
    expect(named.length).toBeGreaterThanOrEqual(stages.length);
  });

  it('names only files that exist', () => {
    expect(named.filter((file) => !existsSync(join(ROOT, file)))).toEqual([]);
  });
});
