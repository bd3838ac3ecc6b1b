import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const LIMIT = 300;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sources(join(dir, e.name))
      : e.name.endsWith('.ts') && !e.name.endsWith('.gen.ts')
        ? [join(dir, e.name)]
        : [],
  );
}

describe('shared/: files a reader can hold in their head', () => {
  it(`gives every file over ${LIMIT} lines a one-line reason at its top ("// Over ${LIMIT} lines: ...")`, () => {
    const unexplained = sources(join(ROOT, 'shared'))
      .map((file) => ({ file: relative(ROOT, file), lines: readFileSync(file, 'utf8').split('\n') }))
      .filter(({ lines }) => lines.length > LIMIT && !/^\/\/ Over 300 lines: \S/.test(lines[0] ?? ''))
      .map(({ file, lines }) => `${file} (${lines.length} lines)`);
    expect(unexplained).toEqual([]);
  });
});
