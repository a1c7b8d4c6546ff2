import { describe, expect, it } from 'vitest';
import { onlyIssue, typicalPatient, validationIssues } from './helpers.js';

function patient(extra: Record<string, unknown>): Record<string, unknown> {
  return { resourceType: 'Patient', ...extra };
}

describe('unknown elements', () => {
  it('rejects an unknown element at the root', () => {
    const found = onlyIssue({ ...typicalPatient(), nickname: 'Pete' });
    expect(found).toMatchObject({ severity: 'error', code: 'structure', expression: ['Patient.nickname'] });
    expect(found.details?.text).toContain('"nickname"');
  });

  it('rejects an unknown element inside a datatype', () => {
    expect(onlyIssue(patient({ name: [{ family: 'X', middle: 'Y' }] }))).toMatchObject({
      code: 'structure',
      expression: ['Patient.name[0].middle'],
    });
  });

  it('rejects an unknown element inside a backbone element', () => {
    expect(onlyIssue(patient({ contact: [{ gender: 'male', phone: '123' }] }))).toMatchObject({
      code: 'structure',
      expression: ['Patient.contact[0].phone'],
    });
  });

  it('rejects fhir_comments', () => {
    expect(onlyIssue(patient({ fhir_comments: ['note'] }))).toMatchObject({ code: 'structure', expression: ['Patient.fhir_comments'] });
  });

  it('rejects a "_" sibling of a complex element', () => {
    expect(onlyIssue(patient({ _name: [{ id: 'x' }] }))).toMatchObject({ code: 'structure', expression: ['Patient._name'] });
  });

  it('rejects resourceType inside a datatype', () => {
    expect(onlyIssue(patient({ name: [{ resourceType: 'HumanName', family: 'X' }] }))).toMatchObject({
      code: 'structure',
      expression: ['Patient.name[0].resourceType'],
    });
  });

  it('rejects prototype-pollution keys as unknown elements', () => {
    const body = JSON.parse('{"resourceType":"Patient","__proto__":{"admin":true},"constructor":1}') as unknown;
    expect(validationIssues(body).map((found) => [found.code, found.expression?.[0]])).toEqual([
      ['structure', 'Patient.__proto__'],
      ['structure', 'Patient.constructor'],
    ]);
  });
});

describe('JSON types', () => {
  it('rejects a string where a boolean is expected', () => {
    expect(onlyIssue(patient({ active: 'true' }))).toMatchObject({ code: 'structure', expression: ['Patient.active'] });
  });

  it('rejects a number where a string is expected', () => {
    expect(onlyIssue(patient({ name: [{ family: 42 }] }))).toMatchObject({ code: 'structure', expression: ['Patient.name[0].family'] });
  });

  it('rejects a string where an object is expected', () => {
    expect(onlyIssue(patient({ maritalStatus: 'M' }))).toMatchObject({ code: 'structure', expression: ['Patient.maritalStatus'] });
  });

  it('rejects an object where a primitive is expected', () => {
    expect(onlyIssue(patient({ birthDate: { value: '2000-01-01' } }))).toMatchObject({
      code: 'structure',
      expression: ['Patient.birthDate'],
    });
  });

  it('rejects a non-integer where an integer is expected', () => {
    const found = onlyIssue(patient({ multipleBirthInteger: 1.5 }));
    expect(found).toMatchObject({ code: 'value', expression: ['Patient.multipleBirthInteger'] });
  });
});

describe('arrays and cardinality', () => {
  it('requires an array for a repeating element', () => {
    const found = onlyIssue(patient({ name: { family: 'X' } }));
    expect(found).toMatchObject({ code: 'structure', expression: ['Patient.name'] });
    expect(found.details?.text).toContain('array');
  });

  it('requires an array for a repeating primitive', () => {
    expect(onlyIssue(patient({ name: [{ given: 'Peter' }] }))).toMatchObject({
      code: 'structure',
      expression: ['Patient.name[0].given'],
    });
  });

  it('requires a single value for an element with max 1', () => {
    expect(onlyIssue(patient({ gender: ['male'] }))).toMatchObject({ code: 'structure', expression: ['Patient.gender'] });
  });

  it('requires a single object for a complex element with max 1', () => {
    expect(onlyIssue(patient({ maritalStatus: [{ text: 'M' }] }))).toMatchObject({
      code: 'structure',
      expression: ['Patient.maritalStatus'],
    });
  });
});

describe('required elements', () => {
  it('reports each missing required element of the resource', () => {
    expect(validationIssues({ resourceType: 'Observation' }).map((found) => [found.code, found.expression?.[0]])).toEqual([
      ['required', 'Observation.status'],
      ['required', 'Observation.code'],
    ]);
  });

  it('reports a missing required element inside a present backbone element', () => {
    const observation = { resourceType: 'Observation', status: 'final', code: { text: 'x' }, component: [{ valueString: 'a' }] };
    expect(onlyIssue(observation)).toMatchObject({ code: 'required', expression: ['Observation.component[0].code'] });
  });

  it('reports a missing required element through a contentReference', () => {
    const questionnaire = {
      resourceType: 'Questionnaire',
      status: 'active',
      item: [{ linkId: '1', type: 'group', item: [{ type: 'string', text: 'Name' }] }],
    };
    expect(onlyIssue(questionnaire)).toMatchObject({ code: 'required', expression: ['Questionnaire.item[0].item[0].linkId'] });
  });

  it('reports a missing required choice element with [x]', () => {
    const project = { resourceType: 'Project', setting: [{ name: 'flag' }] };
    expect(onlyIssue(project)).toMatchObject({ code: 'required', expression: ['Project.setting[0].value[x]'] });
  });

  it('counts a primitive present only through its "_" sibling', () => {
    const _status = { extension: [{ url: 'http://hl7.org/fhir/StructureDefinition/data-absent-reason', valueCode: 'unknown' }] };
    const observation = { resourceType: 'Observation', _status, code: { text: 'x' } };
    expect(validationIssues(observation)).toEqual([]);
  });
});

