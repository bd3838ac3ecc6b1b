import { Option, type Command } from 'commander';
import type { IpamApi } from '../api/ipam-api.ts';
import type { Claim, Lease, Page, Pool, Range, RepairEvent } from '../api/types.ts';
import { apiFor, poolOf } from '../context.ts';
import { isNotFound, ProblemError } from '../errors.ts';
import {
  claimView,
  eventView,
  leaseView,
  poolView,
  rangeView,
  renderResources,
  type ResourceView,
} from '../format/resources.ts';
import type { CliIo } from '../io.ts';
import { collect, durationArg, formatOf, intArg, outputOption, poolOption } from '../options.ts';
import { watch } from '../watch.ts';

interface GetOptions {
  readonly pool?: string;
  readonly output?: string;
  readonly limit?: number;
  readonly cursor?: string;
  readonly watch?: boolean;
  readonly interval: number;
  readonly watchFor: number;
  readonly owner?: string;
  readonly selector?: string[];
  readonly range?: string;
  readonly allPools?: boolean;
}

type Read<T> = (
  api: IpamApi,
  options: GetOptions,
  name: string | undefined,
) => Promise<{ page: Page<T> } | { item: T }>;

interface Noun<T> {
  readonly name: string;
  readonly aliases: readonly string[];
  readonly summary: string;
  /** The NAME argument, when one item can be read by name. */
  readonly argument?: string;
  readonly needsPool: boolean;
  /**
   * Read across every pool instead (kubectl's -A): `list` when the noun has --all-pools and it is given; `lookup` for a
   * NAME given without -p or IPAM_POOL. Items gain their pool, shown in a POOL column.
   */
  readonly acrossPools?: 'list' | 'lookup';
  readonly view: ResourceView<T>;
  readonly read: Read<T>;
  /** Options of this noun only; a factory, since a commander Option belongs to one command tree. */
  readonly extra?: () => Option[];
  readonly example: string;
}

// Each noun is checked against its own item type (satisfies), then kept in one list as Noun<unknown>: its view and
// reader are only ever used together, on the items the reader returned.
const nouns = [
  {
    name: 'pools',
    aliases: ['pool', 'po'],
    summary: 'pools, or one pool by name',
    argument: '[name]',
    needsPool: false,
    view: poolView,
    read: async (api, o, name) => (name ? { item: await api.getPool(name) } : { page: await api.listPools(o) }),
    example: 'ipam get pools\n  ipam get pool services -o yaml',
  } satisfies Noun<Pool>,
  {
    name: 'ranges',
    aliases: ['range', 'rg'],
    summary: "a pool's ranges with their state and use",
    argument: '[name]',
    needsPool: true,
    view: rangeView,
    read: async (api, o, name) =>
      name ? { item: await api.getRange(o.pool!, name) } : { page: await api.listRanges(o.pool!) },
    example: 'ipam get ranges -p services -o wide',
  } satisfies Noun<Range>,
  {
    name: 'claims',
    aliases: ['claim', 'cl'],
    summary: "a pool's held claims (every page unless --limit)",
    argument: '[name]',
    needsPool: true,
    view: claimView,
    read: async (api, o, name) =>
      name
        ? { item: await api.getClaim(o.pool!, name) }
        : {
            page: await api.listClaims(o.pool!, {
              ...o,
              ...(o.owner ? { owner: o.owner } : {}),
              ...(o.selector?.length ? { labelSelector: o.selector.join(',') } : {}),
            }),
          },
    acrossPools: 'list',
    extra: () => [
      new Option('-A, --all-pools', "every pool's claims (kubectl's --all-namespaces)"),
      new Option('--owner <uid>', 'only claims of this owner uid'),
      new Option(
        '-l, --selector <key=value,...>',
        'only claims with every one of these labels (equality only; repeatable)',
      ).argParser(collect),
    ],
    example:
      'ipam get claims -p services\n  ipam get claims -A\n  ipam get claims -p services --owner c-19 -o name\n  ipam get claims -p pods -l cni.ipam/node=node-1,cni.ipam/network=pods -o wide',
  } satisfies Noun<Claim>,
  {
    name: 'addresses',
    aliases: ['address', 'addr', 'ip'],
    summary: "a pool's held addresses in address order, or who holds one",
    argument: '[address]',
    needsPool: true,
    view: leaseView,
    read: async (api, o, name) =>
      name
        ? { item: await api.getAddress(o.pool!, name) }
        : { page: await api.listAddresses(o.pool!, { ...o, ...(o.range ? { range: o.range } : {}) }) },
    acrossPools: 'lookup',
    extra: () => [new Option('--range <name>', 'only addresses of this range')],
    example:
      'ipam get addresses -p services --range 10.96.0.0-24\n  ipam get address 10.96.0.10 -p services\n  ipam get address 10.96.0.10     # found in whichever pool holds it',
  } satisfies Noun<Lease>,
  {
    name: 'events',
    aliases: ['event', 'ev'],
    summary: 'what the reconciler repaired in a pool in the last 24 h',
    needsPool: true,
    view: eventView,
    read: async (api, o) => ({ page: await api.listEvents(o.pool!, o) }),
    example: 'ipam get events -p services --watch',
  } satisfies Noun<RepairEvent>,
].map((n) => n as Noun<unknown>);

