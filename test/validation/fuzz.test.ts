import { describe, expect, it } from 'vitest';
import { OperationOutcomeError } from '../../src/fhir/outcome.js';
import { validateResource } from '../../src/validation/index.js';
import { typicalPatient } from './helpers.js';
import { mulberry32 } from '../helpers/prng.js';

/**
 * Malformed bodies must either pass or be rejected with a 400 OperationOutcome: never a crash,
 * a stack overflow or another exception type. Seeded, so a failure reproduces.
 */

const ISSUE_CODES = new Set(['structure', 'required', 'value', 'invalid', 'code-invalid', 'invariant', 'too-costly']);
const ODD_KEYS = [
  ...['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'],
  ...['fhir_comments', '_name', '', 'resourceType'],
];
const OBJECT_KEYS = [...ODD_KEYS, 'family', 'url', 'value'];
const ODD_STRINGS = ['', ' ', '2020-13-45', '1974-12-25', 'male', 'Patient', '\u0000', '\ud800', 'é', '<div>x</div>', '__proto__'];

type Random = () => number;
type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function pick<T>(random: Random, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)] as T;
}

/** Sets an own property even for "__proto__", as JSON.parse does. */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function randomJson(random: Random, depth = 0): Json {
  const choice = Math.floor(random() * (depth > 3 ? 4 : 6));
  switch (choice) {
    case 0:
      return null;
    case 1:
      return random() < 0.5;
    case 2:
      return pick(random, [0, -1, 1.5, 2147483648, -2147483649, 1e308, Number.MIN_VALUE]);
    case 3:
      return random() < 0.95 ? pick(random, ODD_STRINGS) : 'x'.repeat(Math.floor(random() * 1_100_000));
    case 4:
      return Array.from({ length: Math.floor(random() * 4) }, () => randomJson(random, depth + 1));
    default: {
      const object: Record<string, Json> = {};
      for (let i = Math.floor(random() * 4); i > 0; i--) {
        setOwn(object, pick(random, OBJECT_KEYS), randomJson(random, depth + 1));
      }
      return object;
    }
  }
}

/** Every container in a JSON tree, to mutate one at random. */
function containers(value: unknown, found: (Record<string, unknown> | unknown[])[] = []): (Record<string, unknown> | unknown[])[] {
  if (typeof value === 'object' && value !== null) {
    found.push(value as Record<string, unknown> | unknown[]);
    for (const child of Object.values(value)) containers(child, found);
  }
  return found;
}

function mutate(random: Random, body: Record<string, unknown>): void {
  const target = pick(random, containers(body));
  const keys = Object.keys(target);
  const key = keys.length > 0 ? pick(random, keys) : '0';
  const current = (target as Record<string, unknown>)[key];
  const operations: (() => unknown)[] = [
    () => randomJson(random),
    () => [current],
    () => (Array.isArray(current) ? current[0] : current),
    () => ({}),
    () => [],
    () => null,
    () => undefined,
    () => 'x'.repeat(1_100_000),
  ];
  const operation = Math.floor(random() * (operations.length + 2));
  if (operation === operations.length) delete (target as Record<string, unknown>)[key];
  else if (operation === operations.length + 1 && !Array.isArray(target)) setOwn(target, pick(random, ODD_KEYS), randomJson(random));
  else if (Array.isArray(target)) target[Number(key)] = operations[operation]?.();
  else setOwn(target, key, operations[operation]?.());
}

/** Drops the last keys of one object, as a truncated body would. */
function truncate(random: Random, body: Record<string, unknown>): void {
  const objects = containers(body).filter((container) => !Array.isArray(container)) as Record<string, unknown>[];
  const target = pick(random, objects);
  const keys = Object.keys(target);
  for (const key of keys.slice(Math.floor(random() * keys.length))) delete target[key];
}

function nest(depth: number, leaf: (inner: unknown) => unknown): unknown {
  let value: unknown = 'x';
  for (let i = 0; i < depth; i++) value = leaf(value);
  return value;
}

