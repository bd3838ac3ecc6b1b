import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Rfc2136Target } from '../../shared/adapters/dns/rfc2136-target.ts';

/** A real BIND 9 (`named -g`) on a free loopback port, serving the given zones to RFC 2136 updates signed by its own key. */
export interface Bind {
  readonly port: number;
  readonly keyName: string;
  /** The key's base64 secret, as tsig-keygen made it. */
  readonly secret: string;
  dig(name: string, type: string): string[];
  /** An update sent with nsupdate and the same key (what a person with the key would do by hand). */
  nsupdate(commands: string): void;
  stop(): Promise<void>;
}

/** The service's RFC 2136 adapter pointed at this server, signing with its key. */
export function rfc2136TargetOf(bind: Bind): Rfc2136Target {
  return new Rfc2136Target({
    server: '127.0.0.1',
    port: bind.port,
    key: async () => ({ name: `${bind.keyName}.`, secret: Buffer.from(bind.secret, 'base64') }),
  });
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

export async function startBind(zones: readonly string[]): Promise<Bind> {
  const dir = mkdtempSync(join(tmpdir(), 'ipam-bind-'));
  const port = await freePort();
  const keyName = 'ipam-key';
  const keyConf = execFileSync('tsig-keygen', ['-a', 'hmac-sha256', keyName], { encoding: 'utf8' });
  const secret = /secret "([^"]+)"/.exec(keyConf)![1]!;
  writeFileSync(join(dir, 'key.conf'), keyConf);
  const zoneClauses = zones.map((zone, i) => {
    writeFileSync(
      join(dir, `zone${i}.db`),
      `$TTL 60\n@ IN SOA localhost. hostmaster.localhost. 1 60 60 600 60\n@ IN NS localhost.\n`,
    );
    return `zone "${zone}" { type primary; file "${join(dir, `zone${i}.db`)}"; allow-update { key ${keyName}; }; allow-transfer { key ${keyName}; }; };`;
  });
  writeFileSync(
    join(dir, 'named.conf'),
    [
      `include "${join(dir, 'key.conf')}";`,
      // No control channel: its fixed port would clash between runs.
      'controls { };',
      `options { directory "${dir}"; pid-file "${join(dir, 'named.pid')}"; listen-on port ${port} { 127.0.0.1; }; listen-on-v6 { none; }; recursion no; dnssec-validation no; };`,
      ...zoneClauses,
    ].join('\n'),
  );
  const child: ChildProcess = spawn('named', ['-g', '-c', join(dir, 'named.conf'), '-p', String(port)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  child.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const dig = (name: string, type: string) =>
    execFileSync('dig', ['@127.0.0.1', '-p', String(port), '+short', '+tcp', '+time=2', '+tries=1', name, type], {
      encoding: 'utf8',
    })
      .split('\n')
      .filter(Boolean)
      .sort();
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      if (dig(zones[0]!, 'SOA').length > 0) break;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill();
      throw new Error(`named did not start: ${log.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 100)); // poll interval, under the deadline above
  }
  return {
    port,
    keyName,
    secret,
    dig,
    nsupdate: (commands) =>
      execFileSync('nsupdate', ['-y', `hmac-sha256:${keyName}:${secret}`], {
        input: `server 127.0.0.1 ${port}\n${commands}\nsend\n`,
        encoding: 'utf8',
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => {
          rmSync(dir, { recursive: true, force: true });
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}
