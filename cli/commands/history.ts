import { InvalidArgumentError, Option, type Command } from 'commander';
import type { Holding } from '../api/types.ts';
import { apiFor, poolOf, usageError } from '../context.ts';
import { renderResources, type ResourceView } from '../format/resources.ts';
import { age } from '../format/time.ts';
import type { CliIo } from '../io.ts';
import { durationArg, formatOf, intArg, outputOption, poolOption } from '../options.ts';
import { MAX_PAGE } from '../api/ipam-api.ts';

/** commander argParser: an instant, as RFC 3339 (2026-11-25T14:02:00Z) or a duration ago (90m). */
function instantArg(text: string): string | number {
  if (/^\d{4}-\d{2}-\d{2}T/.test(text)) {
    if (!Number.isFinite(Date.parse(text)))
      throw new InvalidArgumentError(
        'Expected an RFC 3339 time such as 2026-11-25T14:02:00Z, or a duration ago such as 90m.',
      );
    return text;
  }
  return durationArg(text);
}

const iso = (value: string | number, nowMs: number) =>
  typeof value === 'number' ? new Date(nowMs - value).toISOString() : value;

/** Holdings in a table: newest first; TO `-` while it lasts, `<=` before an end known as an upper bound (a client's release). */
export const holdingView: ResourceView<Holding> = {
  kind: 'holding',
  name: (h) => `${h.address}.${Date.parse(h.from) || h.from}`,
  columns: [
    { header: 'ADDRESS', value: (h) => h.address },
    { header: 'CLAIM', value: (h) => (h.kind === 'hold' ? `(held for ${h.claim})` : h.claim) },
    { header: 'OWNER', value: (h) => `${h.owner.kind}/${h.owner.name}` },
    { header: 'OWNER-UID', value: (h) => h.owner.uid, only: 'wide' },
    { header: 'CLAIM-UID', value: (h) => h.claimUid ?? '-', only: 'wide' },
    { header: 'RANGE', value: (h) => h.range, only: 'wide' },
    { header: 'FROM', value: (h) => h.from },
    { header: 'TO', value: (h) => (h.to === undefined ? '-' : h.toExact === false ? `<=${h.to}` : h.to) },
    { header: 'ENDED', value: (h) => h.endReason ?? (h.to === undefined ? 'held' : '-') },
    { header: 'AGE', value: (h, now) => age(h.from, now), only: 'narrow' },
  ],
};

/** `ipam history ADDRESS -p POOL [--at T | --since D]` and `ipam history --owner UID -p POOL`. */
export function addHistoryCommand(program: Command, io: CliIo): void {
  program
    .command('history')
    .argument('[address]', 'the address (any valid spelling)')
    .addOption(poolOption())
    .addOption(new Option('--owner <uid>', 'what an owner uid held, instead of an address'))
    .addOption(
      new Option('--at <time>', 'who held the address at this instant: RFC 3339, or a duration ago (90m)').argParser(
        instantArg,
      ),
    )
    .addOption(
      new Option('--since <duration>', 'holdings that lasted into the last DURATION (24h)').argParser(durationArg),
    )
    .addOption(
      new Option('--limit <n>', 'one page of at most N holdings (default: every page)').argParser(intArg(1, MAX_PAGE)),
    )
    .addOption(new Option('--cursor <cursor>', 'the page after this one (with --limit)'))
    .addOption(outputOption())
    .description(
      "Who held an address (newest first), who held it at an instant, or what an owner held; ended holdings lag the leases by the stream's delay (completeUntil)",
    )
    .addHelpText(
      'after',
      '\nExamples:\n  ipam history 10.96.0.10 -p services --since 24h\n  ipam history 10.96.0.10 -p services --at 2026-11-25T14:02:00Z\n  ipam history --owner 3f1c -p services',
    )
    .action(
      async (
        address: string | undefined,
        options: {
          owner?: string;
          at?: string | number;
          since?: number;
          limit?: number;
          cursor?: string;
          output?: string;
        },
        cmd: Command,
      ) => {
        if ((address === undefined) === (options.owner === undefined))
          usageError(cmd, 'give an ADDRESS or --owner UID (one of them).');
        if (options.owner !== undefined && (options.at !== undefined || options.since !== undefined))
          usageError(cmd, '--at and --since go with an ADDRESS, not --owner.');
        if (
          options.at !== undefined &&
          (options.since !== undefined || options.limit !== undefined || options.cursor !== undefined)
        )
          usageError(cmd, '--at asks about one instant: not with --since, --limit or --cursor.');
        const pool = poolOf(cmd, io);
        const api = await apiFor(cmd, io);
        const now = io.now();
        const format = formatOf(options.output);
        if (address !== undefined && options.at !== undefined) {
          const answer = await api.addressAt(pool, address, iso(options.at, now));
          if (format === 'json' || format === 'yaml') {
            io.stdout(renderResources(holdingView, { item: answer as unknown as Holding }, format, now).out);
          } else if (answer.holding) {
            io.stdout(renderResources(holdingView, { item: answer.holding }, format, now).out);
          } else {
            io.stdout(`Nobody held ${address} at ${answer.at}.\n`);
          }
          warnIncomplete(io, answer.completeUntil, answer.at);
          return;
        }
        const list = {
          ...(options.limit !== undefined ? { limit: options.limit } : {}),
          ...(options.cursor !== undefined ? { cursor: options.cursor } : {}),
        };
        const page =
          address !== undefined
            ? await api.addressHistory(pool, address, {
                ...list,
                ...(options.since !== undefined ? { from: new Date(now - options.since).toISOString() } : {}),
              })
            : await api.ownerHistory(pool, options.owner!, list);
        const { out, err } = renderResources(holdingView, { page }, format, now);
        io.stdout(out);
        if (err) io.stderr(err);
        warnIncomplete(io, page.completeUntil, new Date(now).toISOString());
      },
    );
}

/** Says on stderr when the question reaches past what the history has recorded (it lags the leases). */
function warnIncomplete(io: CliIo, completeUntil: string | undefined, asked: string): void {
  if (completeUntil !== undefined && Date.parse(completeUntil) <= Date.parse(asked))
    io.stderr(`(history complete before ${completeUntil}; lease changes from then on may not be recorded yet)\n`);
}
