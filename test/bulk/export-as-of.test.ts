import { describe, expect, it } from 'vitest';
import { addMemberClient } from '../auth/helpers.js';
import { projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';
import { ASYNC, create, exportedLines, idsOf, poll, queuedExport, runFrom, statusPath, type Json } from './export-helpers.js';

/**
 * `_typeFilter` queries and AccessPolicy criteria judge each resource by the version the export
 * writes, its version of transactionTime, also when it changed after that time.
 */

const api = await useTestServer();

const pause = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 20));

/**
 * Two Patients, then a transactionTime, then each changed to the other's gender: the one that
 * was female then is male now, and the other way round.
 */
async function swappedGenders(client: ProjectClient): Promise<{ femaleThen: Json; maleThen: Json; transactionTime: string }> {
  const femaleThen = await create(client, { resourceType: 'Patient', gender: 'female', name: [{ family: 'FemaleThen' }] });
  const maleThen = await create(client, { resourceType: 'Patient', gender: 'male', name: [{ family: 'MaleThen' }] });
  await pause();
  const transactionTime = new Date().toISOString();
  await pause();
  expect((await client.put(`/Patient/${femaleThen.id}`, { ...femaleThen, gender: 'male' })).status).toBe(200);
  expect((await client.put(`/Patient/${maleThen.id}`, { ...maleThen, gender: 'female' })).status).toBe(200);
  return { femaleThen, maleThen, transactionTime };
}

/** The lines of an export queued as `identity` that runs from the start with `transactionTime`. */
async function exportAt(client: ProjectClient, transactionTime: string, input: Json, identity?: Json): Promise<Json[]> {
  const status = await queuedExport(api, client, input, identity);
  await runFrom(api, status, { transactionTime, types: ['Patient'], typeIndex: 0, files: [] });
  const res = await poll(client, status);
  expect(res.status, res.text).toBe(200);
  return exportedLines(client, res.body);
}

describe('an export judges each resource by the version it writes', () => {
  it('_typeFilter keeps a resource changed since transactionTime by its version of then', async () => {
    const p = api.newProject();
    const { femaleThen, transactionTime } = await swappedGenders(p);
    const lines = await exportAt(p, transactionTime, { _typeFilter: ['Patient?gender=female'] });
    expect(idsOf(lines)).toEqual([`Patient/${femaleThen.id}`]);
    expect(lines[0].resource.gender).toBe('female');
  });

  it('_typeFilter on values the resource no longer has (a reference, a string) judges the version written', async () => {
    const p = api.newProject();
    const organization = await create(p, { resourceType: 'Organization', name: 'Then' });
    const patient = await create(p, { resourceType: 'Patient', name: [{ family: 'Moved' }], managingOrganization: { reference: `Organization/${organization.id}` } });
    await pause();
    const transactionTime = new Date().toISOString();
    await pause();
    expect((await p.put(`/Patient/${patient.id}`, { ...patient, name: [{ family: 'Renamed' }], managingOrganization: undefined })).status).toBe(200);
    const query = `Patient?organization=Organization/${organization.id}&family=mov`;
    expect(idsOf(await exportAt(p, transactionTime, { _typeFilter: [query] }))).toEqual([`Patient/${patient.id}`]);
  });

  it('AccessPolicy criteria keep a resource changed since transactionTime by its version of then', async () => {
    const owner = api.newProject();
    const policy = await create(owner, { resourceType: 'AccessPolicy', resource: [{ resourceType: 'Patient', criteria: 'Patient?gender=female' }] });
    const member = await addMemberClient(api, owner, { accessPolicy: `AccessPolicy/${policy.id}` });
    const client = projectClient(api.fhir, owner.projectId, async () => member.token);
    // The member's job identity, as its own kick-off records it.
    const kickOff = statusPath(await client.get('/$export', ASYNC));
    const [job] = await api.server.services.db.query<{ identity: string }>('SELECT identity::text AS identity FROM job WHERE id = $1', [kickOff.split('/').pop()]);
    await poll(client, kickOff);

    const { femaleThen, transactionTime } = await swappedGenders(owner);
    const lines = await exportAt(client, transactionTime, {}, JSON.parse(job.identity));
    expect(idsOf(lines)).toEqual([`Patient/${femaleThen.id}`]);
  });
});