/** `ipam get <noun> [NAME]`: kubectl's get, with -o, paging, and --watch. */
export function addGetCommand(program: Command, io: CliIo): void {
  const get = program
    .command('get')
    .description(
      'Show resources in a table (or -o wide|json|yaml|name); a list follows every page unless --limit is given',
    )
    .addHelpText(
      'after',
      '\nExamples:\n  ipam get pools\n  ipam get claims -p services -o wide\n  ipam get events -p services --watch',
    );
  for (const noun of nouns) addNoun(get, io, noun);
}

function addNoun<T>(get: Command, io: CliIo, noun: Noun<T>): void {
  const cmd = get
    .command(noun.name)
    .aliases([...noun.aliases])
    .description(`Show ${noun.summary}`);
  if (noun.argument) cmd.argument(noun.argument);
  if (noun.needsPool) cmd.addOption(poolOption());
  cmd
    .addOption(outputOption())
    .option('--limit <n>', 'one page of at most n items (1-1000); its next cursor is printed', intArg(1, 1000))
    .option('--cursor <cursor>', 'the page after this cursor (with --limit)')
    .option('-w, --watch', 'poll and redraw until Ctrl-C or --watch-for')
    // Defaults in milliseconds, shown as the durations one would type.
    .addOption(
      new Option('--interval <duration>', 'time between two polls of --watch')
        .argParser(durationArg)
        .default(2000, '2s'),
    )
    .addOption(
      new Option('--watch-for <duration>', 'how long --watch runs at most')
        .argParser(durationArg)
        .default(3_600_000, '1h'),
    );
  for (const option of noun.extra?.() ?? []) cmd.addOption(option);
  cmd.addHelpText('after', `\nExamples:\n  ${noun.example}`);
  cmd.action(async (...args: unknown[]) => {
    const command = args[args.length - 1] as Command;
    const name = noun.argument ? (args[0] as string | undefined) : undefined;
    const parsed = command.opts<GetOptions>();
    const across =
      (noun.acrossPools === 'list' && parsed.allPools) ||
      (noun.acrossPools === 'lookup' && name !== undefined && parsed.pool === undefined && !io.env.IPAM_POOL);
    const options: GetOptions = noun.needsPool && !across ? { ...parsed, pool: poolOf(command, io) } : parsed;
    const api = await apiFor(command, io);
    const format = formatOf(options.output);
    if (across) {
      const view = withPool(noun.view);
      const read =
        noun.acrossPools === 'list'
          ? await listAcross(api, noun, options)
          : await lookupAcross(api, noun, options, name!);
      const { out, err } = renderResources(view, read, format, io.now());
      io.stdout(out);
      if (err) io.stderr(err);
      return;
    }
    if (!options.watch) {
      const { out, err } = renderResources(noun.view, await noun.read(api, options, name), format, io.now());
      io.stdout(out);
      if (err) io.stderr(err);
      return;
    }
    await watch(
      io,
      async () => {
        const read = await noun.read(api, options, name);
        const { out, err } = renderResources(noun.view, read, format, io.now());
        return { text: out || (err ?? ''), key: JSON.stringify(read) };
      },
      {
        intervalMs: options.interval,
        forMs: options.watchFor,
        title: `ipam get ${noun.name}${name ? ` ${name}` : ''}${options.pool ? ` -p ${options.pool}` : ''}`,
      },
    );
  });
}

type InPool<T> = T & { readonly pool: string };

/** A view with the item's pool as its first column (kubectl -A's NAMESPACE). */
function withPool<T>(view: ResourceView<T>): ResourceView<InPool<T>> {
  return { ...view, columns: [{ header: 'POOL', value: (item) => item.pool }, ...view.columns] };
}

/** Every pool's page of the noun, one pool after another (one listing of pools, then the noun's reads per pool). */
async function listAcross<T>(api: IpamApi, noun: Noun<T>, options: GetOptions): Promise<{ page: Page<InPool<T>> }> {
  const items: InPool<T>[] = [];
  for (const pool of (await api.listPools()).items) {
    const read = await noun.read(api, { ...options, pool: pool.name }, undefined);
    if ('page' in read) items.push(...read.page.items.map((item) => ({ ...item, pool: pool.name })));
  }
  return { page: { items } };
}

/** The named item in the first pool that has it (pools in listing order); NotFound naming none. */
async function lookupAcross<T>(
  api: IpamApi,
  noun: Noun<T>,
  options: GetOptions,
  name: string,
): Promise<{ item: InPool<T> }> {
  for (const pool of (await api.listPools()).items) {
    try {
      const read = await noun.read(api, { ...options, pool: pool.name }, name);
      if ('item' in read) return { item: { ...read.item, pool: pool.name } };
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
  throw new ProblemError(404, 'NotFound', `address ${name} is held in no pool.`);
}
