import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../shared/core/errors.ts';
import { formatCidr, parseCidr } from '../../shared/core/ip/cidr.ts';
import {
  checkGenerateName,
  checkOwnerField,
  checkRangeName,
  checkRangeRef,
  defaultRangeName,
} from '../../shared/core/names.ts';

describe('Function: checkGenerateName', () => {
  it.each([['web'], ['web-'], ['w'], ['a'.repeat(63)], [`${'a'.repeat(60)}---`]])('accepts %j', (value) => {
    expect(checkGenerateName(value)).toBe(value);
  });

  it.each([[''], ['-'], ['-web'], ['Web'], ['web_'], ['a'.repeat(64)], [`web${'-'.repeat(4000)}`]])(
    'throws InvalidArgumentError for %j',
    (value) => {
      expect(() => checkGenerateName(value)).toThrow(InvalidArgumentError);
    },
  );
});

describe('Function: checkOwnerField', () => {
  it.each([['3f1c'], ['ü'.repeat(253)], ['😀'], ['a b#c/d']])('accepts %j', (value) => {
    expect(checkOwnerField(value, 'owner.uid')).toBe(value);
  });

  it.each<[string, unknown]>([
    ['empty', ''],
    ['254 characters', 'u'.repeat(254)],
    ['a lone high surrogate', 'a\ud800'],
    ['a lone low surrogate', '\udc00b'],
    ['a number', 7],
  ])('throws InvalidArgumentError for %s', (_what, value) => {
    expect(() => checkOwnerField(value, 'owner.uid')).toThrow(
      'owner.uid must be 1-253 characters of well-formed Unicode.',
    );
  });
});

describe('Function: checkRangeRef', () => {
  it('accepts the default name of every kind of canonical CIDR, even those checkRangeName refuses', () => {
    // Prepare: IPv6 default names may start with ':'.
    const names = [
      '::/0',
      '::1/128',
      '::ffff:10.0.0.0/120',
      'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ff00/120',
      '10.0.0.0/8',
      '0.0.0.0/0',
    ].map((c) => defaultRangeName(formatCidr(parseCidr(c))));

    // Act + Assess
    for (const name of names) expect(checkRangeRef(name, 'range')).toBe(name);
    expect(() => checkRangeName('::-0')).toThrow(InvalidArgumentError);
  });

  it.each([[''], ['-x'], ['x-'], ['a b'], ['r'.repeat(101)], ['::-1234'], [':'.repeat(40) + '-1']])(
    'throws InvalidArgumentError for %j',
    (value) => {
      expect(() => checkRangeRef(value, 'range')).toThrow(InvalidArgumentError);
    },
  );
});
