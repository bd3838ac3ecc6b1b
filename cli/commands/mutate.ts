import { InvalidArgumentError, Option, type Command } from 'commander';
import { parseLabelSelector, type LabelSelector } from '../../shared/core/labels.ts';
import { stringify as stringifyYaml } from 'yaml';
import type { IpamApi } from '../api/ipam-api.ts';
import type { Claim, ClaimRenewal, ClaimSpec, Family, Labels, Owner, PoolSpec } from '../api/types.ts';
import { apiFor, usageError } from '../context.ts';
import { isNotFound } from '../errors.ts';
import {
  OutputFormat,
  claimView,
  poolView,
  rangeView,
  renderResources,
  type ResourceView,
} from '../format/resources.ts';
import { blockSizesText, growText } from '../format/blocks.ts';
import { expiry, formatSeconds } from '../format/time.ts';
import type { CliIo } from '../io.ts';
import { collect, durationArg, formatOf, intArg, outputOption, secondsArg } from '../options.ts';

/** `-o` of commands that change something: the object as JSON or YAML, its name, or a sentence (the default). */
const MUTATION_OUTPUTS = ['json', 'yaml', 'name'] as const;

/** `Service/web/3f1c` -> an owner; the uid keeps any further slashes. */
export function parseOwner(text: string): Owner {
  const first = text.indexOf('/');
  const second = first < 0 ? -1 : text.indexOf('/', first + 1);
  const owner = { kind: text.slice(0, first), name: text.slice(first + 1, second), uid: text.slice(second + 1) };
  if (second < 0 || !owner.kind || !owner.name || !owner.uid)
    throw new InvalidArgumentError('Expected KIND/NAME/UID, as in Service/web/3f1c.');
  return owner;
}

export function familyArg(text: string, previous: Family[] | undefined): Family[] {
  const family = ({ ipv4: 'IPv4', ipv6: 'IPv6', '4': 'IPv4', '6': 'IPv6' } as const)[text.toLowerCase() as 'ipv4'];
  if (!family) throw new InvalidArgumentError('Expected IPv4 or IPv6.');
  return [...(previous ?? []), family];
}

const DUAL_STACK = { require: 'RequireDualStack', prefer: 'PreferDualStack', single: 'SingleStack' } as const;

export interface ClaimOptions {
  readonly name?: string;
  readonly generateName?: string;
  readonly owner: Owner;
  readonly dualStack?: keyof typeof DUAL_STACK;
  readonly family?: Family[];
  readonly address?: string[];
  readonly ttl?: number;
  readonly count?: number;
  readonly label?: Labels;
  readonly output?: string;
  /** Explicit blocks of a block pool (canonical CIDRs). */
  readonly prefix?: string[];
  /** Preview: what the claim would get now, nothing written. */
  readonly dryRun?: boolean;
}

/** commander argParser of a block length, '/26' or '26'. */
function blockArg(bits: number): (value: string) => number {
  return (value) => {
    const text = value.startsWith('/') ? value.slice(1) : value;
    const n = Number(text);
    if (!/^\d{1,3}$/.test(text) || n < 1 || n > bits)
      throw new InvalidArgumentError(`a prefix length from /1 to /${bits}, as in /${bits === 32 ? 26 : 64}.`);
    return n;
  };
}

/** commander argParser of a nested range's source, POOL/CLAIM. */
function sourceArg(value: string): { pool: string; claim: string } {
  const [pool, claim, ...rest] = value.split('/');
  if (!pool || !claim || rest.length > 0)
    throw new InvalidArgumentError('the parent pool and its block claim as POOL/CLAIM, as in org/eu-west.');
  return { pool, claim };
}

/** The block a nested range's source claim holds: the CIDR `create range` takes when none is given. */
async function sourceBlock(
  api: Awaited<ReturnType<typeof apiFor>>,
  source: { pool: string; claim: string } | undefined,
  cmd: Command,
): Promise<string> {
  if (!source) usageError(cmd, 'create range needs a CIDR, or --source POOL/CLAIM to take its block.');
  const { addresses } = await api.getClaim(source.pool, source.claim);
  const blocks = addresses.flatMap((a) => (a.prefix ? [a.prefix] : []));
  if (blocks.length === 0)
    usageError(cmd, `claim ${source.claim} of pool ${source.pool} holds no block: ${source.pool} is not a block pool.`);
  if (blocks.length > 1)
    usageError(cmd, `claim ${source.claim} holds ${blocks.join(' and ')}: name the one to use as the CIDR.`);
  return blocks[0]!;
}

