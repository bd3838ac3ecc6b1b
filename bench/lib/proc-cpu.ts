/** CPU time of processes read from /proc (Linux): what a benchmark's parts spent, whatever the machine's load. */
import { readdirSync, readFileSync } from 'node:fs';

/** The fields of /proc/<pid>/stat after the command name (Linux), or undefined when the process is gone. */
export function statFields(pid: number | 'self'): string[] | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** CPU seconds used so far by a process (USER_HZ is 100), its reaped children's when asked. */
export function cpuSeconds(pid: number | 'self', children = false, fields = statFields(pid)): number {
  if (!fields) return 0;
  const [user, system] = children ? [fields[13], fields[14]] : [fields[11], fields[12]];
  return (Number(user) + Number(system)) / 100;
}

/** The stat fields of each process of a process group (serverless-offline and its esbuild service), by pid. */
export function groupStats(pgid: number): Map<number, string[]> {
  const stats = new Map<number, string[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(Number(entry));
    if (fields && Number(fields[2]) === pgid) stats.set(Number(entry), fields);
  }
  return stats;
}

/** CPU seconds of every process in a process group, each process's stat read once. */
export function groupCpuSeconds(pgid: number): number {
  return [...groupStats(pgid)].reduce((sum, [pid, fields]) => sum + cpuSeconds(pid, false, fields), 0);
}
