import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fhirpath from 'fhirpath';
import r4Model from 'fhirpath/fhir-context/r4';
import { describe, expect, it } from 'vitest';
import { getResourceTypes, getSearchParameters, getSearchParametersFor } from '../../src/fhir/definitions.js';
import type { Resource } from '../../src/fhir/types.js';
import { emptyIndexRows, type CompositeRow } from '../../src/indexing/row-types.js';
import { buildIndexRows } from '../../src/indexing/indexer.js';
import { collectComposites, findCompositePlan, getCompositePlans, MAX_ROWS_PER_ELEMENT } from '../../src/indexing/composite.js';
import { addRows } from '../../src/indexing/add-rows.js';
import { R4_EXAMPLES } from '../helpers/fixtures.js';
import { observation, rowsOf } from './helpers.js';

/** The columns of a row that are set, for readable expectations. */
function set(row: CompositeRow): Record<string, string> {
  return Object.fromEntries(Object.entries(row).filter(([, value]) => value !== null)) as Record<string, string>;
}

const composites = (resource: Resource, code: string) => rowsOf(resource, 'composite', code).map(set);

const coding = (code: string, system = 'http://loinc.org') => ({ coding: [{ system, code }] });

describe('composite rows', () => {
  it('every R4 composite parameter compiles, except those whose components have no definition', () => {
    const missing: string[] = [];
    for (const type of getResourceTypes()) {
      for (const param of getSearchParametersFor(type)) {
        if (param.type === 'composite' && !findCompositePlan(type, param.code)) missing.push(`${type}.${param.code}`);
      }
    }
    expect(missing).toEqual([
      'ResearchStudy.progress-status-state-actual',
      'ResearchStudy.progress-status-state-period',
      'ResearchStudy.progress-status-state-period-actual',
    ]);
  });

  it('gives one row per component of an Observation, code and value from the same component', () => {
    const resource = observation({
      code: coding('85354-9'),
      component: [
        { code: coding('8480-6'), valueQuantity: { value: 120, system: 'http://unitsofmeasure.org', code: 'mm[Hg]' } },
        { code: coding('8462-4'), valueQuantity: { value: 80 } },
      ],
    });
    expect(composites(resource, 'component-code-value-quantity')).toEqual([
      { code: 'component-code-value-quantity', system1: 'http://loinc.org', value1: '8480-6', system2: 'http://unitsofmeasure.org', value2: 'mm[Hg]', number2: '120' },
      { code: 'component-code-value-quantity', system1: 'http://loinc.org', value1: '8462-4', number2: '80' },
    ]);
    // The panel itself has no value: no code-value-quantity row.
    expect(composites(resource, 'code-value-quantity')).toEqual([]);
  });

  it('gives one row per coding when the code has several', () => {
    const resource = observation({ code: { coding: [{ system: 'http://a', code: '1' }, { system: 'http://b', code: '2' }], text: 'x' }, valueString: 'Hello' });
    expect(composites(resource, 'code-value-string')).toEqual([
      { code: 'code-value-string', system1: 'http://a', value1: '1', value2: 'hello' },
      { code: 'code-value-string', system1: 'http://b', value1: '2', value2: 'hello' },
    ]);
  });

  it('caps the rows of one element', () => {
    const many = Array.from({ length: 20 }, (_, i) => ({ system: 'http://a', code: `c${i}` }));
    const resource = observation({ code: { coding: many }, valueCodeableConcept: { coding: many } });
    expect(composites(resource, 'code-value-concept')).toHaveLength(MAX_ROWS_PER_ELEMENT);
  });

  it('stores a date component as its range', () => {
    expect(composites(observation({ code: coding('x'), valueDateTime: '2020-05' }), 'code-value-date')).toEqual([
      { code: 'code-value-date', system1: 'http://loinc.org', value1: 'x', start2: '2020-05-01T00:00:00.000Z', end2: '2020-05-31T23:59:59.999Z' },
    ]);
  });

  it('reads DocumentReference relationship with its components the right way round', () => {
    const resource = { resourceType: 'DocumentReference', status: 'current', content: [], relatesTo: [{ code: 'replaces', target: { reference: 'DocumentReference/a' } }] } as Resource;
    expect(composites(resource, 'relationship')).toEqual([{ code: 'relationship', system1: 'DocumentReference', value1: 'a', value2: 'replaces' }]);
  });

  it('joins a value of the resource (%resource) to each element', () => {
    const resource = {
      resourceType: 'MolecularSequence',
      coordinateSystem: 0,
      referenceSeq: { chromosome: coding('1', 'http://c'), referenceSeqId: coding('NC_1', 'http://r') },
      variant: [{ start: 1, end: 2 }, { start: 5, end: 9 }],
    } as Resource;
    expect(composites(resource, 'chromosome-variant-coordinate')).toEqual([
      { code: 'chromosome-variant-coordinate', system1: 'http://c', value1: '1', number2: '1', number3: '2' },
      { code: 'chromosome-variant-coordinate', system1: 'http://c', value1: '1', number2: '5', number3: '9' },
    ]);
  });

  it('gives no row when a component has no value', () => {
    expect(composites(observation({ code: coding('x') }), 'code-value-quantity')).toEqual([]);
  });
});

