import { afterEach, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest';

// Each function module is imported fresh (vi.resetModules) under a stubbed environment, as Lambda's init phase
// would load it: a bad setting must make the import itself fail, with one log line naming the setting.

const modules = {
  'functions/http.ts': () => import('../../functions/http.ts'),
  'functions/stream.ts': () => import('../../functions/stream.ts'),
  'functions/reconcile.ts': () => import('../../functions/reconcile.ts'),
} as const;

/** Settings the functions read; each test starts from none of them and stubs what it needs. */
const settings = ['TABLE_NAME', 'DYNAMODB_ENDPOINT', 'LEASE_INDEX_SHARDS', 'FEATURE_GATES', 'RECONCILE_LEAK_STRIKES'] as const;

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

  it.each([
    ['TABLE_NAME is missing', {}, 'TABLE_NAME is not set'],
    ['LEASE_INDEX_SHARDS is zero', { TABLE_NAME: 'ipam-unit', LEASE_INDEX_SHARDS: '0' }, 'LEASE_INDEX_SHARDS must be a number >= 1, not "0"'],
    ['FEATURE_GATES names an unknown gate', { TABLE_NAME: 'ipam-unit', FEATURE_GATES: 'Foo=true' }, 'FEATURE_GATES: unknown gate "Foo"'],
  ])('fails to load when %s, logging one JSON line that names the setting', async (_why, env: Record<string, string>, sentence) => {
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
    expect(JSON.parse(String(line[0]))).toEqual({ level: 'error', message: 'cold start failed', error: 'Error', detail: expect.stringContaining(sentence) });
  });

  it('loads and exports `handler` when the settings are good, logging nothing', async () => {
    // Prepare
    vi.stubEnv('TABLE_NAME', 'ipam-unit');

    // Act
    const module = await modules[name]();

    // Assess
    expect(typeof module.handler).toBe('function');
    expect(errors).not.toHaveBeenCalled();
  });
});
