import { writeFile } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';

/**
 * Everything the CLI takes from its process: streams, environment, clock, network, files and Ctrl-C. Commands see
 * only this, so unit tests run them with a fake clock, a recording fetch and captured output.
 */
export interface CliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Whether stdout is a terminal: colours, and `--watch` redraws in place instead of printing each change. */
  readonly isTTY: boolean;
  /** Terminal width in columns (80 when not a terminal). */
  readonly columns: number;
  readonly now: () => number;
  readonly fetch: typeof fetch;
  /** Waits `ms`, or less when `signal` aborts (it then resolves, not rejects: an interrupt ends a watch normally). */
  readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly writeFile: (path: string, data: string) => Promise<void>;
  /** Runs `fn` with a signal that aborts on Ctrl-C; outside it, Ctrl-C ends the process as usual. */
  readonly withInterrupt: <T>(fn: (signal: AbortSignal) => Promise<T>) => Promise<T>;
}

/** The real process. */
export function processIo(): CliIo {
  return {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
    env: process.env,
    isTTY: process.stdout.isTTY === true,
    columns: process.stdout.columns ?? 80,
    now: () => Date.now(),
    fetch: (input, init) => fetch(input, init),
    sleep: (ms, signal) => delay(ms, undefined, signal ? { signal } : {}).catch(() => undefined),
    writeFile: (path, data) => writeFile(path, data, 'utf8'),
    withInterrupt: async (fn) => {
      const controller = new AbortController();
      const onSigint = () => controller.abort();
      process.once('SIGINT', onSigint);
      try {
        return await fn(controller.signal);
      } finally {
        process.removeListener('SIGINT', onSigint);
      }
    },
  };
}
