import { defineConfig } from 'vitest/config';
import { runnableTiers } from './scripts/system-tiers.ts';

// Tiers, visible in file names: *.test.ts (no network), *.int.test.ts (DynamoDB Local), *.e2e.test.ts (local stack
// over HTTP), *.net.test.ts (real network namespaces and the reference CNI plugins, root), *.browser.test.ts
// (Debian's chromium) and *.runtime.test.ts (Podman running containers). The last three run only where the machine
// can; scripts/system-tiers.ts says in one line why not, and fails the run under CI.
const systemTiers = runnableTiers(['net', 'browser', 'runtime']);

export default defineConfig({
  test: {
    projects: [
      // Unit tests are quick alone; the timeout only guards against a hang, and a loaded 2-core machine running the
      // files in parallel made the near-full allocator cases (1.3 s alone) pass 5 s.
      { test: { name: 'unit', include: ['tests/unit/**/*.test.ts'], testTimeout: 30_000 } },
      {
        test: {
          name: 'int',
          include: ['tests/int/**/*.int.test.ts'],
          globalSetup: ['tests/support/dynamodb-global-setup.ts'],
          setupFiles: ['tests/support/drop-tables.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['tests/e2e/**/*.e2e.test.ts'],
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