/** The API's bounds: `count` addresses per family, a pool's `reuseDelaySeconds` (7 days). */
export const MAX_COUNT = 32;
export const MAX_REUSE_DELAY_SECONDS = 604_800;
/** The API's bound of a grow rule's `maxBlocks` (blocks taken from the parent per family). */
export const MAX_GROW_BLOCKS = 64;

interface CreatePoolOptions {
  readonly exclude?: string[];
  readonly reuseDelay?: number;
  readonly block?: number;
  readonly block6?: number;
  readonly grow?: string;
  readonly growBelowFree?: number;
  readonly growMaxBlocks?: number;
  readonly openToChildPools?: boolean;
  readonly dnsZone?: string;
  readonly dnsTtl?: number;
  readonly dnsReverse?: boolean;
  readonly dnsTarget?: Record<string, unknown>;
  readonly output?: string;
}

/** The API's bound of a pool's `dns.ttlSeconds` (a day). */
export const MAX_DNS_TTL_SECONDS = 86_400;

/** commander argParser of --dns-target: a JSON object, as the API takes it; the service checks what is inside. */
function dnsTargetArg(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new InvalidArgumentError(
      'Expected a JSON object such as \'{"route53":{"hostedZoneId":"Z123"}}\' or \'{"rfc2136":{"server":"10.0.0.53","keyName":"ipam","secretFrom":"env:IPAM_TSIG_SECRET"}}\'.',
    );
  return value as Record<string, unknown>;
}

/**
 * The `dns` of `create pool`, or undefined without --dns-zone. No target given: the service's default (the local
 * stack's own DNS server; a deployed stack asks for one).
 */
function dnsOf(options: CreatePoolOptions, cmd: Command): PoolSpec['dns'] {
  if (options.dnsZone === undefined) {
    if (options.dnsTtl !== undefined || options.dnsReverse || options.dnsTarget !== undefined)
      usageError(cmd, '--dns-ttl, --dns-reverse and --dns-target belong to a DNS zone: give it with --dns-zone ZONE.');
    return undefined;
  }
  return {
    zone: options.dnsZone,
    ...(options.dnsTtl !== undefined ? { ttlSeconds: options.dnsTtl } : {}),
    ...(options.dnsReverse ? { reverse: true } : {}),
    ...(options.dnsTarget !== undefined ? { target: options.dnsTarget } : {}),
  } as PoolSpec['dns'];
}

/** `, dns pods.example.internal. (local target, reverse)` for a pool with dns. */
function dnsText(pool: { dns?: { zone: string; reverse?: boolean; target?: object } }): string {
  if (!pool.dns) return '';
  const kind = Object.keys(pool.dns.target ?? {})[0];
  const notes = [...(kind ? [`${kind} target`] : []), ...(pool.dns.reverse ? ['reverse'] : [])];
  return `, dns ${pool.dns.zone}${notes.length ? ` (${notes.join(', ')})` : ''}`;
}

/**
 * The grow rule of `create pool`, or undefined without --grow. Its threshold is required, as the API requires it: a
 * default here would be a rule the user never chose. @throws the usage error when the flags do not make a rule
 */
function growRuleOf(options: CreatePoolOptions, cmd: Command): PoolSpec['grow'] {
  if (options.grow === undefined) {
    if (options.growBelowFree !== undefined || options.growMaxBlocks !== undefined)
      usageError(
        cmd,
        '--grow-below-free and --grow-max-blocks belong to a grow rule: give the parent pool with --grow PARENT.',
      );
    return undefined;
  }
  if (options.growBelowFree === undefined)
    usageError(
      cmd,
      '--grow needs --grow-below-free N: the free positions (addresses, or blocks in a block pool) below which the pool takes one more block from its parent.',
    );
  return {
    pool: options.grow,
    belowFree: options.growBelowFree,
    ...(options.growMaxBlocks !== undefined ? { maxBlocks: options.growMaxBlocks } : {}),
  };
}

