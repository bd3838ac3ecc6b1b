import { defineConfig } from 'vitest/config';

// Three tiers, visible in file names: *.test.ts (no network), *.int.test.ts (DynamoDB Local), *.e2e.test.ts (local stack over HTTP).
export default defineConfig({
  test: {
    projects: [
      { test: { name: 'unit', include: ['tests/unit/**/*.test.ts'] } },
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
    ],
  },
});

