import { describe, expect, it } from 'vitest';
import { exportFileKey } from '../../src/bulk/export-files.js';
import { jobQueued } from '../../src/operations/jobs/worker.js';
import { addMemberClient } from '../auth/helpers.js';
import { projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';
import { ASYNC, BASE, create, exportDone, exportedLines, idsOf, poll, queuedExport, runFrom, statusPath, type Json } from './export-helpers.js';

/**
 * Bulk data export (Bulk Data Access IG 2.0): kick-off `GET /$export` with `Prefer: respond-async`
 * answers 202 and a status URL; the status URL answers 202 while the export runs, then the
 * manifest; the manifest's files are NDJSON, one resource a line. Two resources a file here, so
 * that a type is split over several files.
 */

const api = await useTestServer({ EXPORT_FILE_MAX_RESOURCES: '2' });

describe('GET /$export', () => {
  it('exports every resource of the project once, in files by type, named by the manifest', async () => {
    const p = api.newProject();
    const patients = [];
    for (let i = 0; i < 3; i++) patients.push(await create(p, { resourceType: 'Patient', name: [{ family: `Export${i}` }] }));
    const observation = await create(p, { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: `Patient/${patients[0].id}` } });
    const other = api.newProject();
    await create(other, { resourceType: 'Patient', name: [{ family: 'Elsewhere' }] });

    const { manifest, manifestType } = await exportDone(p);
    expect(manifest.requiresAccessToken).toBe(true);
    expect(manifestType).toMatch(/^application\/json/);
    expect(manifest.request).toBe(`${BASE}/$export`);
    expect(Date.parse(manifest.transactionTime)).not.toBeNaN();
    expect(manifest.error).toEqual([]);
    expect(manifest.output.map((o: Json) => [o.type, o.count])).toEqual([
      ['Observation', 1],
      ['Patient', 2],
      ['Patient', 1],
    ]);
    const lines = await exportedLines(p, manifest);
    expect(lines.every(({ type, resource }) => resource.resourceType === type)).toBe(true);
    const ids = lines.map(({ resource }) => `${resource.resourceType}/${resource.id}`).sort();
    expect(ids).toEqual([`Observation/${observation.id}`, ...patients.map((patient) => `Patient/${patient.id}`)].sort());
  });

  it('exports only the types named by _type', async () => {
    const p = api.newProject();
    const patient = await create(p, { resourceType: 'Patient', name: [{ family: 'Typed' }] });
    await create(p, { resourceType: 'Observation', status: 'final', code: { text: 'x' } });
    const { manifest } = await exportDone(p, '?_type=Patient');
    const lines = await exportedLines(p, manifest);
    expect(lines.map(({ resource }) => resource.id)).toEqual([patient.id]);
  });

  it('exports only resources changed after _since', async () => {
    const p = api.newProject();
    const before = await create(p, { resourceType: 'Patient', name: [{ family: 'Before' }] });
    const since = before.meta.lastUpdated;
    // lastUpdated has millisecond precision: the next write must come at a later millisecond.
    await new Promise((resolve) => setTimeout(resolve, 5));
    const after = await create(p, { resourceType: 'Patient', name: [{ family: 'After' }] });
    expect(after.meta.lastUpdated > since).toBe(true);
    const { manifest } = await exportDone(p, `?_since=${encodeURIComponent(since)}`);
    const lines = await exportedLines(p, manifest);
    expect(lines.map(({ resource }) => resource.id)).toEqual([after.id]);
  });

  it('answers 400 without Prefer: respond-async', async () => {
    const res = await api.newProject().get('/$export');
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('Prefer: respond-async');
  });

  it('answers 400 for an _outputFormat other than NDJSON', async () => {
    const res = await api.newProject().get('/$export?_outputFormat=text/csv', ASYNC);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['_outputFormat']);
  });

  it('answers 400 for a _type that is no resource type', async () => {
    const res = await api.newProject().get('/$export?_type=Patient,Nonsense', ASYNC);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('Nonsense');
  });

  it('exports only the resources of a filtered type that meet one of its _typeFilter searches', async () => {
    const p = api.newProject();
    const male = await create(p, { resourceType: 'Patient', gender: 'male', name: [{ family: 'Filtered' }] });
    const other = await create(p, { resourceType: 'Patient', gender: 'other' });
    await create(p, { resourceType: 'Patient', gender: 'female' });
    const observation = await create(p, { resourceType: 'Observation', status: 'final', code: { text: 'x' } });
    const filters = ['Patient?gender=male', 'Patient?gender=other'].map(encodeURIComponent).join(',');
    const { manifest } = await exportDone(p, `?_typeFilter=${filters}`);
    const ids = (await exportedLines(p, manifest)).map(({ resource }) => `${resource.resourceType}/${resource.id}`).sort();
    expect(ids).toEqual([`Observation/${observation.id}`, `Patient/${male.id}`, `Patient/${other.id}`].sort());
  });

  it('answers 400 for a _typeFilter search with an unknown parameter, before any job', async () => {
    const res = await api.newProject().get(`/$export?_typeFilter=${encodeURIComponent('Patient?no-such-parameter=1')}`, ASYNC);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('no-such-parameter');
  });

  it('answers 400 for a _typeFilter of a type _type does not export', async () => {
    const res = await api.newProject().get(`/$export?_type=Patient&_typeFilter=${encodeURIComponent('Observation?status=final')}`, ASYNC);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['_typeFilter']);
  });

  it('accepts the other names of NDJSON as _outputFormat', async () => {
    const p = api.newProject();
    await create(p, { resourceType: 'Patient', name: [{ family: 'Format' }] });
    const { manifest } = await exportDone(p, '?_outputFormat=ndjson');
    expect(manifest.output).toHaveLength(1);
  });
});

