import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../shared/core/errors.ts';
import {
  checkLabels,
  formatLabels,
  LabelLimits,
  matchesSelector,
  parseLabelSelector,
} from '../../shared/core/labels.ts';

describe('Function: checkLabels', () => {
  it.each<[string, Record<string, string>]>([
    ['no labels', {}],
    ['a plain key', { app: 'web' }],
    ['a prefixed key', { 'cni.ipam/network': 'pods' }],
    [
      'the four CNI labels',
      {
        'cni.ipam/network': 'pods',
        'cni.ipam/node': 'node-1',
        'cni.ipam/container-id': 'f'.repeat(64),
        'cni.ipam/ifname': 'eth0',
      },
    ],
    ['an empty value', { canary: '' }],
    ['mixed case, digits, dash, underscore and dot inside', { 'My_App.v-2': 'Blue_green.v-1' }],
    ['a one-character name and value', { a: 'b' }],
    ['a 253-character prefix', { [`${'a'.repeat(61)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}/n`]: 'v' }],
    ['a 63-character name', { ['n'.repeat(63)]: 'v' }],
    ['a 128-character value', { id: 'f'.repeat(128) }],
    ['32 labels', Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`k${i}`, `v${i}`]))],
    ['a key named like an Object property', { constructor: 'x', toString: 'y' }],
  ])('accepts %s', (_what, labels) => {
    expect(checkLabels(labels)).toEqual(labels);
  });

  it.each<[string, unknown, string]>([
    ['an array', ['a=b'], 'labels must be an object of label keys to string values.'],
    ['null', null, 'labels must be an object of label keys to string values.'],
    ['a string', 'a=b', 'labels must be an object of label keys to string values.'],
    ['a number value', { app: 7 }, 'Label "app" must have a string value.'],
    [
      '33 labels',
      Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v'])),
      'labels holds 33 labels; a claim may have at most 32.',
    ],
  ])('refuses %s', (_what, labels, message) => {
    expect(() => checkLabels(labels)).toThrow(message);
  });

  const nameRule = "its name must be 1-63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit";
  const prefixedNameRule =
    "its name (after the prefix and '/') must be 1-63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit";
  const prefixRule =
    "its prefix must be a DNS subdomain of at most 253 characters (lower-case letters, digits, '-' and '.', alphanumeric at both ends of each part)";
  const valueRule =
    "its value must be empty or 1-128 letters, digits, '-', '_' or '.', starting and ending with a letter or digit";

  it.each<[string, string, string, string]>([
    ['an empty key', '', 'v', nameRule],
    ['a 64-character name', 'n'.repeat(64), 'v', nameRule],
    ['a name starting with a dash', '-app', 'v', nameRule],
    ['a name ending with a dot', 'app.', 'v', nameRule],
    ['a name starting with an underscore', '_app', 'v', nameRule],
    ['a space', 'my app', 'v', nameRule],
    ['a non-ASCII letter', 'café', 'v', nameRule],
    ['an empty name after the prefix', 'cni.ipam/', 'v', prefixedNameRule],
    ['two slashes', 'a/b/c', 'v', prefixedNameRule],
    ['an empty prefix', '/app', 'v', prefixRule],
    ['an upper-case prefix', 'CNI.ipam/app', 'v', prefixRule],
    ['a prefix with an underscore', 'cni_ipam/app', 'v', prefixRule],
    ['a prefix with an empty part', 'cni..ipam/app', 'v', prefixRule],
    ['a prefix part ending with a dash', 'cni-.ipam/app', 'v', prefixRule],
    [
      'a 254-character prefix',
      `${'a'.repeat(62)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}/n`,
      'v',
      prefixRule,
    ],
    ['a 129-character value', 'id', 'f'.repeat(129), valueRule],
    ['a value ending with a dash', 'app', 'web-', valueRule],
    ['a value with a slash', 'app', 'a/b', valueRule],
    ['a value with a space', 'app', 'a b', valueRule],
  ])('refuses %s, naming the label and the rule', (_what, key, value, rule) => {
    // Act
    let error: unknown;
    try {
      checkLabels({ [key]: value });
    } catch (e) {
      error = e;
    }

    // Assess
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as InvalidArgumentError).message).toBe(
      `Label ${JSON.stringify(key.length > 64 ? `${key.slice(0, 64)}...` : key)} is not valid: ${rule}.`,
    );
    expect((error as InvalidArgumentError).field).toBe(`labels.${key}`);
  });

  it('spells its limits as the contract does', () => {
    expect(LabelLimits).toEqual({ count: 32, prefix: 253, name: 63, value: 128 });
  });
});

