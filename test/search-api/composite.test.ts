import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { create, expectInvalid, found, sorted } from './helpers.js';

/** Composite search parameters (search.html#composite): components from one element, `$` between them. */

const api = await useTestServer();

const LOINC = 'http://loinc.org';
const UCUM = 'http://unitsofmeasure.org';

const coding = (code: string, system = LOINC) => ({ coding: [{ system, code }] });

const observation = (extra: Record<string, unknown> = {}) => ({
  resourceType: 'Observation',
  status: 'final',
  code: coding('8867-4'),
  ...extra,
});

/** A blood pressure panel: systolic and diastolic as components. */
const bloodPressure = (systolic: number, diastolic: number) =>
  observation({
    code: coding('85354-9'),
    component: [
      { code: coding('8480-6'), valueQuantity: { value: systolic, unit: 'mmHg', system: UCUM, code: 'mm[Hg]' } },
      { code: coding('8462-4'), valueQuantity: { value: diastolic, unit: 'mmHg', system: UCUM, code: 'mm[Hg]' } },
    ],
  });

describe('composite parameters', () => {
  it('code-value-quantity matches the code and the value of the same Observation, with a prefix', async () => {
    const p = api.newProject();
    const heartRate = await create(p, observation({ valueQuantity: { value: 120, unit: '/min' } }));
    await create(p, observation({ valueQuantity: { value: 60, unit: '/min' } }));
    await create(p, observation({ code: coding('9279-1'), valueQuantity: { value: 120 } }));
    expect(await found(p, `/Observation?code-value-quantity=${LOINC}|8867-4$gt100`)).toEqual([heartRate]);
    expect(await found(p, '/Observation?code-value-quantity=8867-4$120')).toEqual([heartRate]);
    expect(await found(p, `/Observation?code-value-quantity=${LOINC}|8867-4$gt200`)).toEqual([]);
  });

  it('component-code-value-quantity takes code and value from the same component', async () => {
    const p = api.newProject();
    const high = await create(p, bloodPressure(150, 95));
    const normal = await create(p, bloodPressure(115, 75));
    expect(await found(p, `/Observation?component-code-value-quantity=${LOINC}|8480-6$gt140`)).toEqual([high]);
    // The normal panel's diastolic (75) is below 100, but its systolic (115) is not: no match.
    expect(await found(p, `/Observation?component-code-value-quantity=${LOINC}|8480-6$lt100`)).toEqual([]);
    expect(await found(p, `/Observation?component-code-value-quantity=${LOINC}|8462-4$lt80`)).toEqual([normal]);
  });

  it('a composite value names the unit as a quantity does: value|system|code', async () => {
    const p = api.newProject();
    const panel = await create(p, bloodPressure(150, 95));
    expect(await found(p, `/Observation?component-code-value-quantity=8480-6$150|${UCUM}|mm[Hg]`)).toEqual([panel]);
    expect(await found(p, '/Observation?component-code-value-quantity=8480-6$150||mm[Hg]')).toEqual([panel]);
    expect(await found(p, `/Observation?component-code-value-quantity=8480-6$150|${UCUM}|kPa`)).toEqual([]);
  });

  it('combo-code-value-quantity matches the Observation itself and each of its components', async () => {
    const p = api.newProject();
    const panel = await create(p, bloodPressure(150, 95));
    const weight = await create(p, observation({ code: coding('29463-7'), valueQuantity: { value: 80, unit: 'kg' } }));
    expect(await found(p, '/Observation?combo-code-value-quantity=8480-6$150')).toEqual([panel]);
    expect(await found(p, '/Observation?combo-code-value-quantity=29463-7$80')).toEqual([weight]);
    expect(await found(p, '/Observation?combo-code-value-quantity=29463-7$95')).toEqual([]);
  });

  it('code-value-concept matches a coded value (system|code in both components)', async () => {
    const p = api.newProject();
    const SNOMED = 'http://snomed.info/sct';
    const positive = await create(p, observation({ code: coding('94500-6'), valueCodeableConcept: coding('10828004', SNOMED) }));
    await create(p, observation({ code: coding('94500-6'), valueCodeableConcept: coding('260385009', SNOMED) }));
    expect(await found(p, `/Observation?code-value-concept=${LOINC}|94500-6$${SNOMED}|10828004`)).toEqual([positive]);
    expect(await found(p, '/Observation?code-value-concept=94500-6$10828004')).toEqual([positive]);
  });

  it('code-value-date compares the value as a date range with a prefix', async () => {
    const p = api.newProject();
    const early = await create(p, observation({ code: coding('21112-8'), valueDateTime: '2001-05-06' }));
    const late = await create(p, observation({ code: coding('21112-8'), valueDateTime: '2021-05-06' }));
    expect(await found(p, '/Observation?code-value-date=21112-8$lt2010')).toEqual([early]);
    expect(await found(p, '/Observation?code-value-date=21112-8$2021-05')).toEqual([late]);
  });

  it('code-value-string matches the text by prefix, ignoring case', async () => {
    const p = api.newProject();
    const a = await create(p, observation({ code: coding('8251-1'), valueString: 'Feeling well today' }));
    await create(p, observation({ code: coding('8251-1'), valueString: 'Tired' }));
    expect(await found(p, '/Observation?code-value-string=8251-1$feeling')).toEqual([a]);
  });

  it('an escaped \\$ is part of a component value', async () => {
    const p = api.newProject();
    const a = await create(p, observation({ code: coding('8251-1'), valueString: 'cost $5' }));
    expect(await found(p, `/Observation?code-value-string=8251-1$${encodeURIComponent('cost \\$5')}`)).toEqual([a]);
  });

  it('commas are OR between composite values, repeated parameters AND', async () => {
    const p = api.newProject();
    const high = await create(p, bloodPressure(150, 95));
    const low = await create(p, bloodPressure(90, 55));
    const q = 'component-code-value-quantity';
    expect(await found(p, `/Observation?${q}=8480-6$gt140,8462-4$lt60`)).toEqual(sorted(high, low));
    expect(await found(p, `/Observation?${q}=8480-6$gt140&${q}=8462-4$gt90`)).toEqual([high]);
    expect(await found(p, `/Observation?${q}=8480-6$gt140&${q}=8462-4$lt60`)).toEqual([]);
  });

  it(':missing tells whether the resource has any element with every component', async () => {
    const p = api.newProject();
    const panel = await create(p, bloodPressure(120, 80));
    const plain = await create(p, observation());
    expect(await found(p, '/Observation?component-code-value-quantity:missing=true')).toEqual([plain]);
    expect(await found(p, '/Observation?component-code-value-quantity:missing=false')).toEqual([panel]);
  });

  it('an update replaces the composite rows', async () => {
    const p = api.newProject();
    const id = await create(p, observation({ valueQuantity: { value: 120 } }));
    const res = await p.put(`/Observation/${id}`, { ...observation({ valueQuantity: { value: 60 } }), id });
    expect(res.status, res.text).toBe(200);
    expect(await found(p, '/Observation?code-value-quantity=8867-4$120')).toEqual([]);
    expect(await found(p, '/Observation?code-value-quantity=8867-4$60')).toEqual([id]);
  });

  it('DocumentReference relationship pairs the target with the relation code', async () => {
    const p = api.newProject();
    const docRef = (target: string, code: string) => ({
      resourceType: 'DocumentReference',
      status: 'current',
      content: [{ attachment: { contentType: 'text/plain', url: 'http://example.org/doc' } }],
      relatesTo: [{ code, target: { reference: target } }],
    });
    const replacing = await create(p, docRef('DocumentReference/old-1', 'replaces'));
    await create(p, docRef('DocumentReference/old-1', 'appends'));
    expect(await found(p, '/DocumentReference?relationship=DocumentReference/old-1$replaces')).toEqual([replacing]);
    expect(await found(p, '/DocumentReference?relationship=old-1$replaces')).toEqual([replacing]);
  });

  it('context-type-value on a conformance resource pairs useContext.code with its value', async () => {
    const p = api.newProject();
    const USAGE = 'http://terminology.hl7.org/CodeSystem/usage-context-type';
    const valueSet = (focus: string, venue: string) => ({
      resourceType: 'ValueSet',
      status: 'active',
      useContext: [
        { code: { system: USAGE, code: 'focus' }, valueCodeableConcept: coding(focus, 'http://example.org/focus') },
        { code: { system: USAGE, code: 'venue' }, valueCodeableConcept: coding(venue, 'http://example.org/venue') },
      ],
    });
    const a = await create(p, valueSet('diabetes', 'clinic'));
    await create(p, valueSet('clinic', 'diabetes'));
    expect(await found(p, `/ValueSet?context-type-value=${USAGE}|focus$diabetes`)).toEqual([a]);
  });

  it('MolecularSequence coordinates combine a value of the resource with each variant', async () => {
    const p = api.newProject();
    const sequence = (chromosome: string, start: number, end: number) => ({
      resourceType: 'MolecularSequence',
      coordinateSystem: 0,
      // A chromosome goes with its genome build (invariants msq-5, msq-6).
      referenceSeq: {
        chromosome: coding(chromosome, 'http://terminology.hl7.org/CodeSystem/chromosome-human'),
        genomeBuild: 'GRCh38',
        windowStart: 1,
        windowEnd: 1000,
      },
      variant: [{ start, end }],
    });
    const a = await create(p, sequence('1', 100, 110));
    await create(p, sequence('2', 100, 110));
    expect(await found(p, '/MolecularSequence?chromosome-variant-coordinate=1$ge100$le110')).toEqual([a]);
    expect(await found(p, '/MolecularSequence?chromosome-variant-coordinate=1$gt100$le110')).toEqual([]);
    expect(await found(p, '/MolecularSequence?chromosome-window-coordinate=1$1$1000')).toEqual([a]);
  });

  it('works at the end of a reverse chain', async () => {
    const p = api.newProject();
    const patient = await create(p, { resourceType: 'Patient' });
    await create(p, { ...bloodPressure(160, 100), subject: { reference: `Patient/${patient}` } });
    await create(p, { resourceType: 'Patient' });
    expect(await found(p, '/Patient?_has:Observation:subject:component-code-value-quantity=8480-6$gt140')).toEqual([patient]);
  });

  it('counts and estimates totals like any other search', async () => {
    const p = api.newProject();
    for (let i = 0; i < 3; i++) await create(p, bloodPressure(150, 95));
    const accurate = await p.get('/Observation?component-code-value-quantity=8480-6$gt140&_total=accurate&_count=1');
    expect(accurate.status, accurate.text).toBe(200);
    expect(accurate.body.total).toBe(3);
    const estimate = await p.get('/Observation?component-code-value-quantity=8480-6$gt140&_total=estimate&_count=1');
    expect(estimate.status, estimate.text).toBe(200);
    expect(estimate.body.total).toBeGreaterThanOrEqual(2);
  });

  it('the CapabilityStatement lists the composite parameters', async () => {
    const p = api.newProject();
    const res = await p.get('/metadata');
    const observationSearch = res.body.rest[0].resource.find((r: any) => r.type === 'Observation').searchParam;
    expect(observationSearch.find((sp: any) => sp.name === 'component-code-value-quantity')?.type).toBe('composite');
  });
});

