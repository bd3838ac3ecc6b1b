import { afterAll, afterEach, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest';

// Each function module is imported fresh (vi.resetModules) under a stubbed environment, as Lambda's init phase
// would load it: a bad setting must make the import itself fail, with one log line naming the setting.

const modules = {
  'functions/http.ts': () => import('../../functions/http.ts'),
  'functions/stream.ts': () => import('../../functions/stream.ts'),
  'functions/reconcile.ts': () => import('../../functions/reconcile.ts'),
} as const;

/** Settings the functions read; each test starts from none of them and stubs what it needs. */
const settings = [
  'TABLE_NAME',
  'DYNAMODB_ENDPOINT',
  'LEASE_INDEX_SHARDS',
  'FEATURE_GATES',
  'RECONCILE_LEAK_STRIKES',
  'CURSOR_SECRET',
  'LOCAL_STACK',
  'AWS_LAMBDA_RUNTIME_API',
] as const;
const SECRET = 'unit-cursor-secret-0123456789';

describe.each(Object.keys(modules) as (keyof typeof modules)[])('Module: %s', (name) => {
  let errors: MockInstance<typeof console.error>;

  beforeEach(() => {
    vi.resetModules();
    for (const setting of settings) vi.stubEnv(setting, undefined);
    vi.stubEnv('AWS_REGION', 'us-east-1');
    errors = vi.spyOn(console, 'error').mockImplementation(() => undefined);
  });

  afterEach(() => {
    vi.unstubAllEnvs();
    vi.restoreAllMocks();
  });

  // The function modules last imported hold containers built for this file's settings: later files of the worker
  // (isolate: false) import their own.
  afterAll(() => vi.resetModules());

  it.each([
    ['TABLE_NAME is missing', {}, 'TABLE_NAME is not set'],
    ['CURSOR_SECRET is missing outside the local stack', { TABLE_NAME: 'ipam-unit' }, 'CURSOR_SECRET is not set'],
    [
      'CURSOR_SECRET is empty outside the local stack',
      { TABLE_NAME: 'ipam-unit', CURSOR_SECRET: '' },
      'CURSOR_SECRET is not set',
    ],
    [
      'CURSOR_SECRET is too short outside the local stack',
      { TABLE_NAME: 'ipam-unit', CURSOR_SECRET: 'changeme' },
      'CURSOR_SECRET must be at least 16 characters',
    ],
    [
      'LOCAL_STACK is not a boolean',
      { TABLE_NAME: 'ipam-unit', CURSOR_SECRET: SECRET, LOCAL_STACK: 'yes' },
      'LOCAL_STACK must be true or false',
    ],
    [
      'LEASE_INDEX_SHARDS is zero',
      { TABLE_NAME: 'ipam-unit', CURSOR_SECRET: SECRET, LEASE_INDEX_SHARDS: '0' },
      'LEASE_INDEX_SHARDS must be a number >= 1, not "0"',
    ],
    [
      'FEATURE_GATES names an unknown gate',
      { TABLE_NAME: 'ipam-unit', CURSOR_SECRET: SECRET, FEATURE_GATES: 'Foo=true' },
      'FEATURE_GATES: unknown gate "Foo"',
    ],
    // Lambda's runtime sets AWS_LAMBDA_RUNTIME_API (reserved: a function's configuration cannot); serverless-offline does not.
    [
      'LOCAL_STACK is true on Lambda',
      { TABLE_NAME: 'ipam-unit', CURSOR_SECRET: SECRET, LOCAL_STACK: 'true', AWS_LAMBDA_RUNTIME_API: '127.0.0.1:9001' },
      'LOCAL_STACK=true is refused on Lambda',
    ],
  ])(
    'fails to load when %s, logging one JSON line that names the setting',
    async (_why, env: Record<string, string>, sentence) => {
      // Prepare
      for (const [setting, value] of Object.entries(env)) vi.stubEnv(setting, value);

      // Act
      const loading = modules[name]();

      // Assess
      await expect(loading).rejects.toThrow(sentence);
      expect(errors).toHaveBeenCalledTimes(1);
      const line = errors.mock.calls[0]!;
      expect(line).toHaveLength(1);
      expect(String(line[0])).not.toContain('\n');
      expect(JSON.parse(String(line[0]))).toEqual({
        level: 'error',
        message: 'cold start failed',
        error: 'Error',
        detail: expect.stringContaining(sentence),
      });
    },
  );

  it.each([
    ['with a cursor secret', { CURSOR_SECRET: SECRET }],
    ['on the local stack, where the secret may be left out', { LOCAL_STACK: 'true' }],
  ])(
    'loads and exports `handler` when the settings are good (%s), logging nothing',
    async (_why, env: Record<string, string>) => {
      // Prepare
      vi.stubEnv('TABLE_NAME', 'ipam-unit');
      for (const [setting, value] of Object.entries(env)) vi.stubEnv(setting, value);

      // Act
      const module = await modules[name]();

      // Assess
      expect(typeof module.handler).toBe('function');
      expect(errors).not.toHaveBeenCalled();
    },
  );
});
