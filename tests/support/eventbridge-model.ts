/**
 * A PutEvents request against EventBridge's API model, for the crossing announcements (issue 37).
 *
 * Shapes (member names, types, required members) are read from the model AWS ships in `@aws-sdk/client-eventbridge`
 * (its `PutEventsRequest$` schema, generated from the service's Smithy model, read through `@smithy/core`'s
 * NormalizedSchema). That model, like aws-sdk v2's `apis/eventbridge-2015-10-07.min.json`, has its length traits
 * stripped, and no npm package carries the full Smithy model; so the constraints below are written here, each as the
 * EventBridge API Reference (PutEvents, PutEventsRequestEntry) and User Guide ("Calculating PutEvents event entry
 * size") state it. Written by hand for that reason: no library checks a request against this model.
 */
import { PutEventsRequest$ } from '@aws-sdk/client-eventbridge';
import { NormalizedSchema } from '@smithy/core/schema';

/** The request's constraints that the SDK's model does not carry (API Reference, PutEvents and PutEventsRequestEntry). */
export const PUT_EVENTS_LIMITS = {
  entries: { min: 1, max: 10 },
  /** "The total entry size must be less than 256KB", counted as the User Guide counts it. */
  entryBytes: 256 * 1024,
  /** "Free-form string, with a maximum of 128 characters". */
  detailTypeChars: 128,
  eventBusName: {
    min: 1,
    max: 1600,
    pattern: /^(arn:aws[\w-]*:events:[a-z]{2}-[a-z]+-[\w-]+:[0-9]{12}:event-bus\/)?[.\-_A-Za-z0-9]+$/,
  },
  traceHeader: { min: 1, max: 500 },
} as const;

const utf8 = (s: string): number => Buffer.byteLength(s, 'utf8');

/** The size EventBridge counts for an entry: Time 14 bytes; Source, DetailType, Detail and each Resource in UTF-8 bytes. */
export function entrySize(entry: Record<string, unknown>): number {
  const text = (v: unknown) => (typeof v === 'string' ? utf8(v) : 0);
  const resources = Array.isArray(entry.Resources)
    ? entry.Resources.reduce((n: number, r: unknown) => n + text(r), 0)
    : 0;
  return (
    (entry.Time !== undefined ? 14 : 0) + text(entry.Source) + text(entry.DetailType) + text(entry.Detail) + resources
  );
}

/** Where `value` does not have the model's shape `schema` (unknown members, wrong types, missing required members). */
function shapeProblems(schema: NormalizedSchema, value: unknown, path: string): string[] {
  if (value === undefined) return [];
  if (schema.isStructSchema()) {
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      return [`${path}: a structure (${schema.getName()}) expected`];
    const members = new Map([...schema.structIterator()]);
    const problems = Object.keys(value)
      .filter((k) => !members.has(k))
      .map((k) => `${path}.${k}: no such member of ${schema.getName()} (members: ${[...members.keys()].join(', ')})`);
    for (const [name, member] of members) {
      const v = (value as Record<string, unknown>)[name];
      if (v === undefined && member.isMemberSchema() && member.getMergedTraits().required)
        problems.push(`${path}.${name}: required`);
      problems.push(...shapeProblems(member, v, `${path}.${name}`));
    }
    return problems;
  }
  if (schema.isListSchema()) {
    if (!Array.isArray(value)) return [`${path}: a list expected`];
    return value.flatMap((v, i) => shapeProblems(schema.getValueSchema(), v, `${path}[${i}]`));
  }
  if (schema.isTimestampSchema())
    return value instanceof Date && !Number.isNaN(value.getTime()) ? [] : [`${path}: a timestamp (Date) expected`];
  if (schema.isStringSchema()) return typeof value === 'string' ? [] : [`${path}: a string expected`];
  return [];
}

/** The model's required members, which the SDK's schema keeps as a count of its leading members. */
function requiredMembers(): Set<string> {
  const [, , , , names, , requiredCount] = PutEventsRequest$ as unknown as [
    unknown,
    unknown,
    unknown,
    unknown,
    string[],
    unknown,
    number?,
  ];
  return new Set(names.slice(0, requiredCount ?? 0));
}

/** Every way `input` breaks EventBridge's PutEvents model or limits; empty when EventBridge would take every entry. */
export function putEventsProblems(input: unknown): string[] {
  const schema = NormalizedSchema.of(PutEventsRequest$ as never);
  const problems = shapeProblems(schema, input, 'PutEvents');
  const request = (input ?? {}) as Record<string, unknown>;
  for (const name of requiredMembers()) if (request[name] === undefined) problems.push(`PutEvents.${name}: required`);
  const entries = Array.isArray(request.Entries) ? (request.Entries as Record<string, unknown>[]) : [];
  const { min, max } = PUT_EVENTS_LIMITS.entries;
  if (entries.length < min || entries.length > max)
    problems.push(`PutEvents.Entries: ${entries.length} entries, not ${min}-${max}`);
  entries.forEach((entry, i) => {
    const at = `PutEvents.Entries[${i}]`;
    // Detail, DetailType and Source: optional in the model, but an entry without one of them is failed.
    for (const name of ['Source', 'DetailType', 'Detail'])
      if (typeof entry[name] !== 'string' || entry[name] === '')
        problems.push(`${at}.${name}: needed for the event to be delivered`);
    if (typeof entry.Source === 'string' && entry.Source.startsWith('aws.'))
      problems.push(`${at}.Source: 'aws.' sources are AWS's own`);
    if (typeof entry.DetailType === 'string' && [...entry.DetailType].length > PUT_EVENTS_LIMITS.detailTypeChars)
      problems.push(`${at}.DetailType: longer than ${PUT_EVENTS_LIMITS.detailTypeChars} characters`);
    if (typeof entry.Detail === 'string') {
      let detail: unknown;
      try {
        detail = JSON.parse(entry.Detail);
      } catch {
        detail = undefined;
      }
      if (typeof detail !== 'object' || detail === null || Array.isArray(detail))
        problems.push(`${at}.Detail: not a JSON object`);
    }
    const bus = entry.EventBusName;
    const busLimits = PUT_EVENTS_LIMITS.eventBusName;
    if (
      typeof bus === 'string' &&
      (bus.length < busLimits.min || bus.length > busLimits.max || !busLimits.pattern.test(bus))
    )
      problems.push(`${at}.EventBusName: not a bus name or ARN of ${busLimits.min}-${busLimits.max} characters`);
    const trace = entry.TraceHeader;
    if (
      typeof trace === 'string' &&
      (trace.length < PUT_EVENTS_LIMITS.traceHeader.min || trace.length > PUT_EVENTS_LIMITS.traceHeader.max)
    )
      problems.push(`${at}.TraceHeader: not 1-500 characters`);
    const size = entrySize(entry);
    if (size >= PUT_EVENTS_LIMITS.entryBytes) problems.push(`${at}: ${size} bytes, not less than 256 KB`);
  });
  // The API Reference also reads the limit as one on a request's entries together.
  const total = entries.reduce((n, e) => n + entrySize(e), 0);
  if (entries.length > 1 && total >= PUT_EVENTS_LIMITS.entryBytes)
    problems.push(`PutEvents.Entries: ${total} bytes together, not less than 256 KB`);
  return problems;
}
