import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rfc2136Target } from '../../shared/adapters/dns/rfc2136-target.ts';
import { rfc2136TargetOf, startBind, type Bind } from '../support/bind.ts';
import { reconcilerHarness } from '../support/reconciler.ts';
import { memoryStreamEngine } from '../support/lease-stream.ts';
import { mirrorOf } from '../support/legacy.ts';
import type { RecordSet } from '../../shared/core/dns/records.ts';

const ZONE = 'pods.example.internal.';
const REVERSE = '0.0.10.in-addr.arpa.';
const TXT = (uid: string) => `heritage=ipam,pool=pods,claim=web-0,uid=${uid}`;

describe('RFC 2136 target against a real BIND 9', () => {
  let bind: Bind;
  let target: Rfc2136Target;
  beforeAll(async () => {
    bind = await startBind([ZONE, REVERSE]);
    target = rfc2136TargetOf(bind);
  });
  afterAll(() => bind?.stop());

  const a = (name: string, values: string[]): RecordSet => ({ name, type: 'A', ttl: 60, values });
  const txt = (name: string, uid: string): RecordSet => ({ name, type: 'TXT', ttl: 60, values: [TXT(uid)] });

  it('creates, replaces and removes a name with TSIG-signed updates, guarded by what was read', async () => {
    const name = `web-0.${ZONE}`;
    const created = [a(name, ['10.0.0.1']), txt(name, 'u1')];
    expect(await target.change(ZONE, [{ zone: ZONE, name, before: [], after: created }])).toEqual([
      { kind: 'applied' },
    ]);
    expect(bind.dig(name, 'A')).toEqual(['10.0.0.1']);
    expect(bind.dig(name, 'TXT')).toEqual([`"${TXT('u1')}"`]);
    // The read gives back exactly what was written, so the next change's guard holds.
    const read = (await target.read(ZONE, [name])).get(name)!;
    expect(read.map((s) => [s.type, s.values]).sort()).toEqual([
      ['A', ['10.0.0.1']],
      ['TXT', [TXT('u1')]],
    ]);
    // A second create of the same name is refused by its prerequisite ("name not in use"): stale, nothing written.
    expect(await target.change(ZONE, [{ zone: ZONE, name, before: [], after: [a(name, ['10.0.0.9'])] }])).toEqual([
      { kind: 'stale' },
    ]);
    const moved = [a(name, ['10.0.0.2']), txt(name, 'u2')];
    expect(await target.change(ZONE, [{ zone: ZONE, name, before: read, after: moved }])).toEqual([
      { kind: 'applied' },
    ]);
    expect(bind.dig(name, 'A')).toEqual(['10.0.0.2']);
    // A change read against the old records is refused (YXRRSET/NXRRSET): what was written meanwhile stays.
    expect(await target.change(ZONE, [{ zone: ZONE, name, before: read, after: [] }])).toEqual([{ kind: 'stale' }]);
    expect(bind.dig(name, 'A')).toEqual(['10.0.0.2']);
    expect(await target.change(ZONE, [{ zone: ZONE, name, before: moved, after: [] }])).toEqual([{ kind: 'applied' }]);
    expect(bind.dig(name, 'A')).toEqual([]);
    expect(bind.dig(name, 'TXT')).toEqual([]);
  });

  it('lists the zone by AXFR, and fails cleanly with a wrong key', async () => {
    bind.nsupdate(`zone ${ZONE}\nupdate add hand.${ZONE} 300 A 192.0.2.7`);
    const listed = await target.list(ZONE);
    expect(listed).toContainEqual({ name: `hand.${ZONE}`, type: 'A', ttl: 300, values: ['192.0.2.7'] });
    const wrong = new Rfc2136Target({
      server: '127.0.0.1',
      port: bind.port,
      key: async () => ({ name: `${bind.keyName}.`, secret: Buffer.alloc(32, 7) }),
    });
    const name = `x.${ZONE}`;
    const [outcome] = await wrong.change(ZONE, [{ zone: ZONE, name, before: [], after: [a(name, ['10.0.0.3'])] }]);
    expect(outcome?.kind).toBe('failed');
    expect(bind.dig(name, 'A')).toEqual([]);
  });

  it('publishes a claim through the stream function so dig resolves it, PTR included, and removes it on release', async () => {
    const streams = memoryStreamEngine();
    const h = await reconcilerHarness({ engine: streams.engine, overrides: { dnsTargets: () => target } });
    const stream = streams.stream();
    const rfc2136 = { server: '127.0.0.1', port: bind.port, keyName: bind.keyName, secretFrom: 'env:UNUSED' };
    await h.api.call('POST', '/v1/pools', { name: 'pods', dns: { zone: ZONE, reverse: true, target: { rfc2136 } } });
    await h.api.call('POST', '/v1/pools/pods/ranges', { cidr: '10.0.0.0/24' });
    await h.claim('pods', {
      name: 'web-0',
      owner: { kind: 'Pod', name: 'web-0', uid: 'p-1' },
      addresses: ['10.0.0.5'],
    });
    expect((await stream.drain(mirrorOf(h.api.container))).failed).toEqual([]);
    expect(bind.dig(`web-0.${ZONE}`, 'A')).toEqual(['10.0.0.5']);
    expect(bind.dig(`5.${REVERSE}`, 'PTR')).toEqual([`web-0.${ZONE}`]);
    await h.api.call('DELETE', '/v1/pools/pods/claims/web-0');
    expect((await stream.drain(mirrorOf(h.api.container))).failed).toEqual([]);
    expect(bind.dig(`web-0.${ZONE}`, 'A')).toEqual([]);
    expect(bind.dig(`5.${REVERSE}`, 'PTR')).toEqual([]);
  });
});
