/**
 * The README's tours as data, for tests/e2e/tour.e2e.test.ts to run as written. Hand-rolled: a Markdown library
 * would give the code blocks but not the two conventions below, which are the whole job (about 150 lines).
 *
 * - A runnable block is a fenced `sh` block right after a comment `<!-- tour: NAME ... -->`. Blocks of one NAME run in
 *   one shell, in document order. Each command (a line, with its `\` continuations) is one step.
 * - An answer is a comment `# -> STATUS JSON` after a step (on its own lines, continued by lines `#` + 2 spaces, or at
 *   the end of the step's line). `...` in the JSON stands for what was left out, and text after the JSON is prose.
 * - A transcript is a fenced block right after `<!-- tour-output: NAME -->`: `$ command` lines, each followed by the
 *   output the command printed in the tour; the command names the tour's step that starts with it.
 */

export interface TourStep {
  /** The command as written (continuation lines joined with their `\`). */
  readonly command: string;
  /** The line number (1-based) where the command starts, for failure messages. */
  readonly line: number;
  /** The shown answer, joined to one line, or undefined. */
  readonly answer?: string;
}

export interface Transcript {
  readonly command: string;
  readonly output: string[];
}

export interface Tour {
  readonly name: string;
  readonly steps: TourStep[];
  readonly transcripts: Transcript[];
}

const runnable = /^<!--\s*tour:\s*([a-z][\w-]*)\b[\s\S]*?-->\s*$/;
const transcript = /^<!--\s*tour-output:\s*([a-z][\w-]*)\b[\s\S]*?-->\s*$/;

/** The tours of a Markdown text, by name, in document order. */
export function extractTours(markdown: string): Tour[] {
  const lines = markdown.split('\n');
  const tours = new Map<string, { steps: TourStep[]; transcripts: Transcript[] }>();
  const tour = (name: string) => {
    let found = tours.get(name);
    if (found === undefined) tours.set(name, (found = { steps: [], transcripts: [] }));
    return found;
  };
  for (let i = 0; i < lines.length; i += 1) {
    // A marker comment may span lines: join until its end.
    if (!lines[i]!.startsWith('<!--')) continue;
    let end = i;
    while (end < lines.length && !lines[end]!.includes('-->')) end += 1;
    const comment = lines.slice(i, end + 1).join(' ');
    const kind = runnable.exec(comment) ? 'run' : transcript.exec(comment) ? 'output' : undefined;
    if (kind === undefined) continue;
    const name = (kind === 'run' ? runnable : transcript).exec(comment)![1]!;
    let fence = end + 1;
    while (fence < lines.length && lines[fence]!.trim() === '') fence += 1;
    if (!/^```/.test(lines[fence] ?? ''))
      throw new Error(`README line ${i + 1}: a tour marker must be followed by a fenced block`);
    let close = fence + 1;
    while (close < lines.length && !/^```\s*$/.test(lines[close]!)) close += 1;
    const body = lines.slice(fence + 1, close);
    if (kind === 'run') tour(name).steps.push(...stepsOf(body, fence + 2));
    else tour(name).transcripts.push(...transcriptsOf(body));
    i = close;
  }
  return [...tours].map(([name, t]) => ({ name, ...t }));
}

