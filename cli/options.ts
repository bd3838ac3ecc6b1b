import { InvalidArgumentError, Option } from 'commander';
import { OUTPUT_CHOICES, OutputFormat } from './format/resources.ts';
import { formatSeconds, parseDuration } from './format/time.ts';

/** commander argParser: a duration (`90s`, `5m`, `1h30m`, bare seconds) in milliseconds. */
export function durationArg(text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined) throw new InvalidArgumentError('Expected a duration such as 90s, 5m or 1h30m.');
  return ms;
}

/** commander argParser: a duration (as durationArg) in whole seconds, rounded up, of at most `max` seconds. */
export function secondsArg(max: number): (text: string) => number {
  return (text) => {
    const seconds = Math.ceil(durationArg(text) / 1000);
    if (seconds > max)
      throw new InvalidArgumentError(`Expected a duration of at most ${formatSeconds(max)} (${max} seconds).`);
    return seconds;
  };
}

/** commander argParser: a whole number from `min` to `max`. */
export function intArg(min: number, max: number): (text: string) => number {
  return (text) => {
    if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max)
      throw new InvalidArgumentError(`Expected a whole number from ${min} to ${max}.`);
    return Number(text);
  };
}

/** commander argParser for a repeatable option that also takes comma-separated values: `--address a,b --address c`. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [
    ...(previous ?? []),
    ...value
      .split(',')
      .map((v) => v.trim())
      .filter((v) => v !== ''),
  ];
}

export function outputOption(choices: readonly string[] = OUTPUT_CHOICES): Option {
  return new Option('-o, --output <format>', 'output format (default: an aligned table)').choices(choices);
}

/** The pool a command works in; IPAM_POOL plays kubectl's current namespace (read by `poolOf`). */
export function poolOption(): Option {
  return new Option('-p, --pool <pool>', 'the pool (default: $IPAM_POOL)');
}

export function formatOf(output: string | undefined): OutputFormat {
  return (output ?? OutputFormat.Table) as OutputFormat;
}
