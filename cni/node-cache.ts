/**
 * The pool check cache of a node (commands.ts, PoolCheckCache) as files in ipam.stateDir: one per key, written whole
 * (a temporary file renamed) so a reader never sees half of one, and a lock file per key so one process of the node
 * checks the pool while the others wait for its answer. A folder that cannot be read or written only costs the
 * check: it is logged, not fatal. The node's claim records (what RENEW renews) are a folder a key, `claims-<key>`,
 * with an empty file a record (`<claim>~<token>`): ADDs and DELs of one node run at once, and a file each needs no
 * lock. Unlike the cache, a record that cannot be written fails its ADD.
 */
import {
  closeSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  watch,
  writeFileSync,
  type FSWatcher,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { ClaimRecord, PoolCheckCache } from './commands.ts';

/** The file that says a RENEW has listed the node's claims once (commands.ts, PoolCheckCache.recordedClaims). */
const SEEDED = '.seeded';

/** The longest a waiting process sleeps between looks at the lock and the cache when no change in the folder wakes it. */
export const WAIT_POLL_MS = 200;

/**
 * Wakes a waiting process on the next change in a folder (inotify, through fs.watch): the holder writing the cache
 * or removing its lock. Waiting costs no CPU then, which matters when the first hundred pods of a node wait at once
 * while one of them checks the pool. Without a watch (no inotify instance left: Linux allows 128 per user by
 * default) it falls back to looking every WAIT_POLL_MS.
 */
class FolderChanges {
  private watcher: FSWatcher | undefined;
  private changed = false;
  private wake: (() => void) | undefined;

  constructor(dir: string) {
    try {
      this.watcher = watch(dir, { persistent: true }, () => this.signal());
      this.watcher.on('error', () => this.close());
    } catch {
      this.watcher = undefined;
    }
  }

  private signal(): void {
    this.changed = true;
    this.wake?.();
  }

  /** Resolves at the next change since the last call (at once if one came meanwhile), or after `ms`. */
  async next(ms: number): Promise<void> {
    if (!this.changed) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.watcher ? ms : Math.min(ms, WAIT_POLL_MS));
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = undefined;
    }
    this.changed = false;
  }

  close(): void {
    this.watcher?.close();
    this.watcher = undefined;
  }
}

export function fileCache(dir: string, warn: (message: string) => void, timeoutMs: number): PoolCheckCache {
  const read = (key: string): Map<string, number> | undefined => {
    try {
      const doc = JSON.parse(readFileSync(join(dir, `pool-${key}.json`), 'utf8')) as {
        prefixes?: Record<string, number>;
      };
      return doc.prefixes ? new Map(Object.entries(doc.prefixes)) : undefined;
    } catch {
      return undefined;
    }
  };
  return {
    // A lock file made with O_EXCL; one older than the timeout belongs to a process that died, and is taken over.
    async exclusive(key, check, cachedMeanwhile) {
      const lock = join(dir, `pool-${key}.lock`);
      const deadline = Date.now() + timeoutMs;
      let changes: FolderChanges | undefined;
      try {
        for (;;) {
          let fd: number | undefined;
          try {
            mkdirSync(dir, { recursive: true, mode: 0o700 });
            fd = openSync(lock, 'wx');
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return await check();
          }
          if (fd !== undefined) {
            changes?.close();
            try {
              return cachedMeanwhile() ?? (await check());
            } finally {
              closeSync(fd);
              try {
                unlinkSync(lock);
              } catch {
                // Taken over as stale by another process: nothing left to remove.
              }
            }
          }
          // Watch before looking again, so a change between the look and the wait still wakes this process.
          changes ??= new FolderChanges(dir);
          const seen = cachedMeanwhile();
          if (seen !== undefined) return seen;
          if (Date.now() > deadline) return await check();
          try {
            if (Date.now() - statSync(lock).mtimeMs > timeoutMs) unlinkSync(lock);
          } catch {
            // Gone already: the next round takes it.
          }
          await changes.next(Math.max(1, Math.min(WAIT_POLL_MS * 5, deadline - Date.now())));
        }
      } finally {
        changes?.close();
      }
    },
    read,
    write: (key, prefixes) =>
      writeWhole(`pool-${key}.json`, { prefixes: Object.fromEntries(prefixes) }, 'the pool check'),
    readExhausted(key) {
      try {
        const doc = JSON.parse(readFileSync(join(dir, `full-${key}.json`), 'utf8')) as {
          families?: string[];
          atMs?: number;
          reason?: string;
        };
        if (!Array.isArray(doc.families) || typeof doc.atMs !== 'number') return undefined;
        return {
          families: doc.families,
          atMs: doc.atMs,
          ...(typeof doc.reason === 'string' ? { reason: doc.reason } : {}),
        };
      } catch {
        return undefined;
      }
    },
    recordedClaims(key) {
      let files: string[];
      try {
        files = readdirSync(join(dir, `claims-${key}`));
      } catch {
        return { records: [], seeded: false };
      }
      const records: ClaimRecord[] = [];
      for (const file of files) {
        const cut = file.indexOf('~');
        if (cut > 0) records.push({ name: file.slice(0, cut), file });
      }
      return { records, seeded: files.includes(SEEDED) };
    },
    recordClaim(key, name) {
      const folder = join(dir, `claims-${key}`);
      mkdirSync(folder, { recursive: true, mode: 0o700 });
      // A retried ADD of the attachment finds its record: one is enough.
      if (readdirSync(folder).some((file) => file.startsWith(`${name}~`))) return;
      writeFileSync(join(folder, `${name}~${randomBytes(6).toString('hex')}`), '');
    },
    forgetClaim(key, name, records) {
      const folder = join(dir, `claims-${key}`);
      const missing = (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOENT';
      let files: string[];
      try {
        files = records ? records.map((r) => r.file) : readdirSync(folder).filter((f) => f.startsWith(`${name}~`));
      } catch (error) {
        if (!missing(error)) warn(`cannot forget claim ${name} in ${folder}: ${(error as Error).message}`);
        return;
      }
      for (const file of files) {
        try {
          unlinkSync(join(folder, file));
        } catch (error) {
          // Gone already: a DEL and a RENEW forgot it at once.
          if (!missing(error)) warn(`cannot forget claim ${name} in ${folder}: ${(error as Error).message}`);
        }
      }
    },
    markSeeded(key) {
      try {
        mkdirSync(join(dir, `claims-${key}`), { recursive: true, mode: 0o700 });
      } catch {
        // writeWhole says why it cannot write.
      }
      writeWhole(join(`claims-${key}`, SEEDED), {}, 'that the claims were listed');
    },
    writeExhausted: (key, families, reason) =>
      writeWhole(
        `full-${key}.json`,
        { families, atMs: Date.now(), ...(reason ? { reason } : {}) },
        'an exhausted pool',
      ),
  };

  /** Writes a file of the folder whole: a temporary file renamed over it. */
  function writeWhole(name: string, doc: unknown, what: string): void {
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const path = join(dir, name);
      const temporary = `${path}.${process.pid}`;
      writeFileSync(temporary, JSON.stringify(doc));
      renameSync(temporary, path);
    } catch (error) {
      warn(`cannot remember ${what} in ${dir}: ${(error as Error).message}`);
    }
  }
}
