import { describe, expect, it } from 'vitest';
import type { ProjectClient } from '../helpers/server.js';
import { useTestServer } from '../helpers/server.js';

const api = await useTestServer();
const params = (...parameter: unknown[]) => ({ resourceType: 'Parameters', parameter });
const period = params({ name: 'periodStart', valueDate: '2024-01-01' }, { name: 'periodEnd', valueDate: '2024-12-31' });
const code = (c: string) => ({ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/measure-population', code: c }] });
const query = (expression: string) => ({ language: 'application/x-fhir-query', expression });

async function seed(client: ProjectClient): Promise<void> {
  for (const gender of ['male', 'female', 'female']) expect((await client.post('/Patient', { resourceType: 'Patient', gender })).status).toBe(201);
  const observation = (loinc: string, date: string) => ({
    resourceType: 'Observation',
    status: 'final',
    code: { coding: [{ system: 'http://loinc.org', code: loinc }] },
    effectiveDateTime: date,
  });
  for (const [loinc, date] of [['8867-4', '2024-03-01'], ['8867-4', '2024-07-01'], ['8867-4', '2023-07-01'], ['8310-5', '2024-05-05']]) {
    expect((await client.post('/Observation', observation(loinc, date))).status).toBe(201);
  }
}

async function measure(client: ProjectClient, group: unknown, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await client.post('/Measure', { resourceType: 'Measure', status: 'active', url: 'http://flint.test/Measure/m1', group: [group], ...extra });
  expect(res.status).toBe(201);
  return res.body.id;
}

describe('Measure/$evaluate-measure', () => {
  it('counts each population and saves a MeasureReport (201)', async () => {
    const client = api.newProject();
    await seed(client);
    const id = await measure(client, {
      population: [
        { code: code('initial-population'), criteria: query('Patient') },
        { code: code('denominator'), criteria: query('Observation') },
        { code: code('numerator'), criteria: query('Observation?code=http://loinc.org|8867-4') },
      ],
    });
    const res = await client.post(`/Measure/${id}/$evaluate-measure`, period);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      resourceType: 'MeasureReport',
      status: 'complete',
      type: 'summary',
      measure: 'http://flint.test/Measure/m1',
      period: { start: '2024-01-01', end: '2024-12-31' },
      group: [{ population: [{ code: code('initial-population'), count: 3 }, { code: code('denominator'), count: 3 }, { code: code('numerator'), count: 2 }] }],
    });
    expect(res.body.id).toBeDefined();
    expect(res.body.meta.versionId).toBeDefined();
    expect(typeof res.body.date).toBe('string');
    expect((await client.get(`/MeasureReport/${res.body.id}`)).status).toBe(200);
  });

  it('counts stratifiers', async () => {
    const client = api.newProject();
    await seed(client);
    const id = await measure(client, {
      population: [{ code: code('initial-population'), criteria: query('Patient') }],
      stratifier: [{ criteria: query('gender=female') }],
    });
    const res = await client.post(`/Measure/${id}/$evaluate-measure`, period);
    expect(res.body.group[0].stratifier).toEqual([
      { stratum: [{ value: { text: 'gender=female' }, population: [{ code: code('initial-population'), count: 2 }] }] },
    ]);
  });

  it('gives a coded stratifier its code as a list, as MeasureReport.group.stratifier.code repeats', async () => {
    const client = api.newProject();
    await seed(client);
    const id = await measure(client, {
      population: [{ code: code('initial-population'), criteria: query('Patient') }],
      stratifier: [{ code: { text: 'Women' }, criteria: query('gender=female') }],
    });
    const res = await client.post(`/Measure/${id}/$evaluate-measure`, period);
    expect(res.status).toBe(201);
    expect(res.body.group[0].stratifier[0].code).toEqual([{ text: 'Women' }]);
  });

  it('refuses criteria in another language, and Library-based measures', async () => {
    const client = api.newProject();
    const cql = await measure(client, { population: [{ code: code('initial-population'), criteria: { language: 'text/cql', expression: 'X' } }] });
    const res = await client.post(`/Measure/${cql}/$evaluate-measure`, period);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('application/x-fhir-query');
    const lib = await measure(client, { population: [{ code: code('initial-population'), criteria: query('Patient') }] }, { library: ['http://flint.test/Library/x'] });
    const libRes = await client.post(`/Measure/${lib}/$evaluate-measure`, period);
    expect(libRes.status).toBe(400);
    expect(libRes.body.issue[0].details.text).toContain('application/x-fhir-query');
  });

  it('needs periodStart and periodEnd as dates, and refuses GET', async () => {
    const client = api.newProject();
    const id = await measure(client, { population: [{ code: code('initial-population'), criteria: query('Patient') }] });
    const missing = await client.post(`/Measure/${id}/$evaluate-measure`, params({ name: 'periodStart', valueDate: '2024-01-01' }));
    expect(missing.status).toBe(400);
    expect(missing.body.issue[0].details.text).toContain('"periodEnd"');
    const wrong = await client.post(`/Measure/${id}/$evaluate-measure`, params({ name: 'periodStart', valueString: '2024-01-01' }, { name: 'periodEnd', valueDate: '2024-12-31' }));
    expect(wrong.status).toBe(400);
    const get = await client.get(`/Measure/${id}/$evaluate-measure?periodStart=2024-01-01&periodEnd=2024-12-31`);
    expect(get.status).toBe(405);
  });
});
