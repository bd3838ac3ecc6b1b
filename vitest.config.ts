import { defineConfig } from 'vitest/config';
import { runnableTiers } from './scripts/system-tiers.ts';

// Tiers, visible in file names: *.test.ts (no network), *.int.test.ts (DynamoDB Local), *.e2e.test.ts (local stack
// over HTTP), *.net.test.ts (real network namespaces and the reference CNI plugins, root), *.browser.test.ts
// (Debian's chromium), *.runtime.test.ts (Podman running containers) and *.dns.test.ts (a real BIND 9). The last four run only where the machine
// can; scripts/system-tiers.ts says in one line why not, and fails the run under CI.
const systemTiers = runnableTiers(['net', 'browser', 'runtime', 'dns']);

export default defineConfig({
  test: {
    // Vitest's default on a 2-core machine is one worker, which ran every file one after another.
    maxWorkers: 2,
    projects: [
      // Unit tests are quick alone; the timeout only guards against a hang, and a loaded 2-core machine running the
      // files in parallel made the near-full allocator cases (1.3 s alone) pass 5 s.
      // Unit and int files share their worker's module cache (isolate: false): each file imported the core, the SDK and
      // the adapters again, which cost more than the tests (unit 92 s isolated, 39 s shared, on 2 cores). They hold no
      // state between files: every test builds its own container, table and clock.
      { test: { name: 'unit', include: ['tests/unit/**/*.test.ts'], testTimeout: 30_000, isolate: false } },
      {
        test: {
          name: 'int',
          include: ['tests/int/**/*.int.test.ts'],
          globalSetup: ['tests/support/dynamodb-global-setup.ts'],
          setupFiles: ['tests/support/drop-tables.ts'],
          isolate: false,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      // The quick bench is a child process with its own DynamoDB Local and no local stack, so unlike the other e2e
      // files it needs no machine to itself: it runs beside the unit and int files instead of after them.
      {
        test: {
          name: 'bench',
          include: ['tests/e2e/bench-quick.e2e.test.ts'],
          testTimeout: 600_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['tests/e2e/**/*.e2e.test.ts'],
          exclude: ['tests/e2e/bench-quick.e2e.test.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
      ...systemTiers.map((tier) => ({
        test: {
          name: tier,
          include: [`tests/${tier}/**/*.${tier}.test.ts`],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      })),
    ],
  },
});
