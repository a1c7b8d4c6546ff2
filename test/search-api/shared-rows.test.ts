import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { create, found, matchIds } from './helpers.js';

/**
 * A string parameter whose expression on a type is another's (`phonetic` and `name`: both
 * `Patient.name`) reads that other's index rows instead of storing the same rows again
 * (src/indexing/plan.ts). Searching and sorting by it answer as before.
 */
const api = await useTestServer();

const patient = (family: string, given?: string[]) => ({ resourceType: 'Patient', name: [{ family, ...(given && { given }) }] });

describe('a parameter stored under another code', () => {
  it('is not stored a second time: a Patient keeps its name rows and has no phonetic rows', async () => {
    const p = api.newProject();
    const id = await create(p, { resourceType: 'Patient', name: [{ family: 'Müller', given: ['Anna', 'Maria'], text: 'Anna Maria Müller' }] });
    const rows = await api.server.services.db.query<{ code: string; n: number }>(
      `SELECT code, count(*)::int AS n FROM string_index WHERE "resourceType" = 'Patient' AND "resourceId" = $1 AND code IN ('name', 'phonetic') GROUP BY code`,
      [id],
    );
    // The family and given parts are rows of `family` and `given`, which `name` reads (union-rows.test.ts).
    expect(rows).toEqual([{ code: 'name', n: 1 }]);
  });

  it('finds by prefix, :exact and :contains as the parameter it shares rows with', async () => {
    const p = api.newProject();
    const a = await create(p, patient('Müller', ['Anna']));
    await create(p, patient('Meier', ['Hans']));
    expect(await found(p, '/Patient?phonetic=mul')).toEqual([a]);
    expect(await found(p, '/Patient?phonetic=ann')).toEqual([a]);
    expect(await found(p, '/Patient?phonetic:exact=Müller')).toEqual([a]);
    expect(await found(p, '/Patient?phonetic:contains=ULL')).toEqual([a]);
    expect(await found(p, '/Patient?phonetic:missing=true')).toEqual([]);
  });

  it('sorts by it both ways', async () => {
    const p = api.newProject();
    const b = await create(p, patient('Baker'));
    const a = await create(p, patient('Adams'));
    const c = await create(p, patient('Clark'));
    expect(matchIds(await p.get('/Patient?_sort=phonetic'))).toEqual([a, b, c]);
    expect(matchIds(await p.get('/Patient?_sort=-phonetic'))).toEqual([c, b, a]);
  });

  it('finds Practitioners and through a chain', async () => {
    const p = api.newProject();
    const doctor = await create(p, { resourceType: 'Practitioner', name: [{ family: 'Okafor' }] });
    const seen = await create(p, { resourceType: 'Patient', generalPractitioner: [{ reference: `Practitioner/${doctor}` }] });
    await create(p, { resourceType: 'Patient' });
    expect(await found(p, '/Practitioner?phonetic=oka')).toEqual([doctor]);
    expect(await found(p, '/Patient?general-practitioner:Practitioner.phonetic=oka')).toEqual([seen]);
  });

  it('finds across types that store it under the same code', async () => {
    const p = api.newProject();
    const doctor = await create(p, { resourceType: 'Practitioner', name: [{ family: 'Okafor' }] });
    const patient = await create(p, { resourceType: 'Patient', name: [{ family: 'Okonkwo' }] });
    await create(p, { resourceType: 'Patient', name: [{ family: 'Adeyemi' }] });
    expect(await found(p, '?_type=Patient,Practitioner&phonetic=oko')).toEqual([patient]);
    expect(await found(p, '?_type=Patient,Practitioner&phonetic=ok')).toEqual([doctor, patient].sort());
    expect(await found(p, '?_type=Patient,Practitioner&name=ok')).toEqual([doctor, patient].sort());
  });
});