describe('Reference.identifier rows', () => {
  it('are token rows under <param>:identifier, with or without a reference', () => {
    const resource = observation({ subject: { reference: 'Patient/1', identifier: { system: 'http://h', value: 'MRN1' } } });
    expect(rowsOf(resource, 'token', 'subject:identifier')).toEqual([{ code: 'subject:identifier', system: 'http://h', value: 'MRN1', text: null }]);
    const only = observation({ subject: { identifier: { value: 'MRN2' } } });
    expect(rowsOf(only, 'token', 'subject:identifier')).toEqual([{ code: 'subject:identifier', system: null, value: 'MRN2', text: null }]);
    expect(rowsOf(only, 'reference', 'subject')).toEqual([]);
  });
});

// The fast path against fhirpath.js, on HL7's examples -----------------------------------------------

const files = readdirSync(R4_EXAMPLES).filter((name) => name.endsWith('.json')).sort();
const byUrl = new Map(getSearchParameters().map((param) => [param.url, param]));
const FIXES: Record<string, string> = {
  'http://hl7.org/fhir/SearchParameter/DocumentReference-relatesto': 'target',
  'http://hl7.org/fhir/SearchParameter/DocumentReference-relation': 'code',
};

/** Component values of every element, evaluated with fhirpath.js (one sorted line per element). */
function slowElements(resource: Resource, code: string): string[] {
  const param = getSearchParametersFor(resource.resourceType).find((p) => p.code === code)!;
  const options = { resolveInternalTypes: false } as const;
  const terms = param.expression!.split('|').map((t) => t.trim()).filter((t) => t === resource.resourceType || t.startsWith(`${resource.resourceType}.`));
  const elements = fhirpath.evaluate(resource, terms.join(' | '), undefined, r4Model, options) as object[];
  return elements.map((element) =>
    param
      .component!.map((component) => {
        const definition = byUrl.get(component.definition)!;
        const expression = (param.url.endsWith('DocumentReference-relationship') ? FIXES[component.definition] : component.expression).replace(
          '%resource.',
          `%context.`,
        );
        const input = expression.startsWith('%context.') ? resource : element;
        const path = expression.replace('%context.', `${resource.resourceType}.`);
        const values = fhirpath.evaluate(input, path, undefined, r4Model, options) as { data: unknown; getTypeInfo(): { name: string } }[];
        const rows = emptyIndexRows();
        for (const value of values) {
          const data = value.data instanceof fhirpath.FP_Decimal ? value.data.toNumber() : value.data;
          addRows(rows, definition.code, definition.type, { value: data, type: value.getTypeInfo()?.name?.replace(/^DateTime$/, 'dateTime') });
        }
        return JSON.stringify(Object.values(rows).flat().filter((row) => (row as { value?: unknown }).value !== null).length);
      })
      .join(','),
  );
}

describe('composite rows on HL7 examples', () => {
  it.each(files)('agree with fhirpath.js on how many values each component has, for %s', (name) => {
    const resource = JSON.parse(readFileSync(fileURLToPath(new URL(name, R4_EXAMPLES)), 'utf8')) as Resource;
    const plans = getCompositePlans(resource.resourceType);
    if (plans.length === 0) return;
    expect(() => buildIndexRows(resource)).not.toThrow();
    for (const plan of plans) {
      const fast = collectComposites(resource, [plan]).length;
      const counts = slowElements(resource, plan.code).map((line) => line.split(',').map(Number));
      const expected = counts.reduce((sum, list) => sum + Math.min(MAX_ROWS_PER_ELEMENT, list.reduce((a, b) => a * b, 1)), 0);
      // Rows are deduplicated, so the fast path can give fewer, never more.
      expect(fast, plan.code).toBeLessThanOrEqual(expected);
      if (expected > 0) expect(fast, plan.code).toBeGreaterThan(0);
    }
  });
});
