import { randomUUID } from 'node:crypto';
import { MedplumClient, OperationOutcomeError } from '@medplum/core';
import { Client } from 'fhir-kit-client';
import { describe, expect, it } from 'vitest';
import type { Bundle, BundleEntry, Resource } from '../helpers/client-shapes.js';
import { clientCredentialsToken, patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';

/**
 * Real FHIR client libraries, used as their users use them, against a test server: Medplum's
 * MedplumClient and fhir-kit-client. What they send (URLs, headers, Bundles) is theirs; the tests
 * check what they get back and what the server then holds.
 */

const api = await useTestServer();
const MRN = 'http://example.org/mrn';

interface Patient extends Resource {
  identifier?: { system?: string; value?: string }[];
  gender?: string;
}
interface Observation extends Resource {
  status?: string;
  subject?: { reference?: string };
}

/** The bearer token of a project's admin ClientApplication, by client credentials. */
async function tokenOf(project: ProjectClient): Promise<string> {
  const { clientId, clientSecret } = await api.credentialsOf(project);
  return clientCredentialsToken(api.url, clientId, clientSecret);
}

/**
 * A MedplumClient signed in to a new project by `startClientLogin`, as its admin ClientApplication.
 * Its response cache is off, so that every read in a test reaches the server.
 */
async function medplumClient(): Promise<{ medplum: MedplumClient; project: ProjectClient }> {
  const project = api.newProject();
  const { clientId, clientSecret } = await api.credentialsOf(project);
  const medplum = new MedplumClient({ baseUrl: `${api.url}/`, fhirUrlPath: 'fhir/R4', fetch, cacheTime: 0 });
  await medplum.startClientLogin(clientId, clientSecret);
  return { medplum, project };
}

/** A fhir-kit-client Client for a new project, sending its token on every request. */
async function fhirKitClient(): Promise<{ client: Client; project: ProjectClient }> {
  const project = api.newProject();
  const client = new Client({ baseUrl: api.fhir, customHeaders: { Authorization: `Bearer ${await tokenOf(project)}` } });
  return { client, project };
}

async function countByMrn(project: ProjectClient, mrn: string): Promise<number> {
  const res = await project.get(`/Patient?identifier=${encodeURIComponent(`${MRN}|${mrn}`)}&_total=accurate`);
  expect(res.status).toBe(200);
  return res.body.total as number;
}

/** A transaction creating a Patient and an Observation whose subject is the Patient's urn:uuid. */
function patientAndObservationTransaction(mrn: string): Bundle {
  const patientUrl = `urn:uuid:${randomUUID()}`;
  return {
    resourceType: 'Bundle',
    type: 'transaction',
    entry: [
      {
        fullUrl: patientUrl,
        resource: patientBody({ identifier: [{ system: MRN, value: mrn }] }) as Patient,
        request: { method: 'POST', url: 'Patient' },
      },
      {
        fullUrl: `urn:uuid:${randomUUID()}`,
        resource: { resourceType: 'Observation', status: 'final', code: { text: 'heart rate' }, subject: { reference: patientUrl } },
        request: { method: 'POST', url: 'Observation' },
      },
    ],
  };
}

/** A batch whose first entry creates a Patient and whose second is invalid (gender "robot"). */
function goodAndBadBatch(mrn: string): Bundle {
  return {
    resourceType: 'Bundle',
    type: 'batch',
    entry: [
      { resource: patientBody({ identifier: [{ system: MRN, value: mrn }] }) as Patient, request: { method: 'POST', url: 'Patient' } },
      { resource: patientBody({ gender: 'robot' }) as Patient, request: { method: 'POST', url: 'Patient' } },
    ],
  };
}

/** `Patient/<id>` from a response entry: its resource, else its location. */
function createdKey(entry: BundleEntry | undefined): string {
  if (entry?.resource?.id) return `${entry.resource.resourceType}/${entry.resource.id}`;
  const match = /([A-Z][A-Za-z]+\/[^/]+)\/_history\//.exec(entry?.response?.location ?? '');
  if (!match) throw new Error(`the entry names no created resource: ${JSON.stringify(entry)}`);
  return match[1];
}

describe('@medplum/core MedplumClient', () => {
  it('executeBatch runs a transaction, pointing the Observation at the created Patient', async () => {
    const { medplum } = await medplumClient();
    const mrn = randomUUID();
    const result: Bundle = await medplum.executeBatch(patientAndObservationTransaction(mrn));
    expect(result.resourceType).toBe('Bundle');
    expect(result.type).toBe('transaction-response');
    expect(result.entry?.map((e) => e.response?.status)).toEqual(['201 Created', '201 Created']);
    const patientKey = createdKey(result.entry?.[0]);
    const observationKey = createdKey(result.entry?.[1]);
    expect(patientKey).toMatch(/^Patient\//);
    expect(observationKey).toMatch(/^Observation\//);

    const observation = await medplum.readReference<Observation>({ reference: observationKey });
    expect(observation.subject?.reference).toBe(patientKey);
    const patient = await medplum.readReference<Patient>({ reference: patientKey });
    expect(patient.identifier?.[0]?.value).toBe(mrn);
  });

  it('executeBatch runs a transaction whose conditional create finds its match, and points the Observation at it', async () => {
    const { medplum, project } = await medplumClient();
    const mrn = randomUUID();
    const existing = await medplum.createResource(patientBody({ identifier: [{ system: MRN, value: mrn }] }) as Patient);
    const bundle = patientAndObservationTransaction(mrn);
    bundle.entry![0].request = { method: 'POST', url: 'Patient', ifNoneExist: `identifier=${MRN}|${mrn}` };
    const result: Bundle = await medplum.executeBatch(bundle);
    expect(result.entry?.map((e) => e.response?.status)).toEqual(['200 OK', '201 Created']);
    expect(createdKey(result.entry?.[0])).toBe(`Patient/${existing.id}`);
    const observation = await medplum.readReference<Observation>({ reference: createdKey(result.entry?.[1]) });
    expect(observation.subject?.reference).toBe(`Patient/${existing.id}`);
    expect(await countByMrn(project, mrn)).toBe(1);
  });

  it('executeBatch of a failing transaction rejects with the OperationOutcome and stores nothing', async () => {
    const { medplum, project } = await medplumClient();
    const mrn = randomUUID();
    const bundle = patientAndObservationTransaction(mrn);
    (bundle.entry![1].resource as Observation).status = 'not-a-status';
    const error: unknown = await medplum.executeBatch(bundle).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(OperationOutcomeError);
    expect((error as OperationOutcomeError).outcome.issue?.[0]?.severity).toBe('error');
    expect(JSON.stringify((error as OperationOutcomeError).outcome)).toContain('Bundle.entry[1]');
    expect(await countByMrn(project, mrn)).toBe(0);
  });

  it('executeBatch runs a batch whose entries succeed or fail on their own', async () => {
    const { medplum, project } = await medplumClient();
    const mrn = randomUUID();
    const result: Bundle = await medplum.executeBatch(goodAndBadBatch(mrn));
    expect(result.type).toBe('batch-response');
    expect(result.entry).toHaveLength(2);
    expect(result.entry?.[0]?.response?.status).toBe('201 Created');
    expect(result.entry?.[1]?.response?.status).toBe('400 Bad Request');
    expect(result.entry?.[1]?.response?.outcome?.resourceType).toBe('OperationOutcome');
    expect(createdKey(result.entry?.[0])).toMatch(/^Patient\//);
    expect(await countByMrn(project, mrn)).toBe(1);
  });

  it('createResourceIfNoneExist twice gives the same resource and stores one', async () => {
    const { medplum, project } = await medplumClient();
    const mrn = randomUUID();
    const query = `identifier=${MRN}|${mrn}`;
    const first = await medplum.createResourceIfNoneExist(patientBody({ identifier: [{ system: MRN, value: mrn }] }) as Patient, query);
    const second = await medplum.createResourceIfNoneExist(
      patientBody({ identifier: [{ system: MRN, value: mrn }], gender: 'female' }) as Patient,
      query,
    );
    expect(second.id).toBe(first.id);
    expect(second.meta?.versionId).toBe(first.meta?.versionId);
    expect(second.gender).toBe('male');
    expect(await countByMrn(project, mrn)).toBe(1);
  });

  it('upsertResource twice creates once, then updates that resource', async () => {
    const { medplum, project } = await medplumClient();
    const mrn = randomUUID();
    const query = `identifier=${MRN}|${mrn}`;
    const created = await medplum.upsertResource(patientBody({ identifier: [{ system: MRN, value: mrn }] }) as Patient, query);
    const updated = await medplum.upsertResource(
      patientBody({ identifier: [{ system: MRN, value: mrn }], gender: 'female' }) as Patient,
      query,
    );
    expect(updated.id).toBe(created.id);
    expect(updated.gender).toBe('female');
    expect(updated.meta?.versionId).not.toBe(created.meta?.versionId);
    expect(await countByMrn(project, mrn)).toBe(1);

    const history: Bundle = await medplum.readHistory('Patient', created.id);
    expect(history.type).toBe('history');
    expect(history.entry?.map((e) => e.resource?.meta?.versionId)).toEqual([updated.meta?.versionId, created.meta?.versionId]);
  });

  it('searchResources finds what the client wrote, and only in its own project', async () => {
    const { medplum } = await medplumClient();
    const other = await medplumClient();
    const mrn = randomUUID();
    const mine = await medplum.createResource(patientBody({ identifier: [{ system: MRN, value: mrn }] }) as Patient);
    await other.medplum.createResource(patientBody({ identifier: [{ system: MRN, value: mrn }] }) as Patient);
    const found = await medplum.searchResources('Patient', { identifier: `${MRN}|${mrn}` });
    expect(found.map((p) => p.id)).toEqual([mine.id]);
  });
});

describe('fhir-kit-client', () => {
  it('transaction creates the Patient and an Observation referring to it', async () => {
    const { client } = await fhirKitClient();
    const mrn = randomUUID();
    const result = (await client.transaction({ body: patientAndObservationTransaction(mrn) })) as Bundle;
    expect(result.type).toBe('transaction-response');
    expect(result.entry?.map((e) => e.response?.status)).toEqual(['201 Created', '201 Created']);
    const patientKey = createdKey(result.entry?.[0]);
    const [, observationId] = createdKey(result.entry?.[1]).split('/');
    const observation = (await client.read({ resourceType: 'Observation', id: observationId! })) as Observation;
    expect(observation.subject?.reference).toBe(patientKey);
  });

  it('batch answers each entry on its own', async () => {
    const { client, project } = await fhirKitClient();
    const mrn = randomUUID();
    const result = (await client.batch({ body: goodAndBadBatch(mrn) })) as Bundle;
    expect(result.type).toBe('batch-response');
    expect(result.entry?.map((e) => e.response?.status)).toEqual(['201 Created', '400 Bad Request']);
    expect(await countByMrn(project, mrn)).toBe(1);
  });

  it('create with an If-None-Exist header creates once, then answers with the match', async () => {
    const { client, project } = await fhirKitClient();
    const mrn = randomUUID();
    const options = { headers: { 'If-None-Exist': `identifier=${MRN}|${mrn}` } };
    const body = patientBody({ identifier: [{ system: MRN, value: mrn }] }) as Patient;
    const first = (await client.create({ resourceType: 'Patient', body, options })) as Patient;
    const second = (await client.create({ resourceType: 'Patient', body: { ...body, gender: 'female' }, options })) as Patient;
    expect(Client.httpFor(first).response?.status).toBe(201);
    expect(Client.httpFor(second).response?.status).toBe(200);
    expect(second.id).toBe(first.id);
    expect(second.gender).toBe('male');
    expect(await countByMrn(project, mrn)).toBe(1);
  });

  it('update with searchParams (conditional update) creates once, then updates the match', async () => {
    const { client, project } = await fhirKitClient();
    const mrn = randomUUID();
    const searchParams = { identifier: `${MRN}|${mrn}` };
    const body = patientBody({ identifier: [{ system: MRN, value: mrn }] }) as Patient;
    const created = (await client.update({ resourceType: 'Patient', searchParams, body })) as Patient;
    const updated = (await client.update({ resourceType: 'Patient', searchParams, body: { ...body, gender: 'female' } })) as Patient;
    expect(Client.httpFor(created).response?.status).toBe(201);
    expect(Client.httpFor(updated).response?.status).toBe(200);
    expect(updated.id).toBe(created.id);
    expect(updated.gender).toBe('female');
    expect(await countByMrn(project, mrn)).toBe(1);
  });

  it('history lists a resource\'s versions newest first at instance, type and system level', async () => {
    const { client } = await fhirKitClient();
    const created = (await client.create({ resourceType: 'Patient', body: patientBody() as Patient })) as Patient;
    const updated = (await client.update({ resourceType: 'Patient', id: created.id!, body: { ...created, gender: 'female' } })) as Patient;
    const versions = [updated.meta?.versionId, created.meta?.versionId];
    const ofPatient = (bundle: Bundle) =>
      (bundle.entry ?? []).filter((e) => e.resource?.id === created.id).map((e) => e.resource?.meta?.versionId);
    expect(ofPatient((await client.history({ resourceType: 'Patient', id: created.id! })) as Bundle)).toEqual(versions);
    expect(ofPatient((await client.history({ resourceType: 'Patient' })) as Bundle)).toEqual(versions);
    expect(ofPatient((await client.history()) as Bundle)).toEqual(versions);
  });
});
