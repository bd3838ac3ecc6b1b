import { describe, expect, it } from 'vitest';
import { accessCases } from '../cases/access.cases.ts';
import { memoryEngine } from '../support/engines.ts';
import { arnMatches, checkAccess, principalFromArn, Role, roleIn } from '../../shared/core/access.ts';
import { InvalidArgumentError } from '../../shared/core/errors.ts';

// On the memory engine: the same cases tests/int/access.int.test.ts runs on DynamoDB Local.
accessCases(memoryEngine);

describe('Function: principalFromArn', () => {
  it.each([
    [
      'arn:aws:sts::123456789012:assumed-role/team-a-ci/build-7',
      { arn: 'arn:aws:iam::123456789012:role/team-a-ci', session: 'build-7' },
    ],
    [
      'arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Admin_0a1b/alice@example.com',
      { arn: 'arn:aws:iam::123456789012:role/AWSReservedSSO_Admin_0a1b', session: 'alice@example.com' },
    ],
    ['arn:aws-cn:sts::123456789012:assumed-role/r/s', { arn: 'arn:aws-cn:iam::123456789012:role/r', session: 's' }],
    ['arn:aws:iam::123456789012:user/alice', { arn: 'arn:aws:iam::123456789012:user/alice' }],
    ['arn:aws:iam::123456789012:root', { arn: 'arn:aws:iam::123456789012:root' }],
    ['arn:aws:sts::123456789012:federated-user/bob', { arn: 'arn:aws:sts::123456789012:federated-user/bob' }],
  ])('reads %s', (text, expected) => {
    // Act
    const principal = principalFromArn(text);

    // Assess
    expect(principal).toEqual(expected);
  });

  it.each([
    'alice',
    'arn:aws:s3:::bucket',
    'arn:aws:iam::12345:user/x',
    'arn:aws:sts::123456789012:assumed-role/only-role',
    'arn:aws:iam::123456789012:user/a b',
  ])('refuses %j', (text) => {
    // Act
    const read = () => principalFromArn(text);

    // Assess
    expect(read).toThrow(InvalidArgumentError);
  });
});

describe('Function: arnMatches', () => {
  it.each<[string, string, boolean]>([
    ['arn:aws:iam::123456789012:role/team-a-ci', 'arn:aws:iam::123456789012:role/team-a-ci', true],
    ['arn:aws:iam::123456789012:role/team-*', 'arn:aws:iam::123456789012:role/team-a-ci', true],
    ['arn:aws:iam::*:role/netops', 'arn:aws:iam::999999999999:role/netops', true],
    ['arn:aws:iam::123456789012:role/team-?-ci', 'arn:aws:iam::123456789012:role/team-b-ci', true],
    ['arn:aws:iam::123456789012:role/team-?-ci', 'arn:aws:iam::123456789012:role/team-bb-ci', false],
    ['arn:aws:iam::123456789012:role/team-a', 'arn:aws:iam::123456789012:role/team-a-ci', false],
    ['arn:aws:iam::123456789012:role/Team-A-CI', 'arn:aws:iam::123456789012:role/team-a-ci', false],
    ['*', 'arn:aws:iam::123456789012:user/x', true],
    [`arn:${'*a'.repeat(40)}`, `arn:${'a'.repeat(200)}b`, false],
  ])('matches %s against %s: %s', (pattern, arn, expected) => {
    // Act
    const matched = arnMatches(pattern, arn);

    // Assess
    expect(matched).toBe(expected);
  });
});

describe('Function: roleIn', () => {
  const access = checkAccess({ administrators: ['arn:aws:iam::1:role/admin'], allocators: ['arn:aws:iam::1:role/*'] });

  it.each([
    ['an administrator matched by both lists', { arn: 'arn:aws:iam::1:role/admin' }, Role.Administrator],
    ['an allocator', { arn: 'arn:aws:iam::1:role/ci' }, Role.Allocator],
    ['a stranger', { arn: 'arn:aws:iam::1:user/ci' }, Role.None],
    ['nobody', undefined, Role.None],
  ])('gives %s its role', (_why, caller, role) => {
    // Act
    const found = roleIn(access, caller);

    // Assess
    expect(found).toBe(role);
  });

  it('makes everyone an administrator of a pool without access (the behaviour before access existed)', () => {
    // Act
    const found = roleIn(undefined, undefined);

    // Assess
    expect(found).toBe(Role.Administrator);
  });
});