/** The claim spec a command line asks for; TTLs are whole seconds, rounded up so `--ttl 1500ms` is not 1 s. */
export function claimSpecOf(options: ClaimOptions): ClaimSpec {
  return {
    ...(options.name !== undefined ? { name: options.name } : {}),
    ...(options.generateName !== undefined ? { generateName: options.generateName } : {}),
    owner: options.owner,
    ...(options.dualStack ? { ipFamilyPolicy: DUAL_STACK[options.dualStack] } : {}),
    ...(options.family?.length ? { ipFamilies: options.family } : {}),
    ...(options.address?.length ? { addresses: options.address } : {}),
    ...(options.ttl !== undefined ? { ttlSeconds: Math.ceil(options.ttl / 1000) } : {}),
    ...(options.count !== undefined ? { count: options.count } : {}),
    ...(options.label !== undefined ? { labels: options.label } : {}),
    ...(options.prefix?.length ? { prefixes: options.prefix } : {}),
    ...(options.dryRun ? { dryRun: true } : {}),
  };
}

/**
 * commander argParser of a repeatable `-l k=v` (or `k=v,k2=v2`): checked with the service's own rules (labels.ts), so a
 * typo is a usage error before any request; one key given twice with two values is refused.
 */
export function labelArg(text: string, previous: Labels | undefined): Labels {
  const labels: Record<string, string> = { ...previous };
  let pairs: LabelSelector;
  try {
    pairs = parseLabelSelector(text, '--label');
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
  if (pairs.length === 0) throw new InvalidArgumentError('Expected KEY=VALUE, as in app=web.');
  for (const [key, value] of pairs) {
    if (Object.hasOwn(labels, key) && labels[key] !== value)
      throw new InvalidArgumentError(
        `Label ${JSON.stringify(key)} is given twice, with ${JSON.stringify(labels[key])} and ${JSON.stringify(value)}.`,
      );
    labels[key] = value;
  }
  return labels;
}

/**
 * `claim/web created: 10.96.0.187 (10.96.0.0-24), expires in 5m`. Addresses that follow each other in one range name it
 * once, so a batch reads `claim/workers created: 8 addresses per family: 10.96.0.23, 10.96.0.24, ... (10.96.0.0-24)`.
 */
export function claimSentence(claim: Claim, verb: string, nowMs: number): string {
  const groups: { range: string; addresses: string[] }[] = [];
  for (const a of claim.addresses) {
    const last = groups[groups.length - 1];
    // A block pool's claim shows its blocks as CIDRs.
    const shown = a.prefix ?? a.address;
    if (last?.range === a.range) last.addresses.push(shown);
    else groups.push({ range: a.range, addresses: [shown] });
  }
  const addresses = groups.map((g) => `${g.addresses.join(', ')} (${g.range})`).join(', ');
  const count = claim.count !== undefined && claim.count > 1 ? `${claim.count} addresses per family: ` : '';
  // A preview in a pool that grows names the blocks a real claim would first take from the parent.
  const grows = (claim.grows ?? []).map(
    (g) => `block ${g.cidr} of pool ${g.pool} (its claim ${g.claim}) as range ${g.range}`,
  );
  const growth = grows.length ? `The pool would first grow: ${grows.join(', and ')}.\n` : '';
  return `claim/${claim.name} ${verb}: ${count}${addresses || 'no address'}${claim.expiresAt ? `, ${expiry(claim.expiresAt, nowMs)}` : ''}\n${growth}`;
}

function print<T>(io: CliIo, view: ResourceView<T>, item: T, output: string | undefined, sentence: string): void {
  const format = formatOf(output);
  if (format === OutputFormat.Table) io.stdout(sentence);
  else io.stdout(renderResources(view, { item }, format, io.now()).out);
}

/** create, claim, renew, release, release-owner, delete. */
export function addMutationCommands(program: Command, io: CliIo): void {
  const create = program
    .command('create')
    .description('Create a pool or a range')
    .addHelpText(
      'after',
      '\nExamples:\n  ipam create pool services --exclude 10.96.0.0/29\n  ipam create pool pods --reuse-delay 10m\n  ipam create range services 10.96.0.0/24',
    );

  create
    .command('pool')
    .argument('<name>', 'a DNS label: lower-case letters, digits and dashes')
    .option(
      '--exclude <cidr>',
      'a CIDR or address never handed out dynamically (repeat, or separate with commas)',
      collect,
    )
    .option(
      '--reuse-delay <duration>',
      "how long a released address stays held for its previous owner (kind and name) before anyone else may take it (10m, 1h, or seconds; at most 168h; fixed for the pool's life)",
      secondsArg(MAX_REUSE_DELAY_SECONDS),
    )
    .option(
      '--block <length>',
      'make a block pool: its claims take aligned IPv4 blocks of this length (/26) instead of addresses',
      blockArg(32),
    )
    .option('--block6 <length>', "the block pool's IPv6 block length (/64)", blockArg(128))
    .option(
      '--grow <parent>',
      'grow on demand: take one more block from this parent block pool when free space falls below --grow-below-free',
    )
    .option(
      '--grow-below-free <n>',
      'with --grow: the free positions of a family (addresses, or blocks in a block pool) below which to grow',
      intArg(1, Number.MAX_SAFE_INTEGER),
    )
    .option(
      '--grow-max-blocks <n>',
      `with --grow: most blocks taken from the parent per family (1-${MAX_GROW_BLOCKS}; default 16)`,
      intArg(1, MAX_GROW_BLOCKS),
    )
    .option(
      '--open-to-child-pools',
      "let other pools use this pool's blocks (nested ranges with --source, growth with --grow): a pool without access must consent (docs/blocks.md)",
    )
    .option(
      '--dns-zone <zone>',
      "publish each claim's name (its hostname, or its name) in this DNS zone, with an A/AAAA record per address (docs/dns.md)",
    )
    .option(
      '--dns-ttl <duration>',
      "with --dns-zone: the records' TTL (60s by default; at most 24h)",
      secondsArg(MAX_DNS_TTL_SECONDS),
    )
    .option('--dns-reverse', 'with --dns-zone: also a PTR record per address in its reverse zone')
    .option(
      '--dns-target <json>',
      "with --dns-zone: the DNS server, as the API's dns.target (default on the local stack: its own server, 127.0.0.1:5300)",
      dnsTargetArg,
    )
    .addOption(outputOption(MUTATION_OUTPUTS))
    .description('Create a pool (409 Conflict if it exists)')
    .addHelpText(
      'after',
      '\nExamples:\n  ipam create pool services --exclude 10.96.0.0/29 --exclude 10.96.0.8,10.96.0.9\n  ipam create pool pods --reuse-delay 10m\n  ipam create pool node-blocks --block /26 --block6 /122\n  ipam create pool region-eu-west --block /24 --open-to-child-pools\n  ipam create pool node-1 --grow region-eu-west --grow-below-free 16 --grow-max-blocks 4\n  ipam create pool pods --dns-zone pods.example.internal --dns-reverse',
    )
    .action(async (name: string, options: CreatePoolOptions, cmd: Command) => {
      const grow = growRuleOf(options, cmd);
      const dns = dnsOf(options, cmd);
      const blocks = {
        ...(options.block !== undefined ? { IPv4: options.block } : {}),
        ...(options.block6 !== undefined ? { IPv6: options.block6 } : {}),
      };
      const spec = {
        name,
        exclude: options.exclude ?? [],
        ...(options.reuseDelay !== undefined ? { reuseDelaySeconds: options.reuseDelay } : {}),
        ...(Object.keys(blocks).length ? { blockPrefixLength: blocks } : {}),
        ...(grow ? { grow } : {}),
        ...(options.openToChildPools ? { openToChildPools: true } : {}),
        ...(dns ? { dns } : {}),
      };
      const { pool } = await (await apiFor(cmd, io)).createPool(spec);
      const delay = pool.reuseDelaySeconds ? `, reuse delay ${formatSeconds(pool.reuseDelaySeconds)}` : '';
      const sizes = blockSizesText(pool);
      const block = sizes ? `, blocks ${sizes}` : '';
      const grows = pool.grow ? `, grows from ${pool.grow.pool}: ${growText(pool)}` : '';
      const open = pool.openToChildPools ? ', open to child pools' : '';
      print(
        io,
        poolView,
        pool,
        options.output,
        `pool/${pool.name} created${delay}${block}${grows}${open}${dnsText(pool)}\n`,
      );
    });

  create
    .command('range')
    .argument('<pool>')
    .argument(
      '[cidr]',
      "a canonical CIDR such as 10.96.0.0/24 or fd00:10:96::/112 (with --source, default: the claim's block)",
    )
    .option('--name <name>', "the range's name (default: the CIDR with '/' as '-')")
    .option('--legacy', "the pool's bitmap-mirrored range of its family")
    .option(
      '--source <pool/claim>',
      'a nested pool: the CIDR is the block this claim of the parent pool holds',
      sourceArg,
    )
    .addOption(outputOption(MUTATION_OUTPUTS))
    .description('Add a range to a pool (an identical range is left as it is)')
    .addHelpText(
      'after',
      '\nExamples:\n  ipam create range services 10.96.0.0/24\n  ipam create range services fd00:10:96::/112 --legacy\n  ipam create range eu-west --source org/eu-west          # the block claim eu-west of org holds',
    )
    .action(
      async (
        pool: string,
        cidr: string | undefined,
        options: { name?: string; legacy?: boolean; source?: { pool: string; claim: string }; output?: string },
        cmd: Command,
      ) => {
        const api = await apiFor(cmd, io);
        const spec = {
          cidr: cidr ?? (await sourceBlock(api, options.source, cmd)),
          ...(options.name ? { name: options.name } : {}),
          ...(options.legacy ? { legacy: true } : {}),
          ...(options.source ? { source: options.source } : {}),
        };
        const { created, range } = await api.createRange(pool, spec);
        print(io, rangeView, range, options.output, `range/${range.name} ${created ? 'created' : 'unchanged'}\n`);
      },
    );

  program
    .command('claim')
    .argument('<pool>')
    .option('--name <name>', 'the claim name; the same name again is idempotent')
    .option('--generate-name <prefix>', 'a generated name <prefix>-xxxxx; idempotent per owner uid and prefix')
    .addOption(
      new Option('--owner <kind/name/uid>', 'who holds the addresses, as in Service/web/3f1c')
        .argParser(parseOwner)
        .makeOptionMandatory(),
    )
    .addOption(
      new Option(
        '--dual-stack <policy>',
        'require: both families or nothing; prefer: every family the pool serves',
      ).choices(['require', 'prefer', 'single']),
    )
    .option('--family <family>', 'IPv4 or IPv6 (repeat for both, first is primary)', familyArg)
    .option('--address <address>', 'a specific address (repeat or comma-separate for one per family)', collect)
    .option('--ttl <duration>', 'lease time (5m, 1h30m, or seconds); renew before it ends', durationArg)
    .option(
      '--count <n>',
      `addresses per family (1-${MAX_COUNT}), all in one transaction or none; not with --address`,
      intArg(1, MAX_COUNT),
    )
    .option(
      '-l, --label <key=value>',
      'a label of the claim (repeat, or comma-separate; at most 32); part of its spec',
      labelArg,
    )
    .option('--prefix <cidr>', "a block pool's specific block (repeat or comma-separate for one per family)", collect)
    .option('--dry-run', 'show what the claim would get now and write nothing (not a hold)')
    .addOption(outputOption(MUTATION_OUTPUTS))
    .description('Claim addresses (or, from a block pool, blocks) from a pool for an owner')
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  ipam claim services --name web --owner Service/web/3f1c --dual-stack require',
        '  ipam claim services --name dns --owner Service/dns/77aa --address 10.96.0.10',
        '  ipam claim services --generate-name vpn --owner Client/laptop/c-19 --ttl 5m',
        '  ipam claim services --name workers --owner Deployment/workers/9b2e --count 8',
        '  ipam claim pods --name cni-3f2a --owner Pod/web-0/8e1d -l cni.ipam/node=node-1 -l cni.ipam/ifname=eth0',
        '  ipam claim node-blocks --name node-1 --owner Node/node-1/4c1e --dry-run',
        '  ipam claim org --name eu-west --owner Region/eu-west/eu --prefix 10.17.0.0/16',
      ].join('\n'),
    )
    .action(async (pool: string, options: ClaimOptions, cmd: Command) => {
      if ((options.name === undefined) === (options.generateName === undefined))
        usageError(cmd, 'give exactly one of --name and --generate-name.');
      if (options.count !== undefined && options.address?.length) {
        usageError(
          cmd,
          '--count takes addresses the service picks; give either --count or --address (one address per family), not both.',
        );
      }
      const { created, claim } = await (await apiFor(cmd, io)).createClaim(pool, claimSpecOf(options));
      const verb = claim.dryRun
        ? 'would be made (dry run, nothing written, not a hold)'
        : created
          ? 'created'
          : 'unchanged';
      print(io, claimView, claim, options.output, claimSentence(claim, verb, io.now()));
    });

  program
    .command('renew')
    .argument('<pool>')
    .argument('<claim...>')
    .option('--ttl <duration>', "a new lease time (default: the claim's own)", durationArg)
    .option('--permanent', 'confirm the hold: the claim and its addresses lose their expiry and stay until released')
    .addOption(outputOption(MUTATION_OUTPUTS))
    .description(
      'Extend leased claims (several: one request per 100), or make one permanent (NotFound if it expired and its address was taken)',
    )
    .addHelpText(
      'after',
      '\nExamples:\n  ipam renew services vpn-x7k2q --ttl 10m\n  ipam renew services vpn-x7k2q vpn-b8m4z\n  ipam renew services vpn-x7k2q --permanent',
    )
    .action(
      async (
        pool: string,
        claimNames: string[],
        options: { ttl?: number; permanent?: boolean; output?: string },
        cmd: Command,
      ) => {
        if (options.permanent && options.ttl !== undefined)
          usageError(cmd, '--permanent removes the expiry; it cannot be combined with --ttl.');
        if (claimNames.length > 1 && options.permanent) usageError(cmd, '--permanent takes one claim.');
        const ttlSeconds = options.permanent
          ? null
          : options.ttl === undefined
            ? undefined
            : Math.ceil(options.ttl / 1000);
        const api = await apiFor(cmd, io);
        if (claimNames.length > 1) return renewSeveral(api, pool, claimNames, ttlSeconds ?? undefined, options.output);
        const claim = await api.renewClaim(pool, claimNames[0]!, ttlSeconds);
        print(
          io,
          claimView,
          claim,
          options.output,
          claimSentence(claim, options.permanent ? 'made permanent' : 'renewed', io.now()),
        );
      },
    );

  /**
   * Several claims: the batch route, 100 names a request; a line per claim (or, with -o json, the results), and
   * exit code 1 when any was not renewed.
   */
  const renewSeveral = async (
    api: IpamApi,
    pool: string,
    names: readonly string[],
    ttlSeconds: number | undefined,
    output: string | undefined,
  ): Promise<void> => {
    const items: ClaimRenewal[] = [];
    for (let at = 0; at < names.length; at += 100)
      items.push(...(await api.renewClaims(pool, names.slice(at, at + 100), ttlSeconds)).items);
    const renewed = items.filter((i) => i.result === 'Renewed');
    const doc = { items, renewed: renewed.length };
    if (output === 'json') io.stdout(`${JSON.stringify(doc, null, 2)}\n`);
    else if (output === 'yaml') io.stdout(stringifyYaml(doc));
    else if (output === 'name') for (const item of renewed) io.stdout(`claim/${item.name}\n`);
    else
      for (const item of items)
        if (item.result === 'Renewed') io.stdout(`claim/${item.name} renewed until ${item.expiresAt}\n`);
        else io.stderr(`claim/${item.name} not renewed: ${item.result}: ${item.detail ?? ''}\n`);
    if (renewed.length < items.length)
      throw new Error(`${items.length - renewed.length} of ${items.length} claims were not renewed.`);
  };

  // The API's DELETE is idempotent (204 for a claim already gone); the CLI reads the claim first, as kubectl delete
  // does, so a typo is NotFound rather than reported as a release (one GET more a release).
  const releaseCommand = (command: Command, example: string) =>
    command
      .argument('<pool>')
      .argument('<claim>')
      .option(
        '--if-version <version>',
        'only if the claim is still at this version (PreconditionFailed otherwise)',
        intArg(1, Number.MAX_SAFE_INTEGER),
      )
      .option('--ignore-not-found', 'a claim that does not exist is not an error (exit 0, nothing printed)')
      .description('Release a claim and its addresses (NotFound if there is no such claim)')
      .addHelpText('after', `\nExample:\n  ${example}`)
      .action(
        async (
          pool: string,
          claim: string,
          options: { ifVersion?: number; ignoreNotFound?: boolean },
          cmd: Command,
        ) => {
          const api = await apiFor(cmd, io);
          try {
            await api.getClaim(pool, claim);
          } catch (error) {
            if (options.ignoreNotFound && isNotFound(error)) return;
            throw error;
          }
          await api.releaseClaim(pool, claim, options.ifVersion);
          io.stdout(`claim/${claim} released\n`);
        },
      );
  releaseCommand(program.command('release'), 'ipam release services dns --if-version 1');

  program
    .command('release-owner')
    .argument('<pool>')
    .argument('<uid>', "the owner's uid")
    .description('The owner is gone: release every claim it holds in the pool')
    .addHelpText('after', '\nExample:\n  ipam release-owner services c-19')
    .action(async (pool: string, uid: string, _options: unknown, cmd: Command) => {
      const { released } = await (await apiFor(cmd, io)).releaseOwner(pool, uid);
      io.stdout(
        released.length
          ? released.map((name) => `claim/${name} released\n`).join('')
          : `owner ${uid} holds no claim in pool ${pool}\n`,
      );
    });

  program
    .command('consume')
    .argument('<pool>')
    .argument('<claim>')
    .argument('<consumer>', 'the workload using the claim, KIND/NAME/UID', parseOwner)
    .addOption(outputOption(MUTATION_OUTPUTS))
    .description(
      'Add a consumer to a claim: a claim with consumers is released when the last one is removed (unconsume)',
    )
    .addHelpText('after', '\nExample:\n  ipam consume services vip Pod/lb-0/5d2a')
    .action(async (pool: string, claimName: string, consumer: Owner, options: { output?: string }, cmd: Command) => {
      const { added, claim } = await (await apiFor(cmd, io)).addConsumer(pool, claimName, consumer);
      const count = claim.consumers?.length ?? 0;
      print(
        io,
        claimView,
        claim,
        options.output,
        `claim/${claim.name} ${added ? 'consumed' : 'already consumed'} by ${consumer.kind}/${consumer.name} (${count} consumer${count === 1 ? '' : 's'})\n`,
      );
    });

  program
    .command('unconsume')
    .argument('<pool>')
    .argument('<claim>')
    .argument('<uid>', "the consumer's uid")
    .description('Remove a consumer from a claim; removing the last one releases the claim and its addresses')
    .addHelpText('after', '\nExample:\n  ipam unconsume services vip 5d2a')
    .action(async (pool: string, claim: string, uid: string, _options: unknown, cmd: Command) => {
      const { removed, released } = await (await apiFor(cmd, io)).removeConsumer(pool, claim, uid);
      io.stdout(
        released
          ? `claim/${claim} released: ${uid} was its last consumer\n`
          : removed
            ? `claim/${claim} no longer consumed by ${uid}\n`
            : `claim/${claim} is not consumed by ${uid}\n`,
      );
    });

  const del = program
    .command('delete')
    .description('Delete a pool, a range, or a claim (release)')
    .addHelpText(
      'after',
      '\nExamples:\n  ipam delete range services 10.96.0.0-24\n  ipam delete pool services\n  ipam delete claim services dns',
    );

  releaseCommand(del.command('claim'), 'ipam delete claim services dns (the same as ipam release services dns)');

  del
    .command('pool')
    .argument('<name>')
    .description('Delete a pool (PoolNotEmpty while it holds claims)')
    .addHelpText('after', '\nExample:\n  ipam delete pool services')
    .action(async (name: string, _options: unknown, cmd: Command) => {
      const outcome = await (await apiFor(cmd, io)).deletePool(name);
      io.stdout(
        outcome === 'gone'
          ? `pool/${name} deleted\n`
          : `pool/${name} terminating: gone for every request; its name is free once the rest is removed (the reconciler's next run)\n`,
      );
    });

  del
    .command('range')
    .argument('<pool>')
    .argument('<range>', 'the range name')
    .description(
      'Delete a range: at once when no lease depends on it alone, else Terminating (no new allocations) until then',
    )
    .addHelpText('after', '\nExample:\n  ipam delete range services 10.96.0.0-24')
    .action(async (pool: string, range: string, _options: unknown, cmd: Command) => {
      const outcome = await (await apiFor(cmd, io)).deleteRange(pool, range);
      io.stdout(
        outcome === 'gone'
          ? `range/${range} deleted\n`
          : `range/${range} terminating: deleted once no lease depends on it alone\n`,
      );
    });
}
