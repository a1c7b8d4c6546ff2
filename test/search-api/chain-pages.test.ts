import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { addMemberClient } from '../auth/helpers.js';
import { projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, found, matchesOfEveryPage, sorted } from './helpers.js';

/**
 * Searches with a chain whose targets are few (`subject:Patient.name=x`): the page is read from
 * the references to the matching targets (pages/chain-driven.ts), in one project or, for a super
 * admin, in every project. Each test's family name is its own.
 */
const api = await useTestServer();

function family(): string {
  return `Chain${randomUUID().replace(/-/g, '').slice(0, 12)}`;
}

async function patient(client: ProjectClient, name: string): Promise<string> {
  return create(client, { resourceType: 'Patient', name: [{ family: name }] });
}

async function observation(client: ProjectClient, subject: string, status = 'final', date = '2024-01-01'): Promise<string> {
  return create(client, { resourceType: 'Observation', status, code: { text: 'chain' }, subject: { reference: `Patient/${subject}` }, effectiveDateTime: date });
}

describe('a chained search by the name of few targets', () => {
  it("finds a super admin's matches in every project, and only theirs", async () => {
    const name = family();
    const [a, b] = [api.newProject(), api.newProject()];
    const [pa, pb, other] = [await patient(a, name), await patient(b, `${name}x`), await patient(a, family())];
    const matches = [await observation(a, pa), await observation(a, pa), await observation(b, pb)];
    await observation(a, other);
    expect(await found(api.superAdmin, `/Observation?subject:Patient.name=${name}`)).toEqual(sorted(...matches));
    expect(await found(a, `/Observation?subject:Patient.name=${name}`)).toEqual(sorted(matches[0], matches[1]));
  });

  it('leaves out the references to a deleted target and tests the other filters', async () => {
    const name = family();
    const [a, b] = [api.newProject(), api.newProject()];
    const [kept, gone] = [await patient(a, name), await patient(b, name)];
    const final = await observation(a, kept);
    await observation(a, kept, 'preliminary');
    await observation(b, gone);
    expect((await b.delete(`/Patient/${gone}`)).status).toBe(200);
    expect(await found(api.superAdmin, `/Observation?subject:Patient.name=${name}&status=final`)).toEqual([final]);
  });

  it('pages through every project in date order, each match once', async () => {
    const name = family();
    const projects = [api.newProject(), api.newProject(), api.newProject()];
    const subjects = await Promise.all(projects.map((p) => patient(p, name)));
    const ids: string[] = [];
    for (let day = 1; day <= 7; day++) ids.push(await observation(projects[day % 3], subjects[day % 3], 'final', `2024-02-0${day}`));
    expect(await matchesOfEveryPage(api.superAdmin, `/Observation?subject:Patient.name=${name}&_sort=-date&_count=3`)).toEqual([...ids].reverse());
    expect(await matchesOfEveryPage(api.superAdmin, `/Observation?subject:Patient.name=${name}&_count=2`)).toHaveLength(7);
  });

  it("gives a member whose AccessPolicy narrows Observations only the ones it allows", async () => {
    const name = family();
    const admin = api.newProject();
    const subject = await patient(admin, name);
    const allowed = await observation(admin, subject, 'final');
    await observation(admin, subject, 'preliminary');
    const policy = await admin.post('/AccessPolicy', {
      resourceType: 'AccessPolicy',
      name: 'final only',
      resource: [
        { resourceType: 'Observation', criteria: 'Observation?status=final' },
        { resourceType: 'Patient', readonly: true },
      ],
    });
    expect(policy.status, policy.text).toBe(201);
    const member = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy.body.id}` });
    const client = projectClient(api.fhir, admin.projectId, async () => member.token);
    expect(await found(client, `/Observation?subject:Patient.name=${name}`)).toEqual([allowed]);
  });
});
