import { describe, expect, it } from 'vitest';
import { flagGivenToNpm } from '../../scripts/local-stack.ts';

describe('npm start with a stack flag before --', () => {
  it('says how to pass it when npm took it for itself (npm_config_port), and says nothing otherwise', () => {
    // npm start --port 4003 runs the script as `tsx scripts/local-stack.ts 4003` with npm_config_port=true (npm 10).
    expect(flagGivenToNpm({ npm_config_port: 'true' }, ['4003'])).toBe(
      "npm took --port for itself (npm_config_port), not for the stack: pass the stack's flags after --, as in: npm start -- --port 4003",
    );
    expect(flagGivenToNpm({ npm_config_port: 'true', npm_config_stage: 'dev' }, ['4003'])).toContain(
      'npm start -- --port 4003 --stage dev',
    );
    expect(flagGivenToNpm({ npm_config_cache: '/root/.npm', PORT: '4003' }, [])).toBeUndefined();
  });
});