describe('Function: parseLabelSelector', () => {
  it.each<[string, string, (readonly [string, string])[]]>([
    ['one pair', 'app=web', [['app', 'web']]],
    [
      'two pairs',
      'cni.ipam/network=pods,cni.ipam/node=node-1',
      [
        ['cni.ipam/network', 'pods'],
        ['cni.ipam/node', 'node-1'],
      ],
    ],
    ['== as equality', 'app==web', [['app', 'web']]],
    ['an empty value', 'canary=', [['canary', '']]],
    [
      'spaces around the parts',
      ' app = web , tier=db ',
      [
        ['app', 'web'],
        ['tier', 'db'],
      ],
    ],
    ['the empty selector (everything)', '', []],
    ['a blank selector (everything)', '  ', []],
    [
      'one key twice (both must hold)',
      'app=a,app=b',
      [
        ['app', 'a'],
        ['app', 'b'],
      ],
    ],
  ])('parses %s', (_what, text, pairs) => {
    expect(parseLabelSelector(text)).toEqual(pairs);
  });

  it.each([
    ['app!=web'],
    ['app'],
    ['!app'],
    ['app in (web,db)'],
    ['app notin (web)'],
    ['app=web,'],
    [',app=web'],
    ['app=web=x'],
    ['app=a b'],
  ])('refuses %j with 400 InvalidArgument', (text) => {
    expect(() => parseLabelSelector(text)).toThrow(/^labelSelector must be a comma-separated list of key=value pairs/);
  });

  it('refuses a pair whose key or value breaks the label rules, naming the rule', () => {
    expect(() => parseLabelSelector('-app=web')).toThrow('Label "-app" is not valid: its name must be');
    expect(() => parseLabelSelector(`app=${'v'.repeat(129)}`)).toThrow(
      'Label "app" is not valid: its value must be empty or 1-128',
    );
  });
});

describe('Function: matchesSelector', () => {
  const labels = { app: 'web', tier: '', 'cni.ipam/node': 'n1' };

  it.each<[string, string, boolean]>([
    ['the empty selector', '', true],
    ['one pair held', 'app=web', true],
    ['every pair held', 'app=web,cni.ipam/node=n1', true],
    ['an empty value held', 'tier=', true],
    ['another value', 'app=db', false],
    ['one pair of two not held', 'app=web,cni.ipam/node=n2', false],
    ['an absent key', 'zone=a', false],
    ['an absent key with an empty value', 'zone=', false],
    ['one key with two values', 'app=web,app=db', false],
    ['an inherited property name', 'constructor=', false],
  ])('%s: %s', (_what, selector, expected) => {
    expect(matchesSelector(labels, parseLabelSelector(selector))).toBe(expected);
  });

  it('matches a claim without labels only with the empty selector', () => {
    expect(matchesSelector(undefined, [])).toBe(true);
    expect(matchesSelector(undefined, [['app', 'web']])).toBe(false);
  });
});

describe('Function: formatLabels', () => {
  it('prints labels as the selector that matches them, keys in order', () => {
    expect(formatLabels({ tier: 'db', app: 'web' })).toBe('app=web,tier=db');
    expect(formatLabels({})).toBe('');
    expect(formatLabels(undefined)).toBe('');
  });
});
