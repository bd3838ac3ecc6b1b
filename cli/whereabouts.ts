/**
 * `ipam import whereabouts`: what whereabouts holds (its IPPool and OverlappingRangeIPReservation objects, as
 * `kubectl get ... -o yaml` prints them) turned into the claims ipam-cni would have made for the same attachments, so
 * a network switches its `type` with its pods running and a later DEL of a pod releases its address.
 *
 * The shapes are whereabouts' CRDs (whereabouts.cni.cncf.io/v1alpha1):
 *   IPPool                          spec.range: a CIDR; spec.allocations: { "<offset from the range's first address>":
 *                                   { id: container id, podref: "namespace/name", ifname } }
 *   OverlappingRangeIPReservation   metadata.name: the address (IPv6 with '-' for ':', maybe after a network name
 *                                   and '-'); spec: { containerid, podref, ifname }
 */
import { parseAllDocuments } from 'yaml';
import type { ClaimSpec } from './api/types.ts';
import { claimName, labelValue, LabelKey } from '../cni/attachment.ts';
import { familyBits, formatAddress, parseAddress, type IpAddress, type IpFamily } from '../shared/core/ip/address.ts';
import { createHash } from 'node:crypto';

/** One address whereabouts holds, and for whom. */
export interface Holding {
  readonly address: IpAddress;
  readonly containerID: string;
  readonly ifname: string;
  /** "namespace/name" */
  readonly podref: string;
  /** Where it was read: `IPPool kube-system/10.0.0.0-24 offset 5`, `OverlappingRangeIPReservation 10.0.0.5`. */
  readonly source: string;
  /** The allocation named no ifname (whereabouts before 0.6): the default was assumed. */
  readonly ifnameAssumed: boolean;
}

export interface WhereaboutsState {
  readonly holdings: Holding[];
  /** Objects or entries that could not be read, each a sentence. */
  readonly unreadable: string[];
}

type Doc = Record<string, unknown>;

function isRecord(value: unknown): value is Doc {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Every object of a kubectl output: a List's items, single objects, several YAML documents. */
function objectsOf(text: string): Doc[] {
  const out: Doc[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`not YAML: ${doc.errors[0]!.message}`);
    const value: unknown = doc.toJS();
    if (!isRecord(value)) continue;
    if (Array.isArray(value.items)) out.push(...value.items.filter(isRecord));
    else out.push(value);
  }
  return out;
}

function nameOf(object: Doc): string {
  const metadata = isRecord(object.metadata) ? object.metadata : {};
  const name = typeof metadata.name === 'string' ? metadata.name : '?';
  return typeof metadata.namespace === 'string' ? `${metadata.namespace}/${name}` : name;
}

/** A range as whereabouts writes it (a CIDR; host bits, if any, ignored): its first address and prefix. */
function rangeOf(text: unknown): { family: IpFamily; base: bigint; prefix: number } | undefined {
  if (typeof text !== 'string' || !text.includes('/')) return undefined;
  try {
    const address = parseAddress(text.slice(0, text.indexOf('/')));
    const prefix = Number(text.slice(text.indexOf('/') + 1));
    const bits = familyBits(address.family);
    if (!Number.isInteger(prefix) || prefix < 0 || prefix > bits) return undefined;
    const mask = ((1n << BigInt(bits)) - 1n) ^ ((1n << BigInt(bits - prefix)) - 1n);
    return { family: address.family, base: address.value & mask, prefix };
  } catch {
    return undefined;
  }
}

/** The address an OverlappingRangeIPReservation is named after: the first suffix of its name (after a '-') that is one. */
function reservedAddress(name: string): IpAddress | undefined {
  const starts = [0, ...[...name].flatMap((c, i) => (c === '-' ? [i + 1] : []))];
  for (const start of starts) {
    const rest = name.slice(start);
    const text = rest.includes('.') ? rest : rest.replaceAll('-', ':');
    try {
      return parseAddress(text);
    } catch {
      // Not this suffix: a network name's part, or no address at all.
    }
  }
  return undefined;
}