describe('GET /Patient/$export and /Group/{id}/$export', () => {
  /** Two patients with an Observation each, and an Observation of no patient, in a new project. */
  async function twoRecords(): Promise<{ p: ProjectClient; patients: string[]; observations: string[]; stray: string }> {
    const p = api.newProject();
    const patients: string[] = [];
    const observations: string[] = [];
    for (let i = 0; i < 2; i++) {
      const patient = await create(p, { resourceType: 'Patient', name: [{ family: `Compartment${i}` }] });
      patients.push(patient.id);
      const observation = { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: `Patient/${patient.id}` } };
      observations.push((await create(p, observation)).id);
    }
    const stray = (await create(p, { resourceType: 'Observation', status: 'final', code: { text: 'no patient' } })).id;
    return { p, patients, observations, stray };
  }

  it('Patient/$export exports every patient and the resources of their compartments, not the others', async () => {
    const { p, patients, observations } = await twoRecords();
    const status = statusPath(await p.get('/Patient/$export', ASYNC));
    const res = await poll(p, status);
    expect(res.status, res.text).toBe(200);
    const expected = [...patients.map((id) => `Patient/${id}`), ...observations.map((id) => `Observation/${id}`)].sort();
    expect(idsOf(await exportedLines(p, res.body))).toEqual(expected);
  });

  it('Group/{id}/$export exports the member patients and their compartments only (the Group is in its members\' compartments)', async () => {
    const { p, patients, observations } = await twoRecords();
    const group = await create(p, { resourceType: 'Group', type: 'person', actual: true, member: [{ entity: { reference: `Patient/${patients[1]}` } }] });
    const status = statusPath(await p.get(`/Group/${group.id}/$export`, ASYNC));
    const res = await poll(p, status);
    expect(res.status, res.text).toBe(200);
    const expected = [`Group/${group.id}`, `Observation/${observations[1]}`, `Patient/${patients[1]}`].sort();
    expect(idsOf(await exportedLines(p, res.body))).toEqual(expected);
  });

  it('Patient and Group exports add the resources of other types that the compartments reference, and no others', async () => {
    const p = api.newProject();
    const doctor = await create(p, { resourceType: 'Practitioner', name: [{ family: 'Referenced' }] });
    const lab = await create(p, { resourceType: 'Organization', name: 'Lab' });
    const strayLab = await create(p, { resourceType: 'Organization', name: 'Only a stray Observation names it' });
    await create(p, { resourceType: 'Practitioner', name: [{ family: 'Unreferenced' }] });
    const first = await create(p, { resourceType: 'Patient', generalPractitioner: [{ reference: `Practitioner/${doctor.id}` }] });
    const second = await create(p, { resourceType: 'Patient' });
    const observation = { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: `Patient/${second.id}` }, performer: [{ reference: `Organization/${lab.id}` }] };
    const measured = await create(p, observation);
    await create(p, { resourceType: 'Observation', status: 'final', code: { text: 'no patient' }, performer: [{ reference: `Organization/${strayLab.id}` }] });

    const everyPatient = await poll(p, statusPath(await p.get('/Patient/$export', ASYNC)));
    const expected = [`Patient/${first.id}`, `Patient/${second.id}`, `Observation/${measured.id}`, `Practitioner/${doctor.id}`, `Organization/${lab.id}`];
    expect(idsOf(await exportedLines(p, everyPatient.body))).toEqual(expected.sort());

    const group = await create(p, { resourceType: 'Group', type: 'person', actual: true, member: [{ entity: { reference: `Patient/${first.id}` } }] });
    const ofGroup = await poll(p, statusPath(await p.get(`/Group/${group.id}/$export`, ASYNC)));
    expect(idsOf(await exportedLines(p, ofGroup.body))).toEqual([`Group/${group.id}`, `Patient/${first.id}`, `Practitioner/${doctor.id}`].sort());
  });

  it('Group/{id}/$export of a group that does not exist is 404 at once', async () => {
    const res = await api.newProject().get('/Group/00000000-0000-4000-8000-000000000000/$export', ASYNC);
    expect(res.status).toBe(404);
  });
});

