import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../cli/errors.ts';
import { fakeFetch, runCli } from '../support/cli.ts';

const NOW = Date.parse('2026-11-25T15:00:00Z');
const ended = {
  address: '10.96.0.10',
  family: 'IPv4',
  range: '10.96.0.0-24',
  kind: 'claim',
  claim: 'web',
  claimUid: 'c1',
  owner: { kind: 'Pod', name: 'web-0', uid: 'u1' },
  from: '2026-11-25T13:00:00.000Z',
  to: '2026-11-25T14:00:00.000Z',
  toExact: false,
  endReason: 'released',
};
const open = {
  ...ended,
  claim: 'api',
  claimUid: 'c2',
  owner: { kind: 'Pod', name: 'api-0', uid: 'u2' },
  from: '2026-11-25T14:30:00.000Z',
  to: undefined,
  toExact: undefined,
  endReason: undefined,
};

describe('Command line: ipam history', () => {
  it("lists an address's holdings newest first over the last --since, with the end bound marked", async () => {
    // Prepare
    const server = fakeFetch(() => ({
      status: 200,
      body: { items: [open, ended], completeUntil: '2026-11-25T14:59:58.000Z' },
    }));
    // Act
    const result = await runCli(['history', '10.96.0.10', '-p', 'services', '--since', '24h'], {
      fetch: server.fetch,
      nowMs: NOW,
    });
    // Assess
    expect(result.code).toBe(ExitCode.Ok);
    expect(server.requests[0]!.url.pathname).toBe('/v1/pools/services/addresses/10.96.0.10/history');
    expect(server.requests[0]!.url.searchParams.get('from')).toBe('2026-11-24T15:00:00.000Z');
    const lines = result.out.split('\n');
    expect(lines[0]).toMatch(/^ADDRESS\s+CLAIM\s+OWNER\s+FROM\s+TO\s+ENDED\s+AGE$/);
    expect(lines[1]).toMatch(/^10\.96\.0\.10\s+api\s+Pod\/api-0\s+2026-11-25T14:30:00\.000Z\s+-\s+held\s+30m$/);
    expect(lines[2]).toMatch(
      /^10\.96\.0\.10\s+web\s+Pod\/web-0\s+2026-11-25T13:00:00\.000Z\s+<=2026-11-25T14:00:00\.000Z\s+released\s+\S+$/,
    );
    // The question reaches past what the history has recorded: said on stderr
    expect(result.err).toBe(
      '(history complete before 2026-11-25T14:59:58.000Z; lease changes from then on may not be recorded yet)\n',
    );
  });

  it('warns when the instant asked about is the completeUntil itself: changes stamped at it may still come', async () => {
    // Prepare
    const held = fakeFetch(() => ({
      status: 200,
      body: { at: '2026-11-25T14:59:58.000Z', holding: null, completeUntil: '2026-11-25T14:59:58.000Z' },
    }));
    const before = fakeFetch(() => ({
      status: 200,
      body: { at: '2026-11-25T14:59:57.999Z', holding: null, completeUntil: '2026-11-25T14:59:58.000Z' },
    }));
    // Act
    const at = await runCli(['history', '10.96.0.10', '-p', 'services', '--at', '2026-11-25T14:59:58.000Z'], {
      fetch: held.fetch,
      nowMs: NOW,
    });
    const earlier = await runCli(['history', '10.96.0.10', '-p', 'services', '--at', '2026-11-25T14:59:57.999Z'], {
      fetch: before.fetch,
      nowMs: NOW,
    });
    // Assess
    expect(at.err).toContain('history complete before 2026-11-25T14:59:58.000Z');
    expect(earlier.err).toBe('');
  });

  it('answers who held an address at an instant, or that nobody did', async () => {
    // Prepare
    const held = fakeFetch(() => ({
      status: 200,
      body: { at: '2026-11-25T13:30:00.000Z', holding: ended, completeUntil: '2026-11-25T14:59:58.000Z' },
    }));
    const nobody = fakeFetch(() => ({
      status: 200,
      body: { at: '2026-11-25T12:00:00.000Z', holding: null, completeUntil: '2026-11-25T14:59:58.000Z' },
    }));
    // Act
    const one = await runCli(['history', '10.96.0.10', '-p', 'services', '--at', '2026-11-25T13:30:00Z'], {
      fetch: held.fetch,
      nowMs: NOW,
    });
    const none = await runCli(['history', '10.96.0.10', '-p', 'services', '--at', '3h'], {
      fetch: nobody.fetch,
      nowMs: NOW,
    });
    // Assess
    expect(held.requests[0]!.url.searchParams.get('at')).toBe('2026-11-25T13:30:00Z');
    expect(one.out).toContain('web');
    expect(nobody.requests[0]!.url.searchParams.get('at')).toBe('2026-11-25T12:00:00.000Z');
    expect(none.out).toBe('Nobody held 10.96.0.10 at 2026-11-25T12:00:00.000Z.\n');
  });

  it("reads an owner's history, and refuses an address with --owner or --at with --since", async () => {
    // Prepare
    const server = fakeFetch(() => ({ status: 200, body: { items: [ended] } }));
    // Act
    const owner = await runCli(['history', '--owner', 'u1', '-p', 'services', '-o', 'json'], {
      fetch: server.fetch,
      nowMs: NOW,
    });
    const both = await runCli(['history', '10.96.0.10', '--owner', 'u1', '-p', 'services'], {
      fetch: server.fetch,
      nowMs: NOW,
    });
    const mixed = await runCli(['history', '10.96.0.10', '-p', 'services', '--at', '1h', '--since', '2h'], {
      fetch: server.fetch,
      nowMs: NOW,
    });
    // Assess
    expect(owner.code).toBe(ExitCode.Ok);
    expect(server.requests[0]!.url.pathname).toBe('/v1/pools/services/owners/u1/history');
    expect(JSON.parse(owner.out)).toEqual({ items: [ended] });
    expect(both.code).toBe(ExitCode.Usage);
    expect(mixed.code).toBe(ExitCode.Usage);
    expect(server.requests).toHaveLength(1);
  });
});