/** Reads kubectl outputs (IPPools and OverlappingRangeIPReservations, in any mix) into what whereabouts holds. */
export function readWhereabouts(texts: readonly string[], defaultIfname = 'eth0'): WhereaboutsState {
  const holdings: Holding[] = [];
  const unreadable: string[] = [];
  for (const object of texts.flatMap(objectsOf)) {
    const spec = isRecord(object.spec) ? object.spec : undefined;
    if (object.kind === 'IPPool') {
      const range = rangeOf(spec?.range);
      if (!range || !isRecord(spec?.allocations)) {
        unreadable.push(`IPPool ${nameOf(object)}: no readable spec.range and spec.allocations`);
        continue;
      }
      for (const [offset, allocation] of Object.entries(spec.allocations)) {
        const size = 1n << BigInt(familyBits(range.family) - range.prefix);
        if (
          !/^\d+$/.test(offset) ||
          BigInt(offset) >= size ||
          !isRecord(allocation) ||
          typeof allocation.id !== 'string' ||
          typeof allocation.podref !== 'string'
        ) {
          unreadable.push(
            `IPPool ${nameOf(object)} allocation ${JSON.stringify(offset)}: not {id, podref} at an offset inside ${String(spec.range)}`,
          );
          continue;
        }
        const ifname =
          typeof allocation.ifname === 'string' && allocation.ifname !== '' ? allocation.ifname : undefined;
        holdings.push({
          address: { family: range.family, value: range.base + BigInt(offset) },
          containerID: allocation.id,
          ifname: ifname ?? defaultIfname,
          podref: allocation.podref,
          source: `IPPool ${nameOf(object)} offset ${offset}`,
          ifnameAssumed: ifname === undefined,
        });
      }
    } else if (object.kind === 'OverlappingRangeIPReservation') {
      const name = nameOf(object);
      const address = reservedAddress(name.slice(name.indexOf('/') + 1));
      if (!address || typeof spec?.podref !== 'string' || typeof spec.containerid !== 'string') {
        unreadable.push(
          `OverlappingRangeIPReservation ${name}: no address in its name, or no spec.podref and spec.containerid`,
        );
        continue;
      }
      const ifname = typeof spec.ifname === 'string' && spec.ifname !== '' ? spec.ifname : undefined;
      holdings.push({
        address,
        containerID: spec.containerid,
        ifname: ifname ?? defaultIfname,
        podref: spec.podref,
        source: `OverlappingRangeIPReservation ${name}`,
        ifnameAssumed: ifname === undefined,
      });
    }
  }
  return { holdings, unreadable };
}

/** One claim to make: the attachment's, or an extra one for a second address of one family. */
export interface PlannedClaim {
  readonly spec: ClaimSpec & { readonly name: string; readonly addresses: readonly string[] };
  readonly podref: string;
  readonly attachment: string;
  /** The attachment's own claim (a DEL releases it); false for an extra address of a family it already holds. */
  readonly releasedByDel: boolean;
  readonly sources: readonly string[];
}

export interface ImportPlan {
  readonly claims: PlannedClaim[];
  /** Addresses left out, each with why. */
  readonly skipped: string[];
  /** What the operator should know: assumed ifnames, pods held more than once, extra claims. */
  readonly notes: string[];
}

const key = (h: Holding) => `${h.containerID}\0${h.ifname}`;

/**
 * The claims ipam-cni would hold for what whereabouts holds, in `network` (the CNI network's name, which names the
 * claims as the plugin does) with `labels` of the node identity (clusterId):
 *
 *   the same address twice, same attachment (an IPPool and its reservation, overlapping ranges)   one holding
 *   the same address for two attachments                                                             the first (by source) kept, the other skipped
 *   one attachment, addresses of two families                                                        one dual-stack claim
 *   one attachment, a second address of a family                                                     an extra claim, owned by the pod, that DEL does not release (noted)
 *   one pod, several attachments (a leaked old sandbox)                                              one claim each (noted)
 */
