import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { LocalStack } from '../../scripts/local-stack.ts';
import { callApi, startTestStack } from '../support/local-stack.ts';
import {
  extractTours,
  parseAnswer,
  shapeDifferences,
  textShape,
  type Tour,
  type TourStep,
} from '../support/readme-tour.ts';

const scheduleEvent: unknown = JSON.parse(readFileSync(new URL('../../events/schedule.json', import.meta.url), 'utf8'));
type Body = Record<string, unknown> & {
  items?: Record<string, unknown>[];
  addresses?: { address: string; family: string }[];
};

/**
 * The whole service over HTTP on the local stack, with the real handlers: the API writes leases, the stream poller
 * feeds them to the mirror (the legacy bitmaps follow), and the reconciler releases what expired.
 */
describe('Local stack: allocation, stream mirror and reconciler end to end', () => {
  let stack: LocalStack;
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await callApi(stack, method, path, body);
    return { status: res.status, body: (res.body ?? {}) as Body };
  };

  beforeAll(async () => {
    stack = await startTestStack({ params: { reconcileExpiredGraceSeconds: '0' } });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('mirrors a dual-stack claim into both legacy bitmaps, and the reconciler releases it once expired', async () => {
    // Prepare: a pool whose two ranges are the legacy (bitmap-mirrored) ranges of their families.
    expect((await call('POST', '/v1/pools', { name: 'tour' })).status).toBe(201);
    expect((await call('POST', '/v1/pools/tour/ranges', { cidr: '10.96.0.0/24', legacy: true })).status).toBe(201);
    expect((await call('POST', '/v1/pools/tour/ranges', { cidr: 'fd00:10:96::/112', legacy: true })).status).toBe(201);

    // Act 1: a leased dual-stack claim through the API.
    const claim = await call('POST', '/v1/pools/tour/claims', {
      name: 'web',
      owner: { kind: 'Service', name: 'web', uid: 'svc-1' },
      ipFamilyPolicy: 'RequireDualStack',
      addresses: ['10.96.0.10', 'fd00:10:96::a'],
      ttlSeconds: 1,
    });
    expect(claim.status).toBe(201);
    expect(claim.body.addresses!.map((a) => a.address)).toEqual(['10.96.0.10', 'fd00:10:96::a']);

    // Assess 1: the mirror, fed by the table's stream, sets bit 9 (address network+10) in each bitmap.
    // Bit 9 of a big-endian big.Int is 0x02 in the second-to-last byte: bytes [0x02, 0x00], base64 "AgA=".
    for (const range of ['10.96.0.0-24', 'fd00:10:96::-112']) {
      await vi.waitFor(
        async () => {
          const bitmap = await call('GET', `/v1/pools/tour/ranges/${range}/allocation`);
          expect(bitmap.status).toBe(200);
          expect(bitmap.body.data).toBe('AgA=');
          expect(bitmap.body.version).toBeGreaterThan(0);
        },
        { timeout: 30_000, interval: 250 },
      );
    }

    // Act 2: once the TTL has passed, one reconciler run (the scheduled function, through offline's Lambda API).
    await vi.waitFor(async () => expect((await call('GET', '/v1/pools/tour/claims/web')).status).toBe(404), {
      timeout: 10_000,
      interval: 200,
    });
    await stack.invoke('reconciler', scheduleEvent);

    // Assess 2: the claim was released with an event, and the mirror cleared both bitmaps.
    await vi.waitFor(
      async () => {
        const events = await call('GET', '/v1/pools/tour/events');
        expect((events.body.items ?? []).map((e) => e.reason)).toContain('ClaimExpired');
      },
      { timeout: 30_000, interval: 250 },
    );
    for (const range of ['10.96.0.0-24', 'fd00:10:96::-112']) {
      await vi.waitFor(
        async () => expect((await call('GET', `/v1/pools/tour/ranges/${range}/allocation`)).body.data).toBe(''),
        {
          timeout: 30_000,
          interval: 250,
        },
      );
    }
    expect((await call('GET', '/v1/pools/tour/addresses')).body.items).toEqual([]);
    expect(stack.poller!.failures()).toEqual([]);
  });
});

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const tours = extractTours(readme);
/** Each document whose marked blocks run, and its tours in document order (they run in sequence on one stack). */
const documents = [
  { file: 'README.md', tours },
  {
    file: 'docs/blocks.md',
    tours: extractTours(readFileSync(new URL('../../docs/blocks.md', import.meta.url), 'utf8')),
  },
];
const ipamBin = fileURLToPath(new URL('../../cli/bin/ipam.js', import.meta.url));

interface StepRun {
  readonly step: TourStep;
  readonly code: number;
  readonly stdout: string;
  /** HTTP statuses of the step's curl calls, in order. */
  readonly statuses: number[];
  readonly stderr: string;
}

/**
 * Runs a tour's steps in one bash, as a user pasting them would (PORT names the stack's port, which the README's
 * `${PORT:-3000}` reads; `ipam` is the checkout's CLI on the PATH), and splits what each step printed by markers
 * written after it. curl also reports each status on stderr, so an answer's status can be checked without changing
 * what the step prints.
 */
async function runTour(tour: Tour, port: number, dir: string): Promise<StepRun[]> {
  const bin = join(dir, 'bin');
  const shim = join(bin, 'ipam');
  mkdirSync(bin, { recursive: true });
  writeFileSync(shim, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(ipamBin)} "$@"\n`);
  chmodSync(shim, 0o755);
  const script = [
    `curl() { command curl -w '%{stderr}@@status %{http_code}@@\\n' "$@"; }`,
    ...tour.steps.flatMap((step, i) => [
      step.command,
      `__rc=$?; printf '\\n@@step ${i} %d@@\\n' $__rc; printf '\\n@@step ${i} %d@@\\n' $__rc >&2`,
    ]),
  ].join('\n');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${bin}:${process.env.PATH ?? ''}`,
    PORT: String(port),
    NO_COLOR: '1',
  };
  for (const name of Object.keys(env)) if (name.startsWith('IPAM_')) delete env[name];
  const { stdout, stderr } = await new Promise<{ stdout: string; stderr: string }>((resolveRun, reject) => {
    const child = spawn('bash', ['--noprofile', '--norc', '-c', script], {
      cwd: dir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 240_000);
    child.on('error', reject);
    child.on('close', () => {
      clearTimeout(timer);
      resolveRun({ stdout: out, stderr: err });
    });
  });
  const split = (text: string) => {
    const parts = new Map<number, { text: string; code: number }>();
    let rest = text;
    for (;;) {
      const marker = /\n@@step (\d+) (\d+)@@\n/.exec(rest);
      if (marker === null) break;
      parts.set(Number(marker[1]), { text: rest.slice(0, marker.index), code: Number(marker[2]) });
      rest = rest.slice(marker.index + marker[0].length);
    }
    return parts;
  };
  const [outs, errs] = [split(stdout), split(stderr)];
  return tour.steps.map((step, i) => {
    const err = errs.get(i)?.text ?? '';
    return {
      step,
      code: outs.get(i)?.code ?? -1,
      stdout: (outs.get(i)?.text ?? '').replace(/^\n+|\n+$/g, ''),
      statuses: [...err.matchAll(/@@status (\d+)@@/g)].map((m) => Number(m[1])),
      stderr: err.replace(/@@status \d+@@\n?/g, '').trim(),
    };
  });
}

describe('README: the tours run as written against a fresh local stack', () => {
  it('has a curl tour and an ipam tour, each with answers or a transcript to compare', () => {
    expect(tours.map((t) => t.name)).toEqual(expect.arrayContaining(['curl', 'ipam']));
    expect(tours.find((t) => t.name === 'curl')!.steps.filter((s) => s.answer !== undefined).length).toBeGreaterThan(5);
    expect(tours.find((t) => t.name === 'ipam')!.transcripts.length).toBeGreaterThan(0);
  });

  it('runs the tours of docs/blocks.md too', () => {
    expect(documents[1]!.tours.map((t) => t.name)).toEqual(['blocks-doc']);
  });

  // One fresh stack a document: its tours run one after another on it, in document order, as a user following the
  // document on one `npm start` would run them.
  describe.each(documents.map((d) => [d.file, d] as const))('%s', (file, document) => {
    let stack: LocalStack;
    let dir: string;
    const runsOf = new Map<string, StepRun[]>();

    beforeAll(async () => {
      stack = await startTestStack();
      dir = mkdtempSync(join(tmpdir(), 'ipam-tour-'));
      for (const tour of document.tours)
        runsOf.set(tour.name, await runTour(tour, Number(new URL(stack.apiUrl).port), dir));
    }, 600_000);

    afterAll(async () => {
      await stack?.stop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    describe.each(document.tours.map((t) => [t.name, t] as const))('tour %s', (_name, tour) => {
      let runs: StepRun[];
      beforeAll(() => {
        runs = runsOf.get(tour.name)!;
      });

      const where = (run: StepRun) =>
        `${file} line ${run.step.line}: ${run.step.command}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`;

      it('runs every step with exit code 0, and every HTTP call without a shown answer succeeds (2xx)', () => {
        for (const run of runs) {
          expect(run.code, where(run)).toBe(0);
          if (run.step.answer === undefined)
            for (const status of run.statuses) expect(status, where(run)).toBeLessThan(300);
        }
      });

      it('answers each shown `# -> STATUS JSON` with that status and a JSON document of that shape', () => {
        for (const run of runs.filter((r) => r.step.answer !== undefined)) {
          const shown = parseAnswer(run.step.answer!);
          // The status of the step's last call, or of the call whose answer a variable kept (POD=$(curl ...); echo "$POD").
          const status = runs
            .slice(0, runs.indexOf(run) + 1)
            .flatMap((r) => r.statuses)
            .at(-1);
          expect(status, where(run)).toBe(shown.status);
          if (shown.body === undefined) continue;
          let actual: unknown;
          expect(() => (actual = JSON.parse(run.stdout)), where(run)).not.toThrow();
          expect(shapeDifferences(shown.body, actual), where(run)).toEqual([]);
        }
      });

      it('prints what each transcript shows, in shape', () => {
        for (const shown of tour.transcripts) {
          const run = runs.find((r) => r.step.command.trim().startsWith(shown.command));
          expect(run, `no step of the tour starts with \`${shown.command}\``).toBeDefined();
          expect(run!.stdout.split('\n').map(textShape), where(run!)).toEqual(shown.output.map(textShape));
        }
      });
    });
  });
});
