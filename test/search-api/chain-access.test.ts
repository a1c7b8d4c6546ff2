import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { addMemberClient } from '../auth/helpers.js';
import { projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, found } from './helpers.js';

/**
 * Chains and `_has` look into other types: a caller may search through a type only when its
 * AccessPolicy lets it read that type, or the search would tell what it may not read.
 */
const api = await useTestServer();

function family(): string {
  return `Access${randomUUID().replace(/-/g, '').slice(0, 12)}`;
}

async function memberAllowed(admin: ProjectClient, types: readonly string[]): Promise<ProjectClient> {
  const policy = await admin.post('/AccessPolicy', {
    resourceType: 'AccessPolicy',
    name: types.join(' and '),
    resource: types.map((resourceType) => ({ resourceType, readonly: true })),
  });
  expect(policy.status, policy.text).toBe(201);
  const member = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy.body.id}` });
  return projectClient(api.fhir, admin.projectId, async () => member.token);
}

async function observationAbout(admin: ProjectClient, subject: string, code: string): Promise<string> {
  return create(admin, { resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://example.org/codes', code }] }, subject: { reference: subject } });
}

describe('chains and _has through types the caller may not read', () => {
  it('refuses a _has through a type the AccessPolicy does not allow', async () => {
    const name = family();
    const admin = api.newProject();
    const patient = await create(admin, { resourceType: 'Patient', name: [{ family: name }] });
    await observationAbout(admin, `Patient/${patient}`, 'secret');
    const member = await memberAllowed(admin, ['Patient']);
    const res = await member.get(`/Patient?_has:Observation:subject:code=http://example.org/codes|secret&name=${name}`);
    expect(res.status).toBe(403);
    expect(res.body.issue[0].code).toBe('forbidden');
  });

  it('refuses a typed chain into a type the AccessPolicy does not allow', async () => {
    const name = family();
    const admin = api.newProject();
    const patient = await create(admin, { resourceType: 'Patient', name: [{ family: name }] });
    await observationAbout(admin, `Patient/${patient}`, 'any');
    const member = await memberAllowed(admin, ['Observation']);
    const res = await member.get(`/Observation?subject:Patient.name=${name}`);
    expect(res.status).toBe(403);
    expect(res.body.issue[0].code).toBe('forbidden');
  });

  it('looks an untyped chain up only in the target types the caller may read', async () => {
    const name = family();
    const admin = api.newProject();
    const patient = await create(admin, { resourceType: 'Patient', name: [{ family: name }] });
    const location = await create(admin, { resourceType: 'Location', name });
    const aboutPatient = await observationAbout(admin, `Patient/${patient}`, 'any');
    await observationAbout(admin, `Location/${location}`, 'any');
    const member = await memberAllowed(admin, ['Observation', 'Patient']);
    expect(await found(member, `/Observation?subject.name=${name}`)).toEqual([aboutPatient]);
  });
});