export function planImport(state: WhereaboutsState, options: { network: string; clusterId?: string }): ImportPlan {
  const skipped: string[] = [];
  const notes: string[] = [];
  const byAddress = new Map<string, Holding[]>();
  for (const h of state.holdings) {
    const text = formatAddress(h.address);
    byAddress.set(text, [...(byAddress.get(text) ?? []), h]);
  }
  const kept: Holding[] = [];
  for (const [address, holders] of [...byAddress].sort(([a], [b]) => a.localeCompare(b))) {
    const first = holders[0]!;
    kept.push(first);
    for (const other of holders.slice(1)) {
      if (key(other) === key(first) && other.podref === first.podref) continue;
      skipped.push(
        `${address}: whereabouts holds it for ${first.podref} (${first.containerID}/${first.ifname}, ${first.source}) and for ${other.podref} (${other.containerID}/${other.ifname}, ${other.source}); the first is imported`,
      );
    }
  }
  const byAttachment = new Map<string, Holding[]>();
  for (const h of kept) byAttachment.set(key(h), [...(byAttachment.get(key(h)) ?? []), h]);
  const claims: PlannedClaim[] = [];
  for (const holdings of byAttachment.values()) {
    const { containerID, ifname, podref } = holdings[0]!;
    const attachment = { containerID, ifname };
    const labels = {
      [LabelKey.network]: labelValue(options.network),
      [LabelKey.containerID]: labelValue(containerID),
      [LabelKey.ifname]: labelValue(ifname),
      ...(options.clusterId !== undefined ? { [LabelKey.cluster]: labelValue(options.clusterId) } : {}),
    };
    // As the plugin names a pod without its uid in CNI_ARGS: the attachment stands in for the uid.
    const owner = { kind: 'Pod', name: podref.slice(0, 253), uid: `${containerID}/${ifname}`.slice(0, 253) };
    const own: Holding[] = [];
    const extra: Holding[] = [];
    for (const h of holdings) (own.some((o) => o.address.family === h.address.family) ? extra : own).push(h);
    const families = own.map((h) => h.address.family);
    const name = claimName(options.network, attachment);
    claims.push({
      spec: {
        name,
        owner,
        ipFamilyPolicy: own.length > 1 ? 'RequireDualStack' : 'SingleStack',
        ipFamilies: families,
        addresses: own.map((h) => formatAddress(h.address)),
        labels,
      },
      podref,
      attachment: `${containerID}/${ifname}`,
      releasedByDel: true,
      sources: own.map((h) => h.source),
    });
    for (const h of extra) {
      const address = formatAddress(h.address);
      const extraName = `cni-x${createHash('sha256').update(`${name}\0${address}`).digest('hex').slice(0, 39)}`;
      claims.push({
        spec: {
          name: extraName,
          owner,
          ipFamilyPolicy: 'SingleStack',
          ipFamilies: [h.address.family],
          addresses: [address],
          labels,
        },
        podref,
        attachment: `${containerID}/${ifname}`,
        releasedByDel: false,
        sources: [h.source],
      });
      notes.push(
        `${address}: a second ${h.address.family} address of ${podref} (${containerID}/${ifname}); imported as claim ${extraName}, which a DEL does not release: release it (ipam release POOL ${extraName}) or the pod's owner when the pod is gone`,
      );
    }
    for (const h of holdings.filter((x) => x.ifnameAssumed))
      notes.push(
        `${formatAddress(h.address)}: ${h.source} names no ifname; ${ifname} was assumed (the claim a DEL releases is named from it)`,
      );
  }
  const attachmentsByPod = new Map<string, Set<string>>();
  for (const c of claims)
    attachmentsByPod.set(c.podref, (attachmentsByPod.get(c.podref) ?? new Set()).add(c.attachment));
  for (const [podref, attachments] of attachmentsByPod) {
    if (attachments.size > 1)
      notes.push(
        `${podref} holds addresses under ${attachments.size} attachments (${[...attachments].join(', ')}): each is imported as its own claim; one of an old sandbox is released by its DEL or by the pod's owner release`,
      );
  }
  claims.sort((a, b) => a.spec.addresses[0]!.localeCompare(b.spec.addresses[0]!));
  return { claims, skipped, notes };
}
