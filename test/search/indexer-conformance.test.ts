import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Resource } from '../../src/fhir/types.js';
import { emptyIndexRows, type IndexRows } from '../../src/indexing/row-types.js';
import { buildIndexRows } from '../../src/indexing/indexer.js';
import { compileFhirPath } from '../../src/indexing/fhirpath-eval.js';
import { getIndexPlan } from '../../src/indexing/plan.js';
import { addRows } from '../../src/indexing/add-rows.js';
import { R4_EXAMPLES } from '../helpers/fixtures.js';

const files = readdirSync(R4_EXAMPLES).filter((name) => name.endsWith('.json')).sort();

function example(name: string): Resource {
  return JSON.parse(readFileSync(fileURLToPath(new URL(name, R4_EXAMPLES)), 'utf8')) as Resource;
}

function rowsOf<T extends keyof IndexRows>(rows: IndexRows, table: T, code: string): IndexRows[T] {
  return rows[table].filter((row) => row.code === code) as IndexRows[T];
}

/** Every row as one sortable line, for comparing two ways of producing rows. */
function lines(rows: IndexRows): string[] {
  return Object.entries(rows)
    .flatMap(([table, list]: [string, object[]]) => list.map((row) => `${table} ${JSON.stringify(row)}`))
    .sort();
}

describe('conformance examples', () => {
  it('has examples to run', () => {
    expect(files.length).toBeGreaterThan(50);
  });

  it.each(files)('indexes %s without throwing', (name) => {
    const rows = buildIndexRows(example(name));
    for (const list of Object.values(rows)) expect(Array.isArray(list)).toBe(true);
  });

  it.each(files)('gives the same rows from the fast path and fhirpath.js for %s', (name) => {
    const resource = example(name);
    for (const param of getIndexPlan(resource.resourceType)) {
      for (const term of param.terms.filter((t) => t.engine === 'fast')) {
        const slow = compileFhirPath(term.expression, true);
        expect(slow, term.expression).toBeDefined();
        let slowValues;
        try {
          slowValues = slow!(resource);
        } catch {
          // fhirpath.js refuses `as` on several values; the fast path filters them instead.
          continue;
        }
        const fastRows = emptyIndexRows();
        const slowRows = emptyIndexRows();
        for (const item of term.evaluate(resource)) addRows(fastRows, param.code, param.type, item);
        for (const item of slowValues) addRows(slowRows, param.code, param.type, item);
        expect(lines(fastRows), `${param.code}: ${term.expression}`).toEqual(lines(slowRows));
      }
    }
  });
});

describe('rows of specific examples', () => {
  it('patient-example.json', () => {
    const rows = buildIndexRows(example('patient-example.json'));
    expect(rowsOf(rows, 'string', 'family').map((row) => row.exact)).toEqual(['Chalmers', 'Windsor']);
    expect(rowsOf(rows, 'string', 'given').map((row) => row.exact)).toEqual(['Peter', 'James', 'Jim']);
    expect(rowsOf(rows, 'token', 'identifier')).toEqual([
      { code: 'identifier', system: 'urn:oid:1.2.36.146.595.217.0.1', value: '12345', text: null },
    ]);
    expect(rowsOf(rows, 'date', 'birthdate')).toEqual([
      { code: 'birthdate', start: '1974-12-25T00:00:00.000Z', end: '1974-12-25T23:59:59.999Z' },
    ]);
    expect(rowsOf(rows, 'token', 'phone').map((row) => row.value)).toEqual([
      '(03) 5555 6473',
      '(03) 3410 5613',
      '(03) 5555 8834',
    ]);
    expect(rowsOf(rows, 'reference', 'organization')).toEqual([
      { code: 'organization', targetType: 'Organization', targetId: '1', url: null },
    ]);
    expect(rowsOf(rows, 'token', 'deceased')).toEqual([{ code: 'deceased', system: null, value: 'false', text: null }]);
  });

  it('observation-example.json', () => {
    const rows = buildIndexRows(example('observation-example.json'));
    expect(rowsOf(rows, 'token', 'code')).toEqual([
      { code: 'code', system: 'http://loinc.org', value: '29463-7', text: 'body weight' },
      { code: 'code', system: 'http://loinc.org', value: '3141-9', text: 'body weight measured' },
      { code: 'code', system: 'http://snomed.info/sct', value: '27113001', text: 'body weight' },
      { code: 'code', system: 'http://acme.org/devices/clinical-codes', value: 'body-weight', text: 'body weight' },
    ]);
    expect(rowsOf(rows, 'reference', 'patient')).toEqual([
      { code: 'patient', targetType: 'Patient', targetId: 'example', url: null },
    ]);
    expect(rowsOf(rows, 'quantity', 'value-quantity')).toEqual([
      { code: 'value-quantity', value: '185', system: 'http://unitsofmeasure.org', unit: '[lb_av]' },
    ]);
    expect(rowsOf(rows, 'date', 'date')).toEqual([
      { code: 'date', start: '2016-03-28T00:00:00.000Z', end: '2016-03-28T23:59:59.999Z' },
    ]);
  });

  it('questionnaireresponse-example-bluebook.json: an absolute subject that is a Patient', () => {
    const rows = buildIndexRows(example('questionnaireresponse-example-bluebook.json'));
    expect(rowsOf(rows, 'reference', 'patient')).toEqual([
      { code: 'patient', targetType: 'Patient', targetId: '1', url: 'http://hl7.org/fhir/Patient/1' },
    ]);
    expect(rowsOf(rows, 'date', 'authored')).toEqual([
      { code: 'authored', start: '2013-02-19T04:15:00.000Z', end: '2013-02-19T04:15:00.999Z' },
    ]);
  });

  it('questionnaire-example.json: url and a month-precision date', () => {
    const rows = buildIndexRows(example('questionnaire-example.json'));
    expect(rowsOf(rows, 'uri', 'url')).toEqual([{ code: 'url', value: 'http://hl7.org/fhir/Questionnaire/3141' }]);
    expect(rowsOf(rows, 'date', 'date')).toEqual([
      { code: 'date', start: '2012-01-01T00:00:00.000Z', end: '2012-01-31T23:59:59.999Z' },
    ]);
  });
});
