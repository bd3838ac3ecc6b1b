import { Command, CommanderError } from 'commander';
import { addCompletionCommand } from './commands/completion.ts';
import { addConsoleCommand } from './commands/console.ts';
import { addDescribeCommand } from './commands/describe.ts';
import { addGetCommand } from './commands/get.ts';
import { addHistoryCommand } from './commands/history.ts';
import { addImportCommand } from './commands/import.ts';
import { addMapCommand } from './commands/map.ts';
import { addMutationCommands } from './commands/mutate.ts';
import { DEFAULT_ENDPOINT } from './context.ts';
import { ExitCode } from './errors.ts';
import type { CliIo } from './io.ts';
import packageJson from '../package.json' with { type: 'json' };

const EXAMPLES = `
Examples:
  ipam create pool services --exclude 10.96.0.0/29
  ipam create range services 10.96.0.0/24
  ipam claim services --name web --owner Service/web/3f1c
  ipam get claims -p services -o wide
  ipam describe pool services
  ipam map services 10.96.0.0-24
  ipam console
  ipam history 10.96.0.10 -p services --since 24h
  ipam --endpoint https://abc123.execute-api.eu-west-1.amazonaws.com --profile ops get pools

The local stack (npm start) is the default endpoint; https endpoints are signed with SigV4 from the standard AWS
credential chain. docs/cli.md has every command.
`;

/** The whole command tree. Settings given before the subcommands are added are inherited by each of them. */
export function buildProgram(io: CliIo): Command {
  const program = new Command('ipam')
    .description('A command-line client of the serverless IPAM, in the habits of kubectl')
    .version(packageJson.version, '--version')
    .option('--endpoint <url>', `API base URL (default: $IPAM_ENDPOINT, else ${DEFAULT_ENDPOINT}, the local stack)`)
    .option('--profile <name>', 'AWS profile for signing requests to an https endpoint')
    .option('--region <region>', "AWS region to sign for (default: the execute-api hostname's, else AWS_REGION)")
    .option(
      '--as <arn>',
      'local stack only: act as this IAM principal (x-ipam-principal header; default: $IPAM_PRINCIPAL)',
    )
    .option('-v, --verbose', 'print each request and response on stderr')
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .exitOverride()
    .showHelpAfterError()
    .showSuggestionAfterError()
    .configureHelp({ sortSubcommands: false, showGlobalOptions: true })
    .addHelpText('after', EXAMPLES);
  addGetCommand(program, io);
  addDescribeCommand(program, io);
  addMutationCommands(program, io);
  addMapCommand(program, io);
  addConsoleCommand(program, io);
  addHistoryCommand(program, io);
  addCompletionCommand(program, io);
  addImportCommand(program, io);
  // kubectl's and the AWS CLI's habit: a `version` command beside the --version flag.
  program
    .command('version')
    .description("Print this client's version")
    .action(() => io.stdout(`ipam ${packageJson.version}\n`));
  return program;
}

/**
 * Runs one command line and returns the exit code: 0, 1 when the request failed (a problem document becomes
 * `error: <code>: <detail>`), 2 for a wrong command line (commander has printed the error and the command's help).
 */
export async function run(argv: readonly string[], io: CliIo): Promise<number> {
  const program = buildProgram(io);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return ExitCode.Ok;
  } catch (error) {
    return report(error, io);
  }
}

function report(error: unknown, io: CliIo): number {
  if (error instanceof CommanderError) {
    // Commander has printed the error and the help. --help and --version end through here too, with nothing wrong.
    return error.code === 'commander.helpDisplayed' || error.code === 'commander.version'
      ? ExitCode.Ok
      : ExitCode.Usage;
  }
  // ProblemError, ConnectionError, HttpStatusError and ConfigError carry a sentence meant for the user; anything else
  // (a bug, an unexpected answer) is shown the same way rather than as a stack trace.
  io.stderr(`error: ${error instanceof Error ? error.message : String(error)}\n`);
  return ExitCode.Failure;
}
