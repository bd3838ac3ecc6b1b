import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { endpointOf, signerFor, type GlobalOptions } from '../context.ts';
import type { CliIo } from '../io.ts';
import { intArg } from '../options.ts';

interface ConsoleOptions {
  readonly port?: number;
  readonly sign?: boolean;
}

/**
 * `ipam console`: the web console for the endpoint, served from 127.0.0.1 (cli/console/server.ts). For an https
 * endpoint (a deployed stage) each API call is signed here with the user's AWS credentials, which never reach the
 * browser; the printed URL carries a token of this run, and requests with another Host or Origin are refused.
 */
export function addConsoleCommand(program: Command, io: CliIo): void {
  program
    .command('console')
    .option('--port <n>', 'local port to listen on (default: a free one)', intArg(0, 65_535))
    .option('--sign', 'sign API calls with SigV4 even for an http endpoint (https endpoints are always signed)')
    .description('Serve the web console on 127.0.0.1 for the endpoint, signing its API calls with your AWS credentials')
    .addHelpText(
      'after',
      [
        '',
        'Open the URL it prints (it carries a token of this run); Ctrl-C stops it.',
        '',
        'Examples:',
        '  ipam console                      # the local stack (npm start also serves it at /console/)',
        '  ipam --endpoint https://abc123.execute-api.eu-west-1.amazonaws.com --profile ops console --port 8001',
      ].join('\n'),
    )
    .action(async (options: ConsoleOptions, cmd: Command) => {
      const endpoint = endpointOf(cmd, io);
      const trace = cmd.optsWithGlobals<GlobalOptions>().verbose ? (line: string) => io.stderr(`${line}\n`) : undefined;
      const signer =
        endpoint.protocol === 'https:' || options.sign ? await signerFor(cmd, io, endpoint, trace) : undefined;
      // Loaded here only: the server and esbuild are no start-up cost for the other commands.
      const { startConsoleServer } = await import('../console/server.ts');
      const server = await startConsoleServer({
        upstream: endpoint,
        ...(options.port !== undefined ? { port: options.port } : {}),
        ...(signer ? { signer } : {}),
        token: randomBytes(24).toString('base64url'),
        log: (line) => io.stderr(`${line}\n`),
      });
      io.stdout(
        [
          `Console for ${endpoint.origin}${endpoint.pathname.replace(/\/+$/, '')} (${signer ? 'requests signed with SigV4' : 'requests not signed'}):`,
          `  ${server.consoleUrl}`,
          'Only this machine can reach it, and only with that URL. Ctrl-C stops it.',
          '',
        ].join('\n'),
      );
      await io.withInterrupt(
        (signal) =>
          new Promise<void>((resolveStop) => signal.addEventListener('abort', () => resolveStop(), { once: true })),
      );
      await server.close();
    });
}
