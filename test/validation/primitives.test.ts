import { describe, expect, it } from 'vitest';
import { onlyIssue, validationIssues } from './helpers.js';

/** Every primitive type can be an extension value: one carrier for all of them. */
function withExtensionValue(type: string, value: unknown): Record<string, unknown> {
  const key = `value${type.charAt(0).toUpperCase()}${type.slice(1)}`;
  return { resourceType: 'Patient', extension: [{ url: 'http://example.org/ext', [key]: value }] };
}

function expressionOf(type: string): string {
  return `Patient.extension[0].value${type.charAt(0).toUpperCase()}${type.slice(1)}`;
}

const VALID: [string, unknown][] = [
  ['date', '2020'],
  ['date', '2020-02'],
  ['date', '2020-02-29'],
  ['date', '2000-02-29'],
  ['date', '0001-01-01'],
  ['dateTime', '2020'],
  ['dateTime', '2020-12-31'],
  ['dateTime', '2015-02-07T13:28:17-05:00'],
  ['dateTime', '2017-01-01T00:00:00.000Z'],
  ['dateTime', '2016-12-31T23:59:60Z'],
  ['dateTime', '2017-01-01T00:00:00+14:00'],
  ['instant', '2015-02-07T13:28:17.239+02:00'],
  ['instant', '2017-01-01T00:00:00Z'],
  ['time', '13:28:17'],
  ['time', '00:00:00.5'],
  ['code', 'male'],
  ['code', 'two words'],
  ['code', 'tab\tseparated'],
  ['uri', 'http://example.org/a?b=c'],
  ['uri', 'urn:uuid:c757873d-ec9a-4326-a141-556f43239520'],
  ['uri', 'relative/path'],
  ['url', 'https://example.org'],
  ['canonical', 'http://hl7.org/fhir/StructureDefinition/Patient|4.0.1'],
  ['oid', 'urn:oid:1.2.840.113556'],
  ['uuid', 'urn:uuid:c757873d-ec9a-4326-a141-556f43239520'],
  ['markdown', '# Title\n\n*text*'],
  ['base64Binary', 'SGVsbG8='],
  ['base64Binary', 'SGVsbG8h'],
  ['base64Binary', 'SGVs\nbG8='],
  ['string', ' leading and trailing spaces are allowed '],
  ['string', 'non-breaking\u00a0space'],
  ['boolean', false],
  ['integer', 0],
  ['integer', -2147483648],
  ['integer', 2147483647],
  ['positiveInt', 1],
  ['unsignedInt', 0],
  ['decimal', -0.001],
  ['decimal', 100],
  ['id', 'a-B.9'],
];

const INVALID_VALUE: [string, unknown][] = [
  ['date', '2020-13-45'],
  ['date', '2021-02-29'],
  ['date', '1900-02-29'],
  ['date', '2020-04-31'],
  ['date', '2020-1-01'],
  ['date', '0000'],
  ['date', '2020-00'],
  ['date', '2020-01-01T10:00:00Z'],
  ['date', ' 2020'],
  ['dateTime', '2015-02-07T13:28:17'],
  ['dateTime', '2015-02-07T13:28Z'],
  ['dateTime', '2015-02-07T24:00:00Z'],
  ['dateTime', '2015-02-07 13:28:17Z'],
  ['dateTime', '2019-02-29T10:00:00Z'],
  ['dateTime', '2020-01-01T10:00:00+15:00'],
  ['instant', '2015-02-07'],
  ['instant', '2015-02-07T13:28:17'],
  ['instant', '2015-02-30T00:00:00Z'],
  ['time', '24:00:00'],
  ['time', '13:28'],
  ['time', '13:28:17Z'],
  ['code', ' male'],
  ['code', 'male '],
  ['code', 'two  spaces'],
  ['code', 'line\n\nbreaks'],
  ['uri', 'http://example.org/a b'],
  ['url', 'https://example.org/\t'],
  ['canonical', 'http://example.org/ x'],
  ['oid', '1.2.3'],
  ['oid', 'urn:oid:3.1'],
  ['oid', 'urn:oid:1.02'],
  ['uuid', 'urn:uuid:C757873D-EC9A-4326-A141-556F43239520'],
  ['uuid', 'c757873d-ec9a-4326-a141-556f43239520'],
  ['base64Binary', 'SGVsbG8'],
  ['base64Binary', 'SGV$bG8='],
  ['base64Binary', 'SG=sbG8='],
  ['string', ''],
  ['string', 'x'.repeat(1024 * 1024 + 1)],
  ['integer', 2147483648],
  ['integer', 1.5],
  ['positiveInt', 0],
  ['unsignedInt', -1],
  ['decimal', Number.POSITIVE_INFINITY],
];

