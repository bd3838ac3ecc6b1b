import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * What a comment in the code may not carry: history a reader cannot use there. Issue numbers of this project, commit
 * hashes and simulator seeds belong in commits, decision records (docs/decisions/) and benchmarks. Another project's
 * issue (`whereabouts #176`) is a reference a reader can follow, and a CLI flag's example (`--seeds 1000`) is usage.
 */
const HISTORY: readonly { readonly what: string; readonly pattern: RegExp }[] = [
  { what: 'an issue number', pattern: /\b(?:issues?|tasks?)\s+#?\d+/i },
  { what: 'a commit hash', pattern: /(?:\b(?:at|on|main|commit|before|after|since)\s+|\()[0-9a-f]{7,40}\b/ },
  { what: 'a seed', pattern: /(?<!--)\bseeds?\s+\d{2,}/i },
];

/** The code's folders (tests keep what a case reproduces; generated files are not written by hand). */
const CODE = ['shared', 'functions', 'cli', 'cni', 'console', 'scripts', 'sim', 'bench'];

function commentsOf(source: string): string[] {
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, ts.LanguageVariant.Standard, source);
  const found: string[] = [];
  for (let kind = scanner.scan(); kind !== ts.SyntaxKind.EndOfFileToken; kind = scanner.scan()) {
    if (kind === ts.SyntaxKind.SingleLineCommentTrivia || kind === ts.SyntaxKind.MultiLineCommentTrivia)
      found.push(scanner.getTokenText());
  }
  return found;
}

function historyIn(text: string): string[] {
  return HISTORY.filter(({ pattern }) => pattern.test(text)).map(({ what }) => what);
}

describe('comments carry no history (issue numbers, commit hashes, seeds)', () => {
  it('finds none in the code', () => {
    const files = execFileSync('git', ['ls-files', ...CODE], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((f) => /\.(?:ts|tsx|js|mjs)$/.test(f) && !f.endsWith('openapi.gen.ts'));
    const found = files.flatMap((file) =>
      commentsOf(readFileSync(ROOT + file, 'utf8')).flatMap((comment) =>
        comment
          .split('\n')
          .filter((line) => historyIn(line).length > 0)
          .map((line) => `${file}: ${historyIn(line).join(', ')}: ${line.trim()}`),
      ),
    );
    expect(found).toEqual([]);
  });

  it('tells history from what a reader can use (the check itself)', () => {
    expect(historyIn('// Grow on demand (issue 35): a pool that names a parent')).toEqual(['an issue number']);
    expect(historyIn(' * the runs failing at 94d2fc1 with seed 25')).toEqual(['a commit hash', 'a seed']);
    expect(historyIn(' * only ever release that attachment (whereabouts #176).')).toEqual([]);
    expect(historyIn(' * `--seeds 1000` is the long hunt.')).toEqual([]);
    expect(historyIn(' *   Put RGEN#<pool>#0 ... RGEN#<pool>#15   generation = <fresh id>')).toEqual([]);
    expect(historyIn(' *      65 72616e6765                     "range"')).toEqual([]);
    expect(commentsOf('const a = "issue 35"; // issue 36\n/* x */')).toEqual(['// issue 36', '/* x */']);
  });
});
