import { describe, expect, it } from 'vitest';
import { buildIndexRows } from '../../src/indexing/indexer.js';
import { observation, patient, rowsOf } from './helpers.js';

describe('string parameters', () => {
  const resource = patient({
    name: [{ text: 'Dr. José Gonzàlez', family: 'Gonzàlez', given: ['José', ' Ann '], prefix: ['Dr.'], suffix: [''] }],
  });

  it('indexes family lower-cased without accents, and as written for :exact', () => {
    expect(rowsOf(resource, 'string', 'family')).toEqual([{ code: 'family', value: 'gonzalez', exact: 'Gonzàlez' }]);
  });

  it('indexes each given name, trimmed', () => {
    expect(rowsOf(resource, 'string', 'given')).toEqual([
      { code: 'given', value: 'jose', exact: 'José' },
      { code: 'given', value: 'ann', exact: 'Ann' },
    ]);
  });

  it('indexes the parts of a HumanName no other parameter holds for name (family and given have their own), skipping empty parts', () => {
    expect(rowsOf(resource, 'string', 'name')).toEqual([
      { code: 'name', value: 'dr. jose gonzalez', exact: 'Dr. José Gonzàlez' },
      { code: 'name', value: 'dr.', exact: 'Dr.' },
    ]);
    expect(rowsOf(resource, 'string', 'family')).toEqual([{ code: 'family', value: 'gonzalez', exact: 'Gonzàlez' }]);
    expect(rowsOf(resource, 'string', 'given')).toEqual([
      { code: 'given', value: 'jose', exact: 'José' },
      { code: 'given', value: 'ann', exact: 'Ann' },
    ]);
  });

  it('indexes each covered part of an Address for its own parameter, and the rest for address', () => {
    const rows = buildIndexRows(
      patient({
        address: [
          {
            use: 'home',
            text: '1 Rue de l’Église, Genève',
            line: ['1 Rue de l’Église'],
            city: 'Genève',
            district: 'GE',
            state: 'Genève',
            postalCode: '1204',
            country: 'CH',
          },
        ],
      }),
    );
    const byCode = (code: string) => rows.string.filter((row) => row.code === code).map((row) => row.value);
    expect(byCode('address')).toEqual(['1 rue de l’eglise, geneve', '1 rue de l’eglise', 'ge']);
    expect(byCode('address-city')).toEqual(['geneve']);
    expect(byCode('address-state')).toEqual(['geneve']);
    expect(byCode('address-postalcode')).toEqual(['1204']);
    expect(byCode('address-country')).toEqual(['ch']);
    expect(rows.token.filter((row) => row.code === 'address-use')).toEqual([
      { code: 'address-use', system: null, value: 'home', text: null },
    ]);
  });

  it('cuts very long normalised values but keeps the exact text whole', () => {
    const description = 'Ä'.repeat(3000);
    const rows = rowsOf({ resourceType: 'Questionnaire', status: 'draft', description }, 'string', 'description');
    expect(rows).toHaveLength(1);
    expect(rows[0].value).toBe('a'.repeat(512));
    expect(rows[0].exact).toBe(description);
  });
});

