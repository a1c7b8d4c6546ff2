import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { create, found, sorted } from './helpers.js';

/**
 * Patient `deceased` (R4: `Patient.deceased.exists() and Patient.deceased != false`) is indexed
 * on the fast path (src/indexing/exists-not-false.ts): a Patient without deceased[x], or with
 * deceasedBoolean false, is `deceased=false`; deceasedBoolean true or any deceasedDateTime is
 * `deceased=true`.
 */
const api = await useTestServer();

describe('Patient?deceased', () => {
  it('finds Patients who died, by a boolean or a date', async () => {
    const p = api.newProject();
    const byBoolean = await create(p, { resourceType: 'Patient', deceasedBoolean: true });
    const byDate = await create(p, { resourceType: 'Patient', deceasedDateTime: '2020-02-03' });
    await create(p, { resourceType: 'Patient', deceasedBoolean: false });
    await create(p, { resourceType: 'Patient' });
    expect(await found(p, '/Patient?deceased=true')).toEqual(sorted(byBoolean, byDate));
  });

  it('finds living Patients, with deceasedBoolean false or no deceased at all', async () => {
    const p = api.newProject();
    await create(p, { resourceType: 'Patient', deceasedDateTime: '2020-02-03' });
    const saidLiving = await create(p, { resourceType: 'Patient', deceasedBoolean: false });
    const unsaid = await create(p, { resourceType: 'Patient', name: [{ family: 'Okafor' }] });
    expect(await found(p, '/Patient?deceased=false')).toEqual(sorted(saidLiving, unsaid));
  });

  it('follows an update from living to deceased', async () => {
    const p = api.newProject();
    const id = await create(p, { resourceType: 'Patient', deceasedBoolean: false });
    const res = await p.put(`/Patient/${id}`, { resourceType: 'Patient', id, deceasedDateTime: '2024-03-05T10:00:00+02:00' });
    expect(res.status).toBe(200);
    expect(await found(p, '/Patient?deceased=true')).toEqual([id]);
    expect(await found(p, '/Patient?deceased=false')).toEqual([]);
  });
});
