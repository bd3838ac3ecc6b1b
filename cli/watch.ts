import type { CliIo } from './io.ts';

export interface WatchOptions {
  /** Time between two reads. */
  readonly intervalMs: number;
  /** The loop ends after this long (it is bounded: a forgotten `--watch` does not poll a deployed API for ever). */
  readonly forMs: number;
  /** Heading of each redraw on a terminal, e.g. the command line. */
  readonly title: string;
}

/** Clears a terminal and puts the cursor at the top left. */
const CLEAR = '\x1b[H\x1b[2J';

/** One round of a watch: the text to show, and what identifies its content (ages move every round; data does not). */
export interface WatchFrame {
  readonly text: string;
  readonly key: string;
}

/**
 * Polls `render` and shows what it returns, like `watch` or `kubectl get -w`: on a terminal each round redraws the
 * screen under a heading; into a pipe or file a frame is printed only when its key changed, so a log of a watch is
 * a log of changes.
 * Ends at `forMs`, or at Ctrl-C (exit 0 either way); an error from `render` ends it with that error.
 * @returns how many times `render` ran.
 */
export async function watch(io: CliIo, render: () => Promise<WatchFrame>, options: WatchOptions): Promise<number> {
  const deadline = io.now() + options.forMs;
  return io.withInterrupt(async (signal) => {
    let rounds = 0;
    let last: string | undefined;
    for (;;) {
      const { text, key } = await render();
      rounds += 1;
      if (io.isTTY) {
        io.stdout(
          `${CLEAR}Every ${options.intervalMs / 1000}s: ${options.title}    ${new Date(io.now()).toISOString()}\n\n${text}`,
        );
      } else if (key !== last) {
        io.stdout(last === undefined ? text : `\n${text}`);
      }
      last = key;
      if (signal.aborted || io.now() + options.intervalMs > deadline) return rounds;
      await io.sleep(options.intervalMs, signal);
      if (signal.aborted) return rounds;
    }
  });
}
