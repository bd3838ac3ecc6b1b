import type { Config } from '../../config.ts';
import type { DnsTarget, DnsTargets } from '../../core/dns/ports.ts';
import type { DnsTargetSpec } from '../../core/dns/settings.ts';

/**
 * The DNS targets of the deployed functions, one adapter per target spec, made on first use and kept for the
 * container's life (a TSIG secret is read once per container).
 */
export function dnsTargets(config: Config): DnsTargets {
  const made = new Map<string, DnsTarget>();
  return (spec: DnsTargetSpec) => {
    const key = JSON.stringify(spec);
    let target = made.get(key);
    if (!target) made.set(key, (target = makeTarget(spec, config)));
    return target;
  };
}

function makeTarget(spec: DnsTargetSpec, _config: Config): DnsTarget {
  throw new Error(`No adapter for DNS target ${spec.kind} yet`);
}
