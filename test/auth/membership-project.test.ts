import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TEST_SUPER_ADMIN, useTestServer, type ProjectClient } from '../helpers/server.js';

/**
 * A ProjectMembership grants access to the project that stores it, and a sign-in naming a project
 * lands in the project of the membership it finds: a membership's `project` must name the project
 * that stores it, whoever writes it (super admins included), or one naming another project would
 * send a sign-in there into the project holding the membership.
 */
const api = await useTestServer();

const membership = (projectId: string) => ({
  resourceType: 'ProjectMembership',
  project: { reference: `Project/${projectId}` },
  user: { reference: `User/${randomUUID()}` },
  profile: { reference: `Practitioner/${randomUUID()}` },
});

function expectForeignProject(res: { status: number; body: any }): void {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body.issue[0]).toMatchObject({ code: 'invalid', expression: ['ProjectMembership.project'] });
}

async function membershipsNaming(client: ProjectClient, projectId: string): Promise<number> {
  const res = await client.get(`/ProjectMembership?project=Project/${projectId}&_total=accurate`);
  expect(res.status).toBe(200);
  return res.body.total;
}

describe('a ProjectMembership names the project that stores it', () => {
  it('refuses a super admin’s membership naming another project (400 naming ProjectMembership.project), nothing written', async () => {
    const other = api.newProject();
    const before = await membershipsNaming(api.superAdmin, other.projectId);
    expectForeignProject(await api.superAdmin.post('/ProjectMembership', membership(other.projectId)));
    expect(await membershipsNaming(api.superAdmin, other.projectId)).toBe(before);
  });

  it('refuses a super admin’s update that moves a project’s membership to another project', async () => {
    const admin = api.newProject();
    const other = api.newProject();
    const created = await admin.post('/ProjectMembership', membership(admin.projectId));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expectForeignProject(await api.superAdmin.put(`/ProjectMembership/${created.body.id}`, { ...created.body, project: { reference: `Project/${other.projectId}` } }));
    expect((await admin.get(`/ProjectMembership/${created.body.id}`)).body.meta.versionId).toBe(created.body.meta.versionId);
  });

  it('refuses a project admin’s patch naming another project, and leaves the membership as it was', async () => {
    const admin = api.newProject();
    const other = api.newProject();
    const created = await admin.post('/ProjectMembership', membership(admin.projectId));
    const ops = [{ op: 'replace', path: '/project', value: { reference: `Project/${other.projectId}` } }];
    const res = await admin.patch(`/ProjectMembership/${created.body.id}`, ops, { 'Content-Type': 'application/json-patch+json' });
    expectForeignProject(res);
    expect((await admin.get(`/ProjectMembership/${created.body.id}`)).body.project.reference).toBe(`Project/${admin.projectId}`);
  });

  it('still takes a super admin’s membership naming its own project', async () => {
    const own = await api.superAdmin.get(`/ProjectMembership?user=ClientApplication/${TEST_SUPER_ADMIN.clientId}`);
    const res = await api.superAdmin.post('/ProjectMembership', membership(own.body.entry[0].resource.meta.project));
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  });
});
