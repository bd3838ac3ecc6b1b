import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { parse } from 'yaml';
import { ensurePool } from '../../cni/commands.ts';
import { parseNetworkConfig, type NetworkConfig } from '../../cni/config.ts';
import { CniError } from '../../cni/errors.ts';
import { apiFor, usageError } from '../context.ts';
import { ProblemError } from '../errors.ts';
import type { CliIo } from '../io.ts';
import { collect } from '../options.ts';
import { planImport, readWhereabouts, type ImportPlan } from '../whereabouts.ts';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The ipam-cni network config a file holds: a network config, a conflist (its plugin whose ipam is ipam-cni), or a
 * NetworkAttachmentDefinition (its spec.config), in JSON or YAML. @throws Error naming what is missing
 */
export function networkConfigOf(text: string): NetworkConfig {
  let doc: unknown = parse(text);
  if (isRecord(doc) && doc.kind === 'NetworkAttachmentDefinition')
    doc = JSON.parse(String((isRecord(doc.spec) ? doc.spec.config : undefined) ?? 'null'));
  if (!isRecord(doc))
    throw new Error('the config is not a network config, a conflist or a NetworkAttachmentDefinition');
  const plugin = Array.isArray(doc.plugins)
    ? (doc.plugins as unknown[]).find((p) => isRecord(p) && isRecord(p.ipam) && p.ipam.type === 'ipam-cni')
    : doc;
  if (!isRecord(plugin) || !isRecord(plugin.ipam) || plugin.ipam.type !== 'ipam-cni')
    throw new Error('the config has no plugin whose ipam type is ipam-cni (switch the type in the file first)');
  return parseNetworkConfig(JSON.stringify({ ...plugin, cniVersion: doc.cniVersion, name: doc.name }));
}

function readInput(path: string): string {
  return readFileSync(path === '-' ? 0 : path, 'utf8');
}

function printPlan(io: CliIo, plan: ImportPlan, pool: string): void {
  for (const c of plan.claims) {
    io.stdout(
      `claim ${c.spec.name} ${c.spec.addresses.join(',')} for Pod ${c.podref} (${c.attachment})${c.releasedByDel ? '' : ', not released by DEL'} in pool ${pool}\n`,
    );
  }
}

/** What the service answered a claim it already had or refused: the line to report, or undefined to rethrow. */
function refusal(error: unknown): string | undefined {
  if (!(error instanceof ProblemError)) return undefined;
  if (error.code === 'AlreadyAllocated' || error.code === 'AddressReleasing')
    return `held by another owner in ipam-cni: ${error.detail}`;
  if (error.code === 'Conflict') return `a claim of that name exists with another spec: ${error.detail}`;
  if (error.code === 'NotInRange' || error.code === 'MismatchedNetwork')
    return `outside the pool's ranges: ${error.detail}`;
  return undefined;
}

/** `ipam import whereabouts`: whereabouts' addresses in use as ipam-cni claims (docs/cni.md, "Migrating from whereabouts"). */
export function addImportCommand(program: Command, io: CliIo): void {
  const importCmd = program.command('import').description('Import addresses another IPAM handed out');
  importCmd
    .command('whereabouts')
    .requiredOption(
      '--config <file>',
      "the network's ipam-cni config (network config, conflist or NetworkAttachmentDefinition; JSON or YAML): names the pool, its ranges and the claims",
    )
    .requiredOption(
      '-f, --file <file>',
      'kubectl get ippools.whereabouts.cni.cncf.io -A -o yaml (and overlappingrangeipreservations) output; repeat; - for stdin',
      collect,
    )
    .option('--dry-run', 'print the claims it would make, and what it would skip, and make no request')
    .option('--default-ifname <name>', 'the ifname of allocations that name none (whereabouts before 0.6)', 'eth0')
    .description(
      "Claim every address whereabouts holds, owned by its pod and named like the plugin's own claims, so a later DEL releases it; idempotent",
    )
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  kubectl get ippools.whereabouts.cni.cncf.io -A -o yaml > pools.yaml',
        '  kubectl get overlappingrangeipreservations.whereabouts.cni.cncf.io -A -o yaml > reservations.yaml',
        '  ipam import whereabouts --config storage.conflist -f pools.yaml -f reservations.yaml --dry-run',
        '  ipam import whereabouts --config storage.conflist -f pools.yaml -f reservations.yaml',
      ].join('\n'),
    )
    .action(
      async (options: { config: string; file: string[]; dryRun?: boolean; defaultIfname: string }, cmd: Command) => {
        let config: NetworkConfig;
        let texts: string[];
        try {
          config = networkConfigOf(readFileSync(options.config, 'utf8'));
          texts = options.file.map(readInput);
        } catch (error) {
          usageError(cmd, error instanceof CniError ? `${options.config}: ${error.message}` : (error as Error).message);
        }
        const state = readWhereabouts(texts, options.defaultIfname);
        const plan = planImport(state, {
          network: config.name,
          ...(config.ipam.clusterId !== undefined ? { clusterId: config.ipam.clusterId } : {}),
        });
        const pool = config.ipam.pool;
        for (const line of state.unreadable) io.stdout(`unreadable: ${line}\n`);
        for (const line of plan.skipped) io.stdout(`skipped: ${line}\n`);
        for (const line of plan.notes) io.stdout(`note: ${line}\n`);
        if (options.dryRun) {
          printPlan(io, plan, pool);
          io.stdout(
            `dry run: ${plan.claims.length} claims planned in pool ${pool}, ${plan.skipped.length} addresses skipped; nothing was sent\n`,
          );
          return;
        }
        const api = await apiFor(cmd, io);
        try {
          // The pool as the plugin's first ADD would ensure it: created with the config's ranges, or checked against them.
          await ensurePool(api, config.ipam);
        } catch (error) {
          if (error instanceof CniError) throw new Error(`pool ${pool}: ${error.message}`);
          throw error;
        }
        const counts = { created: 0, unchanged: 0, skipped: plan.skipped.length };
        for (const c of plan.claims) {
          const what = `${c.spec.addresses.join(',')} for Pod ${c.podref} (${c.attachment}) as claim ${c.spec.name}`;
          try {
            const { created } = await api.createClaim(pool, c.spec);
            counts[created ? 'created' : 'unchanged'] += 1;
            io.stdout(`${created ? 'created' : 'unchanged'}: ${what}\n`);
          } catch (error) {
            const reason = refusal(error);
            if (reason === undefined) throw error;
            counts.skipped += 1;
            io.stdout(`skipped: ${what}: ${reason}\n`);
          }
        }
        io.stdout(
          `imported into pool ${pool}: ${counts.created} created, ${counts.unchanged} unchanged, ${counts.skipped} skipped\n`,
        );
      },
    );
}
