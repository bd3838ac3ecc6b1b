/**
 * The planner: from what a name should hold and what it holds, the one change to make, or why none.
 *
 *   the name holds                         wanted records             outcome
 *   nothing                                some                       create them with our TXT
 *   nothing                                none                       nothing to do
 *   our TXT (this pool) and our types      some / none                replace our types (guarded by what was read) / remove them
 *   records without our TXT, or another    some                       taken: reported, nothing written
 *     pool's or another service's TXT      none                       nothing to do (not ours)
 *
 * "Our types" are A, AAAA, PTR and TXT; any other type at the name (a hand-made MX beside our A) is left as it is.
 * Pure: the projection reads, calls this, and writes.
 */
import {
  OwnedTypes,
  ownerText,
  parseOwnerText,
  sameSets,
  type NameChange,
  type RecordOwner,
  type RecordSet,
} from './records.ts';

export type NamePlan =
  | { readonly kind: 'unchanged' }
  | { readonly kind: 'change'; readonly change: NameChange }
  /** The name is held by records the service did not make (`holder`: the other owner's TXT text, when it has one). */
  | { readonly kind: 'taken'; readonly holder?: string };

/** The owner the name's TXT records say, when it is exactly one ownership record of `pool`. */
export function ownerAt(existing: readonly RecordSet[], pool: string): RecordOwner | undefined {
  const txt = existing.filter((s) => s.type === 'TXT').flatMap((s) => s.values);
  if (txt.length !== 1) return undefined;
  const owner = parseOwnerText(txt[0]!);
  return owner?.pool === pool ? owner : undefined;
}

export interface PlanInput {
  readonly zone: string;
  readonly name: string;
  readonly pool: string;
  /** Who should hold the name and its records (no TXT: the planner adds it); undefined: nobody. */
  readonly wanted?: { readonly owner: RecordOwner; readonly sets: readonly RecordSet[] };
  /** Every record set the name holds now, of any type. */
  readonly existing: readonly RecordSet[];
  readonly ttl: number;
}

export function planName(input: PlanInput): NamePlan {
  const { existing, wanted } = input;
  const ours = ownerAt(existing, input.pool);
  const owned = existing.filter((s) => (OwnedTypes as readonly string[]).includes(s.type));
  const after =
    wanted && wanted.sets.length > 0
      ? [
          ...wanted.sets,
          { name: input.name, type: 'TXT', ttl: input.ttl, values: [ownerText(wanted.owner)] } satisfies RecordSet,
        ]
      : [];
  if (!ours) {
    // Any record at the name that the service did not mark as its own: someone else's name.
    if (existing.length > 0) {
      if (after.length === 0) return { kind: 'unchanged' };
      const txt = existing.find((s) => s.type === 'TXT')?.values[0];
      return { kind: 'taken', ...(txt !== undefined ? { holder: txt } : {}) };
    }
    if (after.length === 0) return { kind: 'unchanged' };
  }
  if (sameSets(owned, after)) return { kind: 'unchanged' };
  return { kind: 'change', change: { zone: input.zone, name: input.name, before: owned, after } };
}
