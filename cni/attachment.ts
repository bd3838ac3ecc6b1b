/**
 * What names an attachment on the service: one claim per (network, CNI_CONTAINERID, CNI_IFNAME), its owner and its
 * labels.
 *
 * The claim name is a hash of the three, so a runtime's retried ADD asks for the same claim and gets the same
 * addresses (the service answers an identical request with the existing claim), and a DEL of an old attachment can
 * only ever release that attachment's claim, never a newer one's (whereabouts #176).
 */
import { createHash } from 'node:crypto';
import type { Owner } from '../cli/api/types.ts';
import { CNI_NAME, type Attachment } from './config.ts';
import { CniCode, CniError } from './errors.ts';

/** `cni-` and 40 hex characters of SHA-256 (160 bits): a DNS-1123 label, 44 characters. */
export function claimName(network: string, attachment: Attachment): string {
  const digest = createHash('sha256')
    .update(`${network}\0${attachment.containerID}\0${attachment.ifname}`)
    .digest('hex');
  return `cni-${digest.slice(0, 40)}`;
}

/** CNI_ARGS: `K=V;K2=V2` (SPEC.md, "Parameters"). Malformed pairs are a code-4 error naming CNI_ARGS. */
export function parseCniArgs(text: string | undefined): Map<string, string> {
  const args = new Map<string, string>();
  if (!text) return args;
  for (const pair of text.split(';')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    if (eq <= 0)
      throw new CniError(CniCode.InvalidEnvironment, 'invalid CNI_ARGS', `${JSON.stringify(pair)} is not KEY=VALUE`);
    args.set(pair.slice(0, eq), pair.slice(eq + 1));
  }
  return args;
}

/**
 * The claim's owner: the pod when the runtime passes Kubernetes' CNI_ARGS (K8S_POD_NAMESPACE, K8S_POD_NAME,
 * K8S_POD_UID), so `DELETE /owners/{uid}` releases a deleted pod's claims and a pool's reuse delay gives a recreated
 * pod of the same namespace and name (a StatefulSet's) its old address back; otherwise the attachment itself.
 */
export function ownerOf(args: ReadonlyMap<string, string>, attachment: Attachment): Owner {
  const namespace = args.get('K8S_POD_NAMESPACE');
  const name = args.get('K8S_POD_NAME');
  const uid = args.get('K8S_POD_UID');
  if (namespace && name) {
    // Runtimes older than the pod uid in CNI_ARGS: the attachment stands in for the uid.
    return {
      kind: 'Pod',
      name: `${namespace}/${name}`.slice(0, 253),
      uid: (uid || `${attachment.containerID}/${attachment.ifname}`).slice(0, 253),
    };
  }
  const id = `${attachment.containerID}/${attachment.ifname}`.slice(0, 253);
  return { kind: 'CNIAttachment', name: id, uid: id };
}

/** The label keys this plugin sets (docs/cni.md); GC selects on network and node. */
export const LabelKey = {
  network: 'cni.ipam/network',
  node: 'cni.ipam/node',
  containerID: 'cni.ipam/container-id',
  ifname: 'cni.ipam/ifname',
  /** Only on claims of a node whose config sets ipam.clusterId. */
  cluster: 'cni.ipam/cluster',
} as const;

/** A label value: empty or 1-128 of [A-Za-z0-9-_.], alphanumeric at both ends (the service's rule). */
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

/** The value as is when the label rule allows it, else `h-` and a hash of it, so any value maps to one label value. */
export function labelValue(value: string): string {
  if (value.length <= 128 && LABEL_VALUE.test(value)) return value;
  return `h-${createHash('sha256').update(value).digest('hex').slice(0, 40)}`;
}

/** Who a node is on its claims: its name, and its cluster's id when the config sets one. */
export interface NodeIdentity {
  readonly node: string;
  readonly cluster?: string;
}

export function labelsOf(network: string, identity: NodeIdentity, attachment: Attachment): Record<string, string> {
  return {
    [LabelKey.network]: labelValue(network),
    [LabelKey.node]: labelValue(identity.node),
    [LabelKey.containerID]: labelValue(attachment.containerID),
    [LabelKey.ifname]: labelValue(attachment.ifname),
    ...(identity.cluster !== undefined ? { [LabelKey.cluster]: labelValue(identity.cluster) } : {}),
  };
}

/** Checks CNI_CONTAINERID and CNI_IFNAME as libcni does. @throws CniError 3 (empty container id) or 4 */
export function checkAttachment(containerID: string | undefined, ifname: string | undefined): Attachment {
  if (!containerID) throw new CniError(CniCode.UnknownContainer, 'missing containerID', 'CNI_CONTAINERID is empty');
  if (!CNI_NAME.test(containerID))
    throw new CniError(
      CniCode.InvalidEnvironment,
      'invalid characters in containerID',
      `CNI_CONTAINERID=${containerID}`,
    );
  if (!ifname) throw new CniError(CniCode.InvalidEnvironment, 'interface name is empty', 'CNI_IFNAME is empty');
  if (ifname.length > 15)
    throw new CniError(
      CniCode.InvalidEnvironment,
      'interface name is too long',
      'CNI_IFNAME must be at most 15 characters',
    );
  if (ifname === '.' || ifname === '..' || /[/:\s]/.test(ifname))
    throw new CniError(
      CniCode.InvalidEnvironment,
      'invalid interface name',
      `CNI_IFNAME=${ifname} must not be . or .. or contain /, : or whitespace`,
    );
  return { containerID, ifname };
}