describe('token parameters', () => {
  it('indexes an Identifier as system, value and type text', () => {
    const resource = patient({
      identifier: [{ system: 'http://hospital.example.org/mrn', value: 'MRN-1', type: { text: 'Medical Récord' } }],
    });
    expect(rowsOf(resource, 'token', 'identifier')).toEqual([
      { code: 'identifier', system: 'http://hospital.example.org/mrn', value: 'MRN-1', text: 'medical record' },
    ]);
  });

  it('indexes a code without a system', () => {
    expect(rowsOf(patient({ gender: 'female' }), 'token', 'gender')).toEqual([
      { code: 'gender', system: null, value: 'female', text: null },
    ]);
  });

  it('indexes a boolean as true/false', () => {
    expect(rowsOf(patient({ active: false }), 'token', 'active')).toEqual([
      { code: 'active', system: null, value: 'false', text: null },
    ]);
  });

  it('indexes ContactPoint values without their system, split by system for phone and email, telecom storing the other systems', () => {
    const resource = patient({
      telecom: [
        { system: 'phone', value: '+41 44 123 45 67', use: 'home' },
        { system: 'email', value: 'Anna@Example.org' },
        { system: 'fax', use: 'work' },
        { system: 'pager', value: '17' },
      ],
    });
    expect(rowsOf(resource, 'token', 'telecom')).toEqual([{ code: 'telecom', system: null, value: '17', text: null }]);
    expect(rowsOf(resource, 'token', 'phone')).toEqual([
      { code: 'phone', system: null, value: '+41 44 123 45 67', text: null },
    ]);
    expect(rowsOf(resource, 'token', 'email')).toEqual([
      { code: 'email', system: null, value: 'Anna@Example.org', text: null },
    ]);
  });

  it('indexes each coding of a CodeableConcept plus its text, the text standing in for missing displays', () => {
    const resource = observation({
      code: {
        coding: [
          { system: 'http://loinc.org', code: '29463-7', display: 'Body Weight' },
          { system: 'http://snomed.info/sct', code: '27113001' },
        ],
        text: 'Poids',
      },
    });
    expect(rowsOf(resource, 'token', 'code')).toEqual([
      { code: 'code', system: 'http://loinc.org', value: '29463-7', text: 'body weight' },
      { code: 'code', system: 'http://snomed.info/sct', value: '27113001', text: 'poids' },
      { code: 'code', system: null, value: null, text: 'poids' },
    ]);
  });

  it('indexes Observation.valueCodeableConcept for value-concept and not for value-quantity', () => {
    const resource = observation({ valueCodeableConcept: { coding: [{ system: 'http://snomed.info/sct', code: '260385009' }] } });
    expect(rowsOf(resource, 'token', 'value-concept')).toEqual([
      { code: 'value-concept', system: 'http://snomed.info/sct', value: '260385009', text: null },
    ]);
    expect(rowsOf(resource, 'quantity', 'value-quantity')).toEqual([]);
  });

  it('indexes meta.tag as _tag and meta.security as _security', () => {
    const meta = {
      tag: [{ system: 'http://example.org/tags', code: 'vip', display: 'VIP' }],
      security: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-Confidentiality', code: 'R' }],
    };
    expect(rowsOf(patient({ meta }), 'token', '_tag')).toEqual([
      { code: '_tag', system: 'http://example.org/tags', value: 'vip', text: 'vip' },
    ]);
    expect(rowsOf(patient({ meta }), 'token', '_security')).toEqual([
      { code: '_security', system: 'http://terminology.hl7.org/CodeSystem/v3-Confidentiality', value: 'R', text: null },
    ]);
  });

  it('indexes Patient.deceased as a boolean', () => {
    expect(rowsOf(patient({ deceasedDateTime: '2020-01-01' }), 'token', 'deceased')).toEqual([
      { code: 'deceased', system: null, value: 'true', text: null },
    ]);
    expect(rowsOf(patient({}), 'token', 'deceased')).toEqual([{ code: 'deceased', system: null, value: 'false', text: null }]);
  });
});

