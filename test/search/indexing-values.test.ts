import { describe, expect, it } from 'vitest';
import { dateRange } from '../../src/indexing/dates.js';
import { parseCanonical, parseReference, referencedType } from '../../src/indexing/references.js';
import { clean, normalise } from '../../src/indexing/text.js';

describe('dateRange', () => {
  it.each([
    ['2024', '2024-01-01T00:00:00.000Z', '2024-12-31T23:59:59.999Z'],
    ['2024-12', '2024-12-01T00:00:00.000Z', '2024-12-31T23:59:59.999Z'],
    ['2024-02-29', '2024-02-29T00:00:00.000Z', '2024-02-29T23:59:59.999Z'],
    ['0050-06-01', '0050-06-01T00:00:00.000Z', '0050-06-01T23:59:59.999Z'],
    ['2024-03-05T23:30:00-05:00', '2024-03-06T04:30:00.000Z', '2024-03-06T04:30:00.999Z'],
    ['2024-03-05T10:00:00Z', '2024-03-05T10:00:00.000Z', '2024-03-05T10:00:00.999Z'],
    ['2024-03-05T10:00:00', '2024-03-05T10:00:00.000Z', '2024-03-05T10:00:00.999Z'],
    ['2024-03-05T10:00:00.5Z', '2024-03-05T10:00:00.500Z', '2024-03-05T10:00:00.599Z'],
    ['2024-03-05T10:00:00.123456Z', '2024-03-05T10:00:00.123Z', '2024-03-05T10:00:00.123Z'],
    ['2024-03-05T10:00Z', '2024-03-05T10:00:00.000Z', '2024-03-05T10:00:59.999Z'],
  ])('%s covers %s to %s', (text, start, end) => {
    expect(dateRange(text)).toEqual({ start, end });
  });

  it.each(['', '24', '2023-02-29', '2024-13', '2024-00-10', '2024-03-05T25:00:00Z', '2024-03-05 10:00', 'today', '2024-03-05T10:00:00+2'])(
    'rejects %j',
    (text) => {
      expect(dateRange(text)).toBeUndefined();
    },
  );
});

describe('references', () => {
  it.each([
    ['Patient/123', { targetType: 'Patient', targetId: '123', url: null }],
    ['Patient/123/_history/2', { targetType: 'Patient', targetId: '123', url: null }],
    ['http://a.org/fhir/Patient/1', { targetType: 'Patient', targetId: '1', url: 'http://a.org/fhir/Patient/1' }],
    ['http://a.org/fhir/Patient/1/_history/9', { targetType: 'Patient', targetId: '1', url: 'http://a.org/fhir/Patient/1/_history/9' }],
    ['NoSuchType/1', { targetType: null, targetId: null, url: 'NoSuchType/1' }],
    ['urn:uuid:1', { targetType: null, targetId: null, url: 'urn:uuid:1' }],
  ])('parseReference(%s)', (text, expected) => {
    expect(parseReference(text)).toEqual(expected);
  });

  it('skips contained references', () => {
    expect(parseReference('#p1')).toBeUndefined();
  });

  it('reads the target of a versioned canonical but keeps it as written', () => {
    expect(parseCanonical('http://x.org/ValueSet/vs|2.0')).toEqual({
      targetType: 'ValueSet',
      targetId: 'vs',
      url: 'http://x.org/ValueSet/vs|2.0',
    });
    expect(parseCanonical('http://x.org/fhir/vs/a')).toEqual({ targetType: null, targetId: null, url: 'http://x.org/fhir/vs/a' });
  });

  it('gives the referenced type for resolve()', () => {
    expect(referencedType({ reference: 'Group/1' })).toBe('Group');
    expect(referencedType({ reference: '#c' })).toBeUndefined();
    expect(referencedType({ reference: 'urn:uuid:1', type: 'Patient' })).toBe('Patient');
    expect(referencedType({ reference: 'Group/1', type: 'Patient' })).toBe('Group');
    expect(referencedType({ identifier: { value: '1' } })).toBeUndefined();
    expect(referencedType(42)).toBeUndefined();
  });
});

describe('text', () => {
  it('lower-cases and strips accents', () => {
    expect(normalise('ÉLODIE Çelik Ñandú')).toBe('elodie celik nandu');
  });

  it('trims, drops empty text and NUL', () => {
    expect(clean('  a\0b ')).toBe('ab');
    expect(clean('   ')).toBeUndefined();
    expect(clean(5)).toBeUndefined();
  });
});
