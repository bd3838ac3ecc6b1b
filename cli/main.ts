import { processIo } from './io.ts';
import { run } from './program.ts';

/** The `ipam` process: runs the command line and leaves with its exit code once output has drained. */
export async function main(argv: readonly string[]): Promise<void> {
  // exitCode rather than process.exit(): stdout into a pipe is written asynchronously, and exit() would cut a long
  // `-o json` short.
  process.exitCode = await run(argv, processIo());
}
