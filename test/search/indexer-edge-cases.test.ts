import { describe, expect, it } from 'vitest';
import type { Resource } from '../../src/fhir/types.js';
import { buildIndexRows } from '../../src/indexing/indexer.js';
import { observation, patient, rowsOf } from './helpers.js';

describe('admin types', () => {
  const membership = {
    resourceType: 'ProjectMembership',
    id: 'm1',
    project: { reference: 'Project/pr1' },
    user: { reference: 'User/u1' },
    profile: { reference: 'Practitioner/doc1' },
    userName: 'Dr Who',
    access: [{ policy: { reference: 'AccessPolicy/ap1' } }],
  };

  it('indexes ProjectMembership references', () => {
    const rows = buildIndexRows(membership);
    expect(rows.reference).toEqual([
      { code: 'project', targetType: 'Project', targetId: 'pr1', url: null },
      { code: 'user', targetType: 'User', targetId: 'u1', url: null },
      { code: 'profile', targetType: 'Practitioner', targetId: 'doc1', url: null },
      { code: 'access-policy', targetType: 'AccessPolicy', targetId: 'ap1', url: null },
    ]);
  });

  it('indexes profile-type from the reference text (resolve().resourceType without loading)', () => {
    expect(rowsOf(membership, 'token', 'profile-type')).toEqual([
      { code: 'profile-type', system: null, value: 'Practitioner', text: null },
    ]);
  });

  it('indexes Project name and ProjectMembership user-name as strings', () => {
    expect(rowsOf(membership, 'string', 'user-name')).toEqual([{ code: 'user-name', value: 'dr who', exact: 'Dr Who' }]);
    expect(rowsOf({ resourceType: 'Project', name: 'Flint' }, 'string', 'name')).toEqual([
      { code: 'name', value: 'flint', exact: 'Flint' },
    ]);
  });
});

describe('rows left out', () => {
  it('removes duplicate rows', () => {
    const name = { family: 'Smith', given: ['Ann', 'Ann'] };
    const resource = patient({ name: [name, { ...name }], identifier: [{ value: 'a' }, { value: 'a' }] });
    expect(rowsOf(resource, 'string', 'given')).toEqual([{ code: 'given', value: 'ann', exact: 'Ann' }]);
    expect(rowsOf(resource, 'token', 'identifier')).toEqual([{ code: 'identifier', system: null, value: 'a', text: null }]);
  });

  it('does not index _id or _lastUpdated; composites only in their own rows', () => {
    const resource = observation({
      meta: { lastUpdated: '2024-01-01T00:00:00Z' },
      code: { coding: [{ system: 'http://loinc.org', code: '1-8' }] },
      valueQuantity: { value: 1 },
    });
    const rows = buildIndexRows(resource);
    const codes = new Set(Object.values(rows).flatMap((list: { code: string }[]) => list.map((row) => row.code)));
    expect(codes.has('_id')).toBe(false);
    expect(codes.has('_lastUpdated')).toBe(false);
    const { composite, ...perKind } = rows;
    expect(Object.values(perKind).some((list: { code: string }[]) => list.some((row) => row.code === 'code-value-quantity'))).toBe(false);
    expect(composite.map((row) => row.code)).toContain('code-value-quantity');
  });

  it('ignores values of unexpected shape without throwing', () => {
    const resource = patient({
      name: 'Smith',
      identifier: { system: 'http://x', value: 'not-in-an-array' },
      birthDate: 19740101,
      gender: { code: 'male' },
      telecom: [null, 42, { system: 'phone', value: ['+1'] }],
      address: [{ city: 7, line: [null, '  '] }],
      generalPractitioner: ['Practitioner/1', { reference: 5 }],
      deceasedDateTime: '2024-02-30',
      meta: { tag: 'vip', profile: 'not-a-list' },
    });
    const rows = buildIndexRows(resource);
    expect(rowsOf(resource, 'string', 'name')).toEqual([]);
    expect(rowsOf(resource, 'date', 'birthdate')).toEqual([]);
    expect(rowsOf(resource, 'date', 'death-date')).toEqual([]);
    expect(rowsOf(resource, 'token', 'gender')).toEqual([]);
    expect(rowsOf(resource, 'token', 'telecom')).toEqual([]);
    expect(rowsOf(resource, 'string', 'address')).toEqual([]);
    expect(rows.reference.filter((row) => row.code === 'general-practitioner')).toEqual([]);
    expect(rows.token.filter((row) => row.code === '_tag')).toEqual([]);
    // A single Identifier where a list belongs is still an Identifier.
    expect(rowsOf(resource, 'token', 'identifier')).toEqual([
      { code: 'identifier', system: 'http://x', value: 'not-in-an-array', text: null },
    ]);
  });

  it('returns empty rows for input that is not a resource', () => {
    expect(buildIndexRows({} as Resource)).toEqual(buildIndexRows({ resourceType: 'NoSuchType' }));
    expect(() => buildIndexRows(null as unknown as Resource)).not.toThrow();
  });
});

describe('index value caps', () => {
  it('cuts long token values and systems to the byte caps without splitting characters', async () => {
    const { buildIndexRows } = await import('../../src/indexing/indexer.js');
    const long = 'é'.repeat(3000);
    const rows = buildIndexRows({ resourceType: 'Patient', identifier: [{ system: `http://x/${long}`, value: long }] });
    const identifier = rows.token.find((row) => row.code === 'identifier')!;
    expect(Buffer.byteLength(identifier.value!, 'utf8')).toBe(1000);
    expect(identifier.value).toBe('é'.repeat(500));
    expect(Buffer.byteLength(identifier.system!, 'utf8')).toBeLessThanOrEqual(500);
  });
});
