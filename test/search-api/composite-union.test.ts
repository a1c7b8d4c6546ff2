import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { create, found, sorted } from './helpers.js';

/**
 * A composite whose rows other composites hold whole (`combo-code-value-quantity`: the
 * Observation's are `code-value-quantity` rows, each component's `component-code-value-quantity`
 * rows) stores none and is searched from theirs (src/indexing/composite.ts, unionCodes). Rows
 * written before (a combo row for every element) answer the same.
 */
const api = await useTestServer();

const LOINC = 'http://loinc.org';
const SNOMED = 'http://snomed.info/sct';
const coding = (code: string, system = LOINC) => ({ coding: [{ system, code }] });
const mmHg = (value: number) => ({ value, unit: 'mmHg', system: 'http://unitsofmeasure.org', code: 'mm[Hg]' });

const weight = { resourceType: 'Observation', status: 'final', code: coding('29463-7'), valueQuantity: { value: 80, unit: 'kg' } };
const panel = {
  resourceType: 'Observation',
  status: 'final',
  code: coding('85354-9'),
  component: [
    { code: coding('8480-6'), valueQuantity: mmHg(150) },
    { code: coding('8462-4'), valueQuantity: mmHg(95) },
    { code: coding('94500-6'), valueCodeableConcept: coding('10828004', SNOMED) },
  ],
};

async function compositeCodes(id: string): Promise<string[]> {
  const rows = await api.server.services.db.query<{ code: string }>(`SELECT code FROM composite_index WHERE "resourceId" = $1 ORDER BY code`, [id]);
  return rows.map((row) => row.code);
}

describe('composite union parameters', () => {
  it('stores no combo rows: the Observation and its components have their own composites', async () => {
    const p = api.newProject();
    expect(await compositeCodes(await create(p, weight))).toEqual(['code-value-quantity']);
    expect(await compositeCodes(await create(p, panel))).toEqual(['component-code-value-concept', 'component-code-value-quantity', 'component-code-value-quantity']);
  });

  it('finds combo composites in the Observation itself and in each component, with missing and _has', async () => {
    const p = api.newProject();
    const w = await create(p, weight);
    const bp = await create(p, panel);
    const none = await create(p, { resourceType: 'Observation', status: 'final', code: coding('8867-4') });
    expect(await found(p, '/Observation?combo-code-value-quantity=29463-7$80')).toEqual([w]);
    expect(await found(p, `/Observation?combo-code-value-quantity=${LOINC}|8462-4$lt100`)).toEqual([bp]);
    expect(await found(p, '/Observation?combo-code-value-quantity=29463-7$gt70,8480-6$gt140')).toEqual(sorted(w, bp));
    expect(await found(p, '/Observation?combo-code-value-quantity=8480-6$95')).toEqual([]);
    expect(await found(p, `/Observation?combo-code-value-concept=94500-6$${SNOMED}|10828004`)).toEqual([bp]);
    expect(await found(p, '/Observation?combo-code-value-quantity:missing=true')).toEqual([none]);
    expect(await found(p, '/Observation?combo-code-value-concept:missing=false')).toEqual([bp]);
    const patient = await create(p, { resourceType: 'Patient', gender: 'other' });
    await create(p, { ...panel, subject: { reference: `Patient/${patient}` } });
    expect(await found(p, '/Patient?_has:Observation:subject:combo-code-value-quantity=8480-6$150')).toEqual([patient]);
  });

  it('answers the same on combo rows written before', async () => {
    const p = api.newProject();
    const w = await create(p, weight);
    await api.server.services.db.query(
      `INSERT INTO composite_index ("projectId", "resourceType", "resourceId", seq, code, system1, value1, value2, number2)` +
        ` SELECT "projectId", "resourceType", id, 1000, 'combo-code-value-quantity', $2, '29463-7', 'kg', 80 FROM resource WHERE id = $1`,
      [w, LOINC],
    );
    expect((await p.get('/Observation?combo-code-value-quantity=29463-7$80&_total=accurate')).body.total).toBe(1);
    expect(await found(p, '/Observation?combo-code-value-quantity:missing=false')).toEqual([w]);
  });
});
