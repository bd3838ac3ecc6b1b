// @ts-check
import tseslint from 'typescript-eslint';

/** What no file of the domain core imports. */
const CORE_PURE = [
  {
    group: ['@aws-sdk/*', '@smithy/*'],
    message: 'The domain core imports no AWS SDK: put DynamoDB code in shared/adapters.',
  },
  { group: ['@middy/*'], message: 'The domain core imports no middy: put HTTP code in shared/adapters/http.' },
  { group: ['@aws-lambda-powertools/*', 'aws-lambda'], message: 'The domain core imports no Lambda tooling.' },
  { group: ['**/adapters/**'], message: 'The domain core does not depend on adapters.' },
];

const MECHANISMS = ['allocator', 'bitmap', 'history', 'mirror', 'occupancy', 'used-up'];
const folders = (names) => names.flatMap((n) => [`**/${n}/**`, `./${n}/**`]);

/**
 * The layers of shared/core, bottom up: base (the top-level files, ip/, base/: the words every layer shares), the
 * mechanisms (MECHANISMS), the use cases, and the reconciler, which drives use cases (its owner release runs the
 * consumers' leave) and so sits on top. This is the coarse rule an editor shows at once; the exact rank of every
 * folder and top-level file, and the absence of any cycle (type imports included), is checked by
 * tests/unit/core-layers.test.ts from the order in docs/architecture.md.
 */
const CORE_LAYERS = [
  {
    files: ['shared/core/*.ts', 'shared/core/ip/**/*.ts', 'shared/core/base/**/*.ts'],
    above: folders([...MECHANISMS, 'use-cases', 'reconciler']),
    why: 'Layering: base (top-level files, ip/, base/) imports nothing above it; move the shared word into base/.',
  },
  {
    files: MECHANISMS.map((m) => `shared/core/${m}/**/*.ts`),
    above: folders(['use-cases', 'reconciler']),
    why: 'Layering: the mechanisms (allocator, bitmap, history, mirror, occupancy, used-up) import only lower mechanisms and base.',
  },
  {
    files: ['shared/core/use-cases/**/*.ts'],
    above: folders(['reconciler']),
    why: 'Layering: a use case never imports the reconciler; its store port sits beside Deps (use-cases/reconcile-ports.ts).',
  },
];

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      'cli/api/openapi.gen.ts',
      'shared/adapters/http/openapi.gen.ts',
      '.serverless/**',
      '.esbuild/**',
      'dist/**',
      'bench/results/**',
      '.data/**',
    ],
  },
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
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Read configuration in shared/config.ts.' },
      ],
    },
  },
  {
    // The domain core is pure: no AWS SDK, middy, Powertools or Lambda types, and no ambient time or randomness.
    files: ['shared/core/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: CORE_PURE }],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'Take time from the Clock port.' },
        { object: 'Math', property: 'random', message: 'Take randomness from the Random port.' },
        { object: 'process', property: 'env', message: 'Read configuration in shared/config.ts.' },
      ],
    },
  },
  // The core's layers (docs/architecture.md), each importing only from the layers below it. A later block replaces
  // the rule for its files, so each one repeats CORE_PURE.
  ...CORE_LAYERS.map(({ files, ignores, above, why }) => ({
    files,
    ...(ignores ? { ignores } : {}),
    rules: { 'no-restricted-imports': ['error', { patterns: [...CORE_PURE, { group: above, message: why }] }] },
  })),
  {
    // Functions take an options object past 4 parameters: named fields read at the call site, positional ones do not.
    // The typescript-eslint rule also counts function types; the ports' method signatures are held to it by selector
    // (the global named-exports rule is repeated, as a later block replaces the rule for its files).
    files: ['shared/core/**/*.ts'],
    rules: {
      '@typescript-eslint/max-params': ['error', { max: 4 }],
      'no-restricted-syntax': [
        'error',
        { selector: 'ExportDefaultDeclaration', message: 'Use named exports.' },
        {
          selector: 'TSMethodSignature[params.length>4]',
          message: 'A port method takes an options object past 4 parameters, as functions do (max-params).',
        },
      ],
    },
  },
  {
    // Budgets across shared/ (adapters included): a function a reader holds in their head (70 lines, blank and comment
    // lines aside) and at most 4 positional parameters; past that, split it or take an options object.
    files: ['shared/**/*.ts'],
    ignores: ['shared/adapters/http/openapi.gen.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 70, skipBlankLines: true, skipComments: true }],
      '@typescript-eslint/max-params': ['error', { max: 4 }],
    },
  },
  {
    // The simulator stands on its own: what it shares with the benchmark (charts) lives in scripts/lib.
    files: ['sim/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/bench/**'], message: 'sim/ imports nothing from bench/: share it through scripts/lib.' },
          ],
        },
      ],
    },
  },
  {
    files: ['eslint.config.js', 'vitest.config.ts'],
    rules: { 'no-restricted-syntax': 'off' },
  },
);