describe('date parameters', () => {
  it.each([
    ['1974', '1974-01-01T00:00:00.000Z', '1974-12-31T23:59:59.999Z'],
    ['2024-02', '2024-02-01T00:00:00.000Z', '2024-02-29T23:59:59.999Z'],
    ['2023-02', '2023-02-01T00:00:00.000Z', '2023-02-28T23:59:59.999Z'],
    ['1974-12-25', '1974-12-25T00:00:00.000Z', '1974-12-25T23:59:59.999Z'],
  ])('indexes birthDate %s as the whole period it names', (birthDate, start, end) => {
    expect(rowsOf(patient({ birthDate }), 'date', 'birthdate')).toEqual([{ code: 'birthdate', start, end }]);
  });

  it('indexes a dateTime with a time zone as its second in UTC', () => {
    expect(rowsOf(patient({ deceasedDateTime: '2024-03-05T10:00:00+02:00' }), 'date', 'death-date')).toEqual([
      { code: 'death-date', start: '2024-03-05T08:00:00.000Z', end: '2024-03-05T08:00:00.999Z' },
    ]);
  });

  it('indexes a dateTime with milliseconds as that millisecond', () => {
    expect(rowsOf(observation({ effectiveInstant: '2024-03-05T10:00:00.123Z' }), 'date', 'date')).toEqual([
      { code: 'date', start: '2024-03-05T10:00:00.123Z', end: '2024-03-05T10:00:00.123Z' },
    ]);
  });

  it('indexes a Period without an end as open at the end', () => {
    expect(rowsOf(observation({ effectivePeriod: { start: '2024-03-05' } }), 'date', 'date')).toEqual([
      { code: 'date', start: '2024-03-05T00:00:00.000Z', end: null },
    ]);
  });

  it('indexes a Period without a start as open at the start', () => {
    expect(rowsOf(observation({ effectivePeriod: { end: '2024-03' } }), 'date', 'date')).toEqual([
      { code: 'date', start: null, end: '2024-03-31T23:59:59.999Z' },
    ]);
  });

  it('does not read a string choice as a date', () => {
    const carePlan = {
      resourceType: 'CarePlan',
      activity: [{ detail: { status: 'scheduled', scheduledString: '2024' } }],
    };
    expect(rowsOf(carePlan, 'date', 'activity-date')).toEqual([]);
  });

  it('indexes each Timing event', () => {
    const carePlan = {
      resourceType: 'CarePlan',
      status: 'active',
      intent: 'plan',
      subject: { reference: 'Patient/p1' },
      activity: [{ detail: { status: 'scheduled', scheduledTiming: { event: ['2024-01-01', '2024-01-02T08:00:00Z'] } } }],
    };
    expect(rowsOf(carePlan, 'date', 'activity-date')).toEqual([
      { code: 'activity-date', start: '2024-01-01T00:00:00.000Z', end: '2024-01-01T23:59:59.999Z' },
      { code: 'activity-date', start: '2024-01-02T08:00:00.000Z', end: '2024-01-02T08:00:00.999Z' },
    ]);
  });
});

describe('number and quantity parameters', () => {
  it('indexes a decimal as text, and a Range as its low and high (an open end infinite)', () => {
    const resource = {
      resourceType: 'RiskAssessment',
      status: 'final',
      subject: { reference: 'Patient/p1' },
      prediction: [{ probabilityDecimal: 0.025 }, { probabilityRange: { low: { value: 1 } } }],
    };
    expect(rowsOf(resource, 'number', 'probability')).toEqual([
      { code: 'probability', value: '0.025' },
      { code: 'probability', value: '1', high: 'Infinity' },
    ]);
  });

  it('indexes Observation.valueQuantity with its UCUM code as the unit', () => {
    const resource = observation({
      valueQuantity: { value: 72.5, unit: 'kilogram', system: 'http://unitsofmeasure.org', code: 'kg' },
    });
    expect(rowsOf(resource, 'quantity', 'value-quantity')).toEqual([
      { code: 'value-quantity', value: '72.5', system: 'http://unitsofmeasure.org', unit: 'kg' },
    ]);
  });

  it('falls back to Quantity.unit when there is no code', () => {
    expect(rowsOf(observation({ valueQuantity: { value: 3, unit: 'tablets' } }), 'quantity', 'value-quantity')).toEqual([
      { code: 'value-quantity', value: '3', system: null, unit: 'tablets' },
    ]);
  });

  it('indexes Money with the ISO 4217 system and its currency', () => {
    const invoice = { resourceType: 'Invoice', status: 'issued', totalNet: { value: 120.5, currency: 'EUR' } };
    expect(rowsOf(invoice, 'quantity', 'totalnet')).toEqual([
      { code: 'totalnet', value: '120.5', system: 'urn:iso:std:iso:4217', unit: 'EUR' },
    ]);
  });
});