function expectPassOrBadRequest(body: unknown): void {
  try {
    validateResource(body);
  } catch (error) {
    expect(error).toBeInstanceOf(OperationOutcomeError);
    const outcomeError = error as OperationOutcomeError;
    expect(outcomeError.status).toBe(400);
    expect(outcomeError.outcome.issue.length).toBeGreaterThan(0);
    for (const found of outcomeError.outcome.issue) {
      expect(found.severity).toBe('error');
      expect(ISSUE_CODES.has(found.code), found.code).toBe(true);
      expect(typeof found.details?.text).toBe('string');
      for (const expression of found.expression ?? []) expect(typeof expression).toBe('string');
    }
  }
}

describe('fuzz', () => {
  it('survives random JSON values as the body', () => {
    const random = mulberry32(1);
    for (let i = 0; i < 2_000; i++) expectPassOrBadRequest(randomJson(random));
    for (let i = 0; i < 2_000; i++) {
      const body = randomJson(random);
      if (typeof body === 'object' && body !== null && !Array.isArray(body)) {
        setOwn(body, 'resourceType', pick(random, ['Patient', 'Bundle', 'Observation']));
      }
      expectPassOrBadRequest(body);
    }
  });

  it('survives mutations of a valid Patient', () => {
    const random = mulberry32(2);
    for (let i = 0; i < 3_000; i++) {
      const body = typicalPatient();
      for (let count = 1 + Math.floor(random() * 3); count > 0; count--) mutate(random, body);
      expectPassOrBadRequest(body);
      expectPassOrBadRequest(JSON.parse(JSON.stringify(body)));
    }
  });

  it('survives truncated objects', () => {
    const random = mulberry32(3);
    for (let i = 0; i < 1_000; i++) {
      const body = typicalPatient();
      truncate(random, body);
      expectPassOrBadRequest(body);
    }
  });

  it('survives JSON parsed with prototype-pollution keys', () => {
    const text = '{"resourceType":"Patient","__proto__":{"resourceType":"Bundle"},"name":[{"__proto__":[],"constructor":{"prototype":{}}}]}';
    expectPassOrBadRequest(JSON.parse(text));
    expect(({} as Record<string, unknown>).resourceType).toBeUndefined();
  });

  it('survives deep nesting', () => {
    expectPassOrBadRequest({ resourceType: 'Patient', name: nest(100_000, (inner) => [inner]) });
    expectPassOrBadRequest({ resourceType: 'Patient', extension: nest(20_000, (inner) => [{ url: 'u', extension: inner }]) });
    expectPassOrBadRequest(nest(5_000, (inner) => ({ resourceType: 'Bundle', type: 'collection', entry: [{ resource: inner }] })));
    const item = nest(10_000, (inner) => [{ linkId: '1', type: 'group', item: inner }]);
    expectPassOrBadRequest({ resourceType: 'Questionnaire', status: 'active', item });
  });

  it('survives huge strings and arrays', () => {
    expectPassOrBadRequest({ resourceType: 'Patient', id: 'a'.repeat(10_000_000) });
    expectPassOrBadRequest({ resourceType: 'Patient', gender: ' '.repeat(5_000_000) + 'x' });
    expectPassOrBadRequest({ resourceType: 'Patient', birthDate: '2020-01-01'.repeat(1_000_000) });
    expectPassOrBadRequest({ resourceType: 'Binary', contentType: 'text/plain', data: 'A'.repeat(8_000_000) });
    expectPassOrBadRequest({ resourceType: 'Patient', name: Array.from({ length: 200_000 }, () => null) });
    expectPassOrBadRequest({ resourceType: 'Patient', [`k${'e'.repeat(1_000_000)}`]: 1 });
  });

  it('survives values that JSON cannot hold', () => {
    const odd = [undefined, Number.NaN, () => 1, Symbol('s'), 10n, new Date(), new Map()];
    for (const value of odd) {
      expectPassOrBadRequest(value);
      expectPassOrBadRequest({ resourceType: 'Patient', active: value, name: [{ family: value }], extension: [value] });
    }
  });
});
