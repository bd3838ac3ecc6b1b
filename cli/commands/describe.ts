import type { Command } from 'commander';
import { apiFor, poolOf } from '../context.ts';
import { describeAddress, describeClaim, describePool, describeRange } from '../format/describe.ts';
import type { CliIo } from '../io.ts';
import { poolOption } from '../options.ts';

/** Events shown under `describe pool`: the most recent few, as kubectl shows a pod's. */
const RECENT_EVENTS = 10;

/** `ipam describe pool|range|claim|address NAME`: one resource in prose, with what relates to it. */
export function addDescribeCommand(program: Command, io: CliIo): void {
  const describe = program
    .command('describe')
    .description('Show one resource in detail: utilization with bars, bands, holders, recent events')
    .addHelpText('after', '\nExamples:\n  ipam describe pool services\n  ipam describe claim web -p services');

  describe
    .command('pool')
    .argument('<name>')
    .description(
      'A pool: exclusions, reuse delay, utilization per family, ranges and their states, recent repair events',
    )
    .addHelpText('after', '\nExample:\n  ipam describe pool services')
    .action(async (name: string, _options: unknown, cmd: Command) => {
      const api = await apiFor(cmd, io);
      const [pool, events] = await Promise.all([api.getPool(name), api.listEvents(name, { limit: RECENT_EVENTS })]);
      io.stdout(describePool(pool, events.items, io.now()));
    });

  describe
    .command('range')
    .argument('<name>', 'the range name (10.96.0.0-24 for 10.96.0.0/24 unless named otherwise)')
    .addOption(poolOption())
    .description("A range: utilization, lower and upper bands, a legacy range's bitmap window, the pool's exclusions")
    .addHelpText('after', '\nExample:\n  ipam describe range 10.96.0.0-24 -p services')
    .action(async (name: string, _options: unknown, cmd: Command) => {
      const poolName = poolOf(cmd, io);
      const api = await apiFor(cmd, io);
      const [pool, range] = await Promise.all([api.getPool(poolName), api.getRange(poolName, name)]);
      io.stdout(describeRange(pool, range, io.now()));
    });

  describe
    .command('claim')
    .argument('<name>')
    .addOption(poolOption())
    .description('A claim: owner, family policy, addresses and their ranges, TTL and expiry, version')
    .addHelpText('after', '\nExample:\n  ipam describe claim web -p services')
    .action(async (name: string, _options: unknown, cmd: Command) => {
      const pool = poolOf(cmd, io);
      const api = await apiFor(cmd, io);
      io.stdout(describeClaim(pool, await api.getClaim(pool, name), io.now()));
    });

  describe
    .command('address')
    .alias('ip')
    .argument('<address>', 'any valid spelling; answered canonically')
    .addOption(poolOption())
    .description(
      'The holder of an address: claim, owner, range, expiry; for a Released one, its previous owner and when it is reusable (NotFound when it is free)',
    )
    .addHelpText('after', '\nExample:\n  ipam describe address 10.96.0.10 -p services')
    .action(async (address: string, _options: unknown, cmd: Command) => {
      const pool = poolOf(cmd, io);
      const api = await apiFor(cmd, io);
      io.stdout(describeAddress(pool, await api.getAddress(pool, address), io.now()));
    });
}