describe('reference parameters', () => {
  it('indexes Observation.subject for subject and, when it is a Patient, for patient', () => {
    const resource = observation({ subject: { reference: 'Patient/123' } });
    expect(rowsOf(resource, 'reference', 'subject')).toEqual([
      { code: 'subject', targetType: 'Patient', targetId: '123', url: null },
    ]);
    expect(rowsOf(resource, 'reference', 'patient')).toEqual([
      { code: 'patient', targetType: 'Patient', targetId: '123', url: null },
    ]);
  });

  it('leaves patient empty when the subject is not a Patient (resolve() is Patient)', () => {
    const resource = observation({ subject: { reference: 'Group/g1' } });
    expect(rowsOf(resource, 'reference', 'subject')).toEqual([
      { code: 'subject', targetType: 'Group', targetId: 'g1', url: null },
    ]);
    expect(rowsOf(resource, 'reference', 'patient')).toEqual([]);
  });

  it('drops the version of a versioned reference', () => {
    expect(rowsOf(observation({ subject: { reference: 'Patient/123/_history/4' } }), 'reference', 'subject')).toEqual([
      { code: 'subject', targetType: 'Patient', targetId: '123', url: null },
    ]);
  });

  it('keeps an absolute reference as a URL, with the type and id it ends in', () => {
    const reference = 'https://other.example.org/fhir/Patient/abc';
    expect(rowsOf(observation({ subject: { reference } }), 'reference', 'patient')).toEqual([
      { code: 'patient', targetType: 'Patient', targetId: 'abc', url: reference },
    ]);
  });

  it('keeps a URN reference as a URL only', () => {
    const reference = 'urn:uuid:5c1e3c4e-3a7e-4a8a-8a5a-9f1e3c4e3a7e';
    expect(rowsOf(observation({ subject: { reference } }), 'reference', 'subject')).toEqual([
      { code: 'subject', targetType: null, targetId: null, url: reference },
    ]);
  });

  it('uses Reference.type for resolve() when the reference text names no type', () => {
    const reference = 'urn:uuid:5c1e3c4e-3a7e-4a8a-8a5a-9f1e3c4e3a7e';
    expect(rowsOf(observation({ subject: { reference, type: 'Patient' } }), 'reference', 'patient')).toEqual([
      { code: 'patient', targetType: null, targetId: null, url: reference },
    ]);
  });

  it('skips contained and identifier-only references', () => {
    const resource = observation({
      subject: { reference: '#p1' },
      performer: [{ identifier: { system: 'http://npi', value: '1' }, type: 'Practitioner' }],
    });
    expect(rowsOf(resource, 'reference', 'subject')).toEqual([]);
    expect(rowsOf(resource, 'reference', 'performer')).toEqual([]);
  });

  it('indexes a canonical as its URL plus the type and id it names', () => {
    const questionnaire = 'http://example.org/fhir/Questionnaire/phq-9|1.0';
    const response = { resourceType: 'QuestionnaireResponse', status: 'completed', questionnaire };
    expect(rowsOf(response, 'reference', 'questionnaire')).toEqual([
      { code: 'questionnaire', targetType: 'Questionnaire', targetId: 'phq-9', url: questionnaire },
    ]);
  });
});

describe('uri parameters', () => {
  it('indexes Questionnaire.url as written', () => {
    const resource = { resourceType: 'Questionnaire', status: 'active', url: 'http://example.org/Questionnaire/PHQ-9' };
    expect(rowsOf(resource, 'uri', 'url')).toEqual([{ code: 'url', value: 'http://example.org/Questionnaire/PHQ-9' }]);
  });

  it('indexes meta.profile as _profile and meta.source as _source', () => {
    const meta = { profile: ['http://hl7.org/fhir/us/core/StructureDefinition/us-core-patient'], source: 'http://lab.example.org' };
    expect(rowsOf(patient({ meta }), 'uri', '_profile')).toEqual([
      { code: '_profile', value: 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-patient' },
    ]);
    expect(rowsOf(patient({ meta }), 'uri', '_source')).toEqual([{ code: '_source', value: 'http://lab.example.org' }]);
  });
});