const WRONG_JSON_TYPE: [string, unknown][] = [
  ['boolean', 'true'],
  ['boolean', 1],
  ['integer', '5'],
  ['decimal', '1.5'],
  ['string', 5],
  ['date', 20200101],
  ['code', true],
];

describe('primitive formats', () => {
  it.each(VALID)('accepts %s %j', (type, value) => {
    expect(validationIssues(withExtensionValue(type, value))).toEqual([]);
  });

  it.each(INVALID_VALUE.map(([type, value]) => [type, String(value).slice(0, 40), value]))(
    'rejects %s %j as an invalid value',
    (type, _shown, value) => {
      expect(onlyIssue(withExtensionValue(type, value))).toMatchObject({ code: 'value', expression: [expressionOf(type)] });
    },
  );

  it.each(WRONG_JSON_TYPE)('rejects %s %j as the wrong JSON type', (type, value) => {
    expect(onlyIssue(withExtensionValue(type, value))).toMatchObject({ code: 'structure', expression: [expressionOf(type)] });
  });
});

describe('primitive elements of resources', () => {
  it('explains a bad date with the expected formats', () => {
    const found = onlyIssue({ resourceType: 'Patient', birthDate: '2020-13-45' });
    expect(found).toMatchObject({ severity: 'error', code: 'value', expression: ['Patient.birthDate'] });
    expect(found.details?.text).toBe('Invalid date "2020-13-45" at Patient.birthDate: expected YYYY, YYYY-MM or YYYY-MM-DD');
  });

  it('explains a day that does not exist in its month', () => {
    const found = onlyIssue({ resourceType: 'Patient', birthDate: '2023-02-29' });
    expect(found.details?.text).toContain('2023-02 has no day 29');
  });

  it('rejects a bad dateTime', () => {
    expect(onlyIssue({ resourceType: 'Patient', deceasedDateTime: '2020-01-01T10:00:00' })).toMatchObject({
      code: 'value',
      expression: ['Patient.deceasedDateTime'],
    });
  });

  it('rejects a bad instant', () => {
    expect(onlyIssue({ resourceType: 'Patient', meta: { lastUpdated: '2020-01-01' } })).toMatchObject({
      code: 'value',
      expression: ['Patient.meta.lastUpdated'],
    });
  });

  it('checks the resource id as an id', () => {
    for (const id of ['has space', 'under_score', 'x'.repeat(65)]) {
      expect(onlyIssue({ resourceType: 'Patient', id })).toMatchObject({ code: 'value', expression: ['Patient.id'] });
    }
  });

  it('accepts a 64-character resource id', () => {
    expect(validationIssues({ resourceType: 'Patient', id: 'x'.repeat(64) })).toEqual([]);
  });

  it('checks code whitespace rules', () => {
    expect(onlyIssue({ resourceType: 'Patient', gender: 'male ' })).toMatchObject({ code: 'value', expression: ['Patient.gender'] });
  });

  it('rejects a bad uri', () => {
    expect(onlyIssue({ resourceType: 'Patient', implicitRules: 'http://example.org/a b' })).toMatchObject({
      code: 'value',
      expression: ['Patient.implicitRules'],
    });
  });

  it('requires narrative XHTML to be a div', () => {
    const text = { status: 'generated', div: '<p>hello</p>' };
    expect(onlyIssue({ resourceType: 'Patient', text })).toMatchObject({ code: 'value', expression: ['Patient.text.div'] });
  });
});