describe('composite parameter errors', () => {
  it('a value with the wrong number of components is 400 naming the parameter and the components', async () => {
    const p = api.newProject();
    const res = await p.get('/Observation?code-value-quantity=8867-4');
    expectInvalid(res, 'code-value-quantity');
    expect(res.body.issue[0].details.text).toContain('code$value-quantity');
  });

  it('a malformed component is 400 naming the parameter', async () => {
    const p = api.newProject();
    expectInvalid(await p.get('/Observation?code-value-quantity=8867-4$high'), 'code-value-quantity');
    expectInvalid(await p.get('/Observation?code-value-date=8867-4$notadate'), 'code-value-date');
  });

  it('a modifier other than :missing is 400', async () => {
    const p = api.newProject();
    expectInvalid(await p.get('/Observation?code-value-quantity:exact=8867-4$5'), ':exact');
  });

  it('sorting by a composite parameter is 400', async () => {
    const p = api.newProject();
    expectInvalid(await p.get('/Observation?_sort=code-value-quantity'), 'code-value-quantity');
  });

  it('a composite whose definition cannot be indexed is 400 not-supported', async () => {
    const p = api.newProject();
    const res = await p.get('/ResearchStudy?progress-status-state-actual=active$true');
    expect(res.status, res.text).toBe(400);
    expect(res.body.issue[0].code).toBe('not-supported');
    expect(res.body.issue[0].details.text).toContain('progress-status-state-actual');
  });
});