describe('the status URL and files', () => {
  it('answer 202 with X-Progress and Retry-After while the export has not finished', async () => {
    const p = api.newProject();
    const status = await queuedExport(api, p);
    const res = await p.get(status);
    expect(res.status).toBe(202);
    expect(res.headers.get('x-progress')).toBe('0 files, 0 resources written');
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('a resumed export starts after the last file its earlier run recorded, and writes no resource twice', async () => {
    const p = api.newProject();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await create(p, { resourceType: 'Patient', name: [{ family: `Resumed${i}` }] })).id);
    ids.sort();
    const status = await queuedExport(api, p);
    const jobId = status.split('/').pop()!;
    const { db, binaryStorage } = api.server.services;
    // What a run that stopped after its first file left: the file, and the checkpoint naming it.
    const first = await p.get(`/Patient/${ids[0]}`);
    await binaryStorage.putStream(exportFileKey(jobId, 'Patient-1.ndjson'), p.projectId, 'application/fhir+ndjson', [Buffer.from(`${first.text}\n`)]);
    const checkpoint = {
      transactionTime: new Date().toISOString(),
      types: ['Patient'],
      typeIndex: 0,
      afterId: ids[0],
      files: [{ type: 'Patient', file: 'Patient-1.ndjson', count: 1 }],
    };
    await db.execute(`UPDATE job SET checkpoint = $2::json, "runAfter" = now() WHERE id = $1`, [jobId, JSON.stringify(checkpoint)]);
    jobQueued(db);
    const res = await poll(p, status);
    expect(res.status, res.text).toBe(200);
    expect(res.body.output.map((o: Json) => o.count)).toEqual([1, 2]);
    const lines = await exportedLines(p, res.body);
    expect(lines.map(({ resource }) => resource.id)).toEqual(ids);
  });

  it('writes each resource as it was at the export\'s transactionTime, whatever changed after it', async () => {
    const p = api.newProject();
    const kept = (await create(p, { resourceType: 'Patient', name: [{ family: 'Kept' }] })).id;
    const changed = await create(p, { resourceType: 'Patient', name: [{ family: 'Before' }] });
    const deleted = (await create(p, { resourceType: 'Patient', name: [{ family: 'DeletedLater' }] })).id;
    await new Promise((resolve) => setTimeout(resolve, 20));
    const transactionTime = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await p.put(`/Patient/${changed.id}`, { ...changed, name: [{ family: 'After' }] })).status).toBe(200);
    expect((await p.delete(`/Patient/${deleted}`)).status).toBe(200);
    await create(p, { resourceType: 'Patient', name: [{ family: 'CreatedLater' }] });
    const status = await queuedExport(api, p);
    // A run that took its transactionTime before those writes and had written nothing yet.
    await runFrom(api, status, { transactionTime, types: ['Patient'], typeIndex: 0, files: [] });
    const res = await poll(p, status);
    expect(res.status, res.text).toBe(200);
    expect(res.body.transactionTime).toBe(transactionTime);
    const lines = await exportedLines(p, res.body);
    const families = Object.fromEntries(lines.map(({ resource }) => [resource.id, resource.name[0].family]));
    expect(families).toEqual({ [kept]: 'Kept', [changed.id]: 'Before', [deleted]: 'DeletedLater' });
  });

  it('answers 500 with the OperationOutcome of an export that failed', async () => {
    const p = api.newProject();
    await create(p, { resourceType: 'Patient', name: [{ family: 'Failing' }] });
    // An input the kick-off would have refused: the job's first statement fails, for good.
    const status = await queuedExport(api, p, { _since: 'not an instant' });
    const { db } = api.server.services;
    await db.execute(`UPDATE job SET "runAfter" = now() WHERE id = $1`, [status.split('/').pop()]);
    jobQueued(db);
    const res = await poll(p, status);
    expect(res.status, res.text).toBe(500);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(res.body.issue[0].severity).toBe('error');
  });

  it('DELETE cancels an export that has not finished: its status URL is 404 afterwards', async () => {
    const p = api.newProject();
    const status = await queuedExport(api, p);
    const deleted = await p.delete(status);
    expect(deleted.status, deleted.text).toBe(202);
    expect((await p.get(status)).status).toBe(404);
  });

  it('are 404 for a client of another project', async () => {
    const p = api.newProject();
    await create(p, { resourceType: 'Patient', name: [{ family: 'Private' }] });
    const { status, manifest } = await exportDone(p);
    const stranger = api.newProject();
    expect((await stranger.get(status)).status).toBe(404);
    expect((await stranger.get(manifest.output[0].url.slice(BASE.length))).status).toBe(404);
  });

  it('are 404 for a member of the project who is not an admin and did not start the export', async () => {
    const p = api.newProject();
    await create(p, { resourceType: 'Patient', name: [{ family: 'Members' }] });
    const { status, manifest } = await exportDone(p);
    const member = await addMemberClient(api, p);
    const memberClient = projectClient(api.fhir, p.projectId, async () => member.token);
    expect((await memberClient.get(status)).status).toBe(404);
    expect((await memberClient.get(manifest.output[0].url.slice(BASE.length))).status).toBe(404);
  });

  it('DELETE removes a finished export and its files: both are 404 afterwards', async () => {
    const p = api.newProject();
    await create(p, { resourceType: 'Patient', name: [{ family: 'Deleted' }] });
    const { status, manifest } = await exportDone(p);
    const file = manifest.output[0].url.slice(BASE.length);
    const deleted = await p.delete(status);
    expect(deleted.status, deleted.text).toBe(202);
    expect((await p.get(status)).status).toBe(404);
    expect((await p.get(file)).status).toBe(404);
  });

  it('DELETE of an export that does not exist is 404', async () => {
    const res = await api.newProject().delete('/$export-status/00000000-0000-4000-8000-000000000000');
    expect(res.status).toBe(404);
  });
});