describe('choice types', () => {
  it('rejects a suffix that is not an allowed type', () => {
    const found = onlyIssue(patient({ deceasedString: 'yes' }));
    expect(found).toMatchObject({ code: 'structure', expression: ['Patient.deceasedString'] });
    expect(found.details?.text).toContain('deceasedBoolean, deceasedDateTime');
  });

  it('rejects two values of one choice element', () => {
    expect(onlyIssue(patient({ deceasedBoolean: true, deceasedDateTime: '2020-01-01' }))).toMatchObject({
      code: 'invalid',
      expression: ['Patient.deceasedDateTime'],
    });
  });

  it('accepts a choice value with its "_" sibling', () => {
    const extension = { url: 'http://x.org/e', valueBoolean: true };
    expect(validationIssues(patient({ deceasedBoolean: true, _deceasedBoolean: { extension: [extension] } }))).toEqual([]);
  });

  it('validates the chosen type', () => {
    expect(onlyIssue(patient({ deceasedDateTime: '2020-01-01T10:00' }))).toMatchObject({
      code: 'value',
      expression: ['Patient.deceasedDateTime'],
    });
  });
});

describe('extensions', () => {
  it('requires the url of an extension', () => {
    expect(onlyIssue(patient({ extension: [{ valueString: 'a' }] }))).toMatchObject({
      code: 'required',
      expression: ['Patient.extension[0].url'],
    });
  });

  it('requires the url of a modifier extension', () => {
    expect(onlyIssue(patient({ modifierExtension: [{ valueBoolean: true }] }))).toMatchObject({
      code: 'required',
      expression: ['Patient.modifierExtension[0].url'],
    });
  });

  it('validates nested extensions', () => {
    const extension = { url: 'http://x.org/e', extension: [{ url: 'part', valueDate: '2020-02-30' }] };
    expect(onlyIssue(patient({ extension: [extension] }))).toMatchObject({
      code: 'value',
      expression: ['Patient.extension[0].extension[0].valueDate'],
    });
  });
});

describe('primitive extensions', () => {
  it('accepts _birthDate with an extension', () => {
    const extension = { url: 'http://hl7.org/fhir/StructureDefinition/patient-birthTime', valueDateTime: '1974-12-25T14:35:45-05:00' };
    expect(validationIssues({ ...typicalPatient(), _birthDate: { id: 'b', extension: [extension] } })).toEqual([]);
  });

  it('rejects other elements in _birthDate', () => {
    expect(onlyIssue(patient({ _birthDate: { value: '2000' } }))).toMatchObject({
      code: 'structure',
      expression: ['Patient.birthDate.value'],
    });
  });

  it('rejects a _birthDate that is not an object', () => {
    expect(onlyIssue(patient({ _birthDate: 'x' }))).toMatchObject({ code: 'structure', expression: ['Patient.birthDate'] });
  });

  it('accepts aligned primitive arrays with null gaps', () => {
    const name = { given: ['Peter', null], _given: [null, { extension: [{ url: 'http://x.org/e', valueString: 'J' }] }] };
    expect(validationIssues(patient({ name: [name] }))).toEqual([]);
  });

  it('rejects primitive arrays of different lengths', () => {
    const name = { given: ['Peter', 'James'], _given: [{ id: 'a' }] };
    expect(onlyIssue(patient({ name: [name] }))).toMatchObject({ code: 'structure', expression: ['Patient.name[0].given'] });
  });
});

describe('empty values and null', () => {
  it('rejects an empty string', () => {
    expect(onlyIssue(patient({ name: [{ given: ['Peter', ''] }] }))).toMatchObject({
      code: 'value',
      expression: ['Patient.name[0].given[1]'],
    });
  });

  it('rejects an empty object', () => {
    expect(onlyIssue(patient({ name: [{}] }))).toMatchObject({ code: 'structure', expression: ['Patient.name[0]'] });
  });

  it('rejects an empty array', () => {
    expect(onlyIssue(patient({ name: [] }))).toMatchObject({ code: 'structure', expression: ['Patient.name'] });
  });

  it('rejects a null value', () => {
    expect(onlyIssue(patient({ birthDate: null }))).toMatchObject({ code: 'structure', expression: ['Patient.birthDate'] });
  });

  it('rejects null in an array of objects', () => {
    expect(onlyIssue(patient({ name: [{ family: 'X' }, null] }))).toMatchObject({ code: 'structure', expression: ['Patient.name[1]'] });
  });

  it('rejects null in a primitive array without a "_" sibling', () => {
    expect(onlyIssue(patient({ name: [{ given: ['Peter', null] }] }))).toMatchObject({
      code: 'structure',
      expression: ['Patient.name[0].given[1]'],
    });
  });
});
