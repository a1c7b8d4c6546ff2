import { afterAll, describe, expect, it } from 'vitest';
import { projectClient, startTestServer, useTestServer, type TestServer } from '../helpers/server.js';
import { patientProfile, strictPatient } from './helpers.js';

/** On PostgreSQL several servers share the database: a profile changed on one is enforced by the others at once. */
describe.skipIf(!process.env.DATABASE_URL)('a profile changed on another server (PostgreSQL)', async () => {
  const first = await useTestServer();
  const second: TestServer = await startTestServer({});
  afterAll(() => second.server.close());

  it('is enforced by the other server well before its cache would expire', async () => {
    const client = first.newProject();
    const stored = (await client.post('/StructureDefinition', patientProfile())).body;
    const onSecond = projectClient(second.fhir, client.projectId, () => client.token());
    // The second server reads (and keeps) the project's profiles before the change.
    expect((await onSecond.post('/Patient', strictPatient(stored.url))).status).toBe(201);
    const stricter = { ...stored, snapshot: undefined, differential: { element: [{ id: 'Patient', path: 'Patient' }, { id: 'Patient.birthDate', path: 'Patient.birthDate', min: 1 }] } };
    expect((await client.put(`/StructureDefinition/${stored.id}`, stricter)).status).toBe(200);
    const deadline = Date.now() + 3000;
    let status = 201;
    while (Date.now() < deadline && status !== 400) {
      status = (await onSecond.post('/Patient', strictPatient(stored.url))).status;
      if (status !== 400) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe(400);
  });
});
