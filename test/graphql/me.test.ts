import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { data } from './resource-helpers.js';

const api = await useTestServer();

describe('me', () => {
  it("describes the caller: the token's project, client and rights", async () => {
    const client = api.newProject();
    const { clientId } = await api.credentialsOf(client);
    const body = await data(api, client, '{ me { project { id } clientId subject superAdmin projectAdmin } }');
    expect(body.me).toEqual({
      project: { id: client.projectId },
      clientId,
      subject: expect.stringMatching(/^ClientApplication\//),
      superAdmin: false,
      projectAdmin: true,
    });
  });

  it('says in its schema that project is null for members who are not project admins', async () => {
    const body = await data(api, api.newProject(), '{ __type(name: "Me") { fields { name description } } }');
    const project = body.__type.fields.find((field: { name: string }) => field.name === 'project');
    expect(project.description).toMatch(/null for a member who is not a\s+project admin/);
  });

  it('tells a super admin token apart', async () => {
    const body = await data(api, api.superAdmin, '{ me { superAdmin } }');
    expect(body.me.superAdmin).toBe(true);
  });
});