function stepsOf(body: string[], firstLine: number): TourStep[] {
  const steps: { command: string; line: number; answer?: string }[] = [];
  for (let i = 0; i < body.length; i += 1) {
    const text = body[i]!;
    const trimmed = text.trim();
    if (trimmed === '') continue;
    if (trimmed.startsWith('#')) {
      const answer = /^#\s*->\s*(.*)$/.exec(trimmed);
      if (answer === undefined || answer === null) continue;
      let joined = answer[1]!;
      while (i + 1 < body.length && /^#\s{2,}\S/.test(body[i + 1]!)) joined += ` ${body[(i += 1)]!.slice(1).trim()}`;
      const last = steps.at(-1);
      if (last === undefined || last.answer !== undefined)
        throw new Error(`README line ${firstLine + i}: an answer that follows no command`);
      last.answer = joined;
      continue;
    }
    const line = firstLine + i;
    let command = text;
    while (command.endsWith('\\') && i + 1 < body.length) command += `\n${body[(i += 1)]!}`;
    const inline = /\s#\s*->\s*(.*)$/.exec(command);
    steps.push(inline ? { command, line, answer: inline[1]! } : { command, line });
  }
  return steps;
}

function transcriptsOf(body: string[]): Transcript[] {
  const out: { command: string; output: string[] }[] = [];
  for (const line of body) {
    if (line.startsWith('$ ')) out.push({ command: line.slice(2).trim(), output: [] });
    else out.at(-1)?.output.push(line);
  }
  for (const t of out) while (t.output.at(-1)?.trim() === '') t.output.pop();
  return out;
}

/**
 * Parses a shown answer, `201 {"name":"web","addresses":[{"address":"10.96.0.187",...},...],...} prose`, into its
 * status and the JSON it shows, with every `...` (and the words after it up to the next `,` `]` `}`) left out.
 */
export function parseAnswer(answer: string): { status: number; body: unknown } {
  const match = /^(\d{3})\s*(.*)$/s.exec(answer.trim());
  if (match === null) throw new Error(`an answer must start with an HTTP status: ${answer}`);
  const text = match[2]!;
  const start = text.search(/[[{]/);
  if (start < 0) return { status: Number(match[1]), body: undefined };
  const kept: string[] = [];
  let depth = 0;
  let i = start;
  for (; i < text.length; i += 1) {
    const c = text[i]!;
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      kept.push(text.slice(i, j + 1));
      i = j;
    } else if (text.startsWith('...', i)) {
      kept.push('…');
      i += 2;
      while (i + 1 < text.length && !',]}'.includes(text[i + 1]!)) i += 1;
    } else {
      if (c === '{' || c === '[') depth += 1;
      if (c === '}' || c === ']') depth -= 1;
      if (c.trim() !== '') kept.push(c);
      if (depth === 0) break;
    }
  }
  // Drop the ellipses and the commas they leave dangling.
  const tokens = kept.filter((t) => t !== '…');
  const json: string[] = [];
  for (let k = 0; k < tokens.length; k += 1) {
    const t = tokens[k]!;
    if (
      t === ',' &&
      (json.at(-1) === ',' ||
        json.at(-1) === '[' ||
        json.at(-1) === '{' ||
        tokens[k + 1] === ']' ||
        tokens[k + 1] === '}')
    )
      continue;
    json.push(t);
  }
  try {
    return { status: Number(match[1]), body: JSON.parse(json.join('')) };
  } catch (error) {
    throw new Error(`cannot read the JSON of the answer ${answer}: ${(error as Error).message}`);
  }
}

/** Keys whose shown string values must be equal, not only strings: they name outcomes, not generated data. */
const exactKeys = new Set(['code', 'state', 'family', 'status']);

/**
 * Where `actual` differs in shape from `shown`: every shown key present with a value of the same JSON type, arrays at
 * least as long with their shown elements alike, and the values of `exactKeys` equal. Empty when alike.
 */
export function shapeDifferences(shown: unknown, actual: unknown, path = '$', key = ''): string[] {
  const kind = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);
  if (kind(shown) !== kind(actual))
    return [`${path}: shown ${kind(shown)}, got ${kind(actual)} (${JSON.stringify(actual)})`];
  if (Array.isArray(shown)) {
    const got = actual as unknown[];
    if (got.length < shown.length) return [`${path}: shown ${shown.length} elements, got ${got.length}`];
    return shown.flatMap((element, i) => shapeDifferences(element, got[i], `${path}[${i}]`));
  }
  if (kind(shown) === 'object') {
    const got = actual as Record<string, unknown>;
    return Object.entries(shown as Record<string, unknown>).flatMap(([k, v]) =>
      Object.hasOwn(got, k) ? shapeDifferences(v, got[k], `${path}.${k}`, k) : [`${path}: no key ${k}`],
    );
  }
  if (typeof shown === 'string' && exactKeys.has(key) && shown !== actual)
    return [`${path}: shown ${JSON.stringify(shown)}, got ${JSON.stringify(actual)}`];
  return [];
}

/**
 * A line of terminal output reduced to its shape: times, ages, numbers and percentages, and the cells of bars and
 * maps that show occupancy, become placeholders; runs of spaces become one.
 */
export function textShape(line: string): string {
  return line
    .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, 'TIME')
    .replace(/\([^()\s]+ ago\)/g, '(AGE)')
    .replace(/<?\d+(\.\d+)?%/g, 'P%')
    .replace(/\d+/g, 'N')
    .replace(/[█░▏▎▍▌▋▊▉·]/g, 'c')
    .replace(/\s+/g, ' ')
    .trimEnd();
}
