import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { startLocalStack, type LocalStack, type LocalStackOptions } from '../../scripts/local-stack.ts';

/**
 * The local stack for e2e tests: free ports, output kept in memory (set LOCAL_STACK_LOG=1 to also see it), and
 * resolved only once `GET /v1/health` answers 200. Call `stop()` in afterAll.
 */
export async function startTestStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  const show = process.env.LOCAL_STACK_LOG === '1';
  const stack = await startLocalStack({
    log: show ? (line) => process.stderr.write(`${line}\n`) : () => undefined,
    ...options,
  });
  try {
    await waitForHealth(stack);
  } catch (error) {
    await stack.stop();
    throw error;
  }
  return stack;
}

/** Polls GET /v1/health until it answers 200, or fails with the last answer and offline's output. */
export async function waitForHealth(stack: LocalStack, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    try {
      const response = await fetch(`${stack.apiUrl}/v1/health`, { signal: AbortSignal.timeout(5000) });
      if (response.status === 200) return;
      last = `${response.status} ${await response.text()}`;
    } catch (error) {
      last = String(error);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`GET /v1/health did not answer 200 within ${timeoutMs} ms (last: ${last})\n${stack.logTail()}`);
}

/** A JSON request to the stack's HTTP API. */
export async function callApi(
  stack: LocalStack,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; headers: Headers; body: unknown }> {
  const response = await fetch(`${stack.apiUrl}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    // Not JSON: keep the text.
  }
  return { status: response.status, headers: response.headers, body: parsed };
}

/** State letter and process group of a process, from /proc (Linux); undefined when there is no such process. */
function procStat(pid: number): { state: string; pgrp: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) S ppid pgrp ...": comm may hold spaces and parentheses, so read after the last ')'.
    const [state, , pgrp] = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: state ?? '', pgrp: Number(pgrp) };
  } catch {
    return undefined;
  }
}

/**
 * True while a process runs; with a negative id, while any process of that group runs. A zombie (exited, not yet
 * reaped by init after its parent died) does not count: it holds no resources and cannot be stopped.
 */
export function isAlive(pid: number): boolean {
  if (!existsSync('/proc/self/stat')) {
    try {
      process.kill(pid, 0);
      return true;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'EPERM';
    }
  }
  if (pid > 0) {
    const stat = procStat(pid);
    return stat !== undefined && stat.state !== 'Z';
  }
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .some((name) => {
      const stat = procStat(Number(name));
      return stat !== undefined && stat.pgrp === -pid && stat.state !== 'Z';
    });
}
