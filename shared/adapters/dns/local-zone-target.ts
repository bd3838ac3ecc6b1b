import type { ChangeOutcome, DnsTarget } from '../../core/dns/ports.ts';
import type { NameChange, RecordSet } from '../../core/dns/records.ts';

/** Where the local stack's zones are reached (scripts/local-zone-service.ts), and the token it made for them. */
export interface LocalZoneEndpoint {
  readonly endpoint: string;
  readonly token: string;
}

/**
 * The `local` DNS target: the local stack's embedded zones, kept in the stack's own process (its DNS server on
 * 127.0.0.1:5300 answers from them), reached over loopback HTTP since serverless-offline runs this function elsewhere.
 * The guard is the zones' own: a change applies only while its name holds its `before`.
 */
export class LocalZoneTarget implements DnsTarget {
  constructor(
    private readonly at: LocalZoneEndpoint,
    private readonly timeoutMs = 3000,
  ) {}

  async read(zone: string, names: readonly string[]): Promise<ReadonlyMap<string, readonly RecordSet[]>> {
    const { sets } = (await this.call('/read', { zone, names })) as { sets: Record<string, RecordSet[]> };
    return new Map(Object.entries(sets));
  }

  async change(zone: string, changes: readonly NameChange[]): Promise<readonly ChangeOutcome[]> {
    return ((await this.call('/change', { zone, changes })) as { outcomes: ChangeOutcome[] }).outcomes;
  }

  async list(zone: string): Promise<readonly RecordSet[]> {
    return ((await this.call('/list', { zone })) as { sets: RecordSet[] }).sets;
  }

  private async call(path: string, body: unknown): Promise<unknown> {
    const response = await fetch(`${this.at.endpoint}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${this.at.token}` },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    const answer: unknown = await response.json();
    if (!response.ok)
      throw new Error(
        `the local stack's zones answered ${response.status}: ${(answer as { message?: string }).message}`,
      );
    return answer;
  }
}
