// @ts-check
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', 'cli/api/openapi.gen.ts', '.serverless/**', '.esbuild/**', 'dist/**', 'bench/results/**', '.data/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-syntax': ['error', { selector: 'ExportDefaultDeclaration', message: 'Use named exports.' }],
    },
  },
  {
    // Configuration is read once, in shared/config.ts; the core's own list below repeats the rule with its others.
    files: ['shared/**/*.ts', 'functions/**/*.ts'],
    ignores: ['shared/config.ts'],
    rules: {
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read configuration in shared/config.ts.' }],
    },
  },
  {
    // The domain core is pure: no AWS SDK, middy, Powertools or Lambda types, and no ambient time or randomness.
    files: ['shared/core/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [
          { group: ['@aws-sdk/*', '@smithy/*'], message: 'The domain core imports no AWS SDK: put DynamoDB code in shared/adapters.' },
          { group: ['@middy/*'], message: 'The domain core imports no middy: put HTTP code in shared/adapters/http.' },
          { group: ['@aws-lambda-powertools/*', 'aws-lambda'], message: 'The domain core imports no Lambda tooling.' },
          { group: ['**/adapters/**'], message: 'The domain core does not depend on adapters.' },
        ],
      }],
      'no-restricted-properties': ['error',
        { object: 'Date', property: 'now', message: 'Take time from the Clock port.' },
        { object: 'Math', property: 'random', message: 'Take randomness from the Random port.' },
        { object: 'process', property: 'env', message: 'Read configuration in shared/config.ts.' },
      ],
    },
  },
  {
    files: ['eslint.config.js', 'vitest.config.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
);
