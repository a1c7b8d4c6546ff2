import { describe, expect, it } from 'vitest';
import { projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';
import { addMemberClient } from '../auth/helpers.js';
import { postGraphQL } from '../graphql/resource-helpers.js';

/**
 * A ClientApplication's secret is kept beside the resource: every view of the current resource
 * (read, search, _include, GraphQL) must show it to its project's admins, and none to anyone else.
 */
const api = await useTestServer();

async function projectWithMember(): Promise<{ admin: ProjectClient; member: ProjectClient; clientId: string; secret: string }> {
  const admin = api.newProject();
  const { clientId, clientSecret } = await api.credentialsOf(admin);
  const member = await addMemberClient(api, admin);
  return { admin, member: projectClient(api.fhir, admin.projectId, async () => member.token), clientId, secret: clientSecret };
}

const graphql = async (client: ProjectClient, query: string) => JSON.parse((await postGraphQL(api, client, '/fhir/R4/$graphql', query)).text);

describe('ClientApplication secrets in every view', () => {
  it('are in an admin’s search results as in a read', async () => {
    const { admin, clientId, secret } = await projectWithMember();
    const read = await admin.get(`/ClientApplication/${clientId}`);
    expect(read.body.secret).toBe(secret);
    const found = await admin.get(`/ClientApplication?_id=${clientId}`);
    expect(found.status).toBe(200);
    expect(found.body.entry[0].resource).toEqual(read.body);
    const all = await admin.get('/ClientApplication');
    expect(all.body.entry.find((e: any) => e.resource.id === clientId).resource.secret).toBe(secret);
  });

  it('are in resources an admin’s search includes', async () => {
    const { admin, clientId, secret } = await projectWithMember();
    const found = await admin.get(`/ProjectMembership?profile=ClientApplication/${clientId}&_include=ProjectMembership:profile`);
    expect(found.status).toBe(200);
    const included = found.body.entry.find((e: any) => e.search.mode === 'include');
    expect(included.resource).toMatchObject({ resourceType: 'ClientApplication', id: clientId, secret });
  });

  it('are in an admin’s GraphQL read and list', async () => {
    const { admin, clientId, secret } = await projectWithMember();
    const answer = await graphql(admin, `{ ClientApplication(id: "${clientId}") { id secret } ClientApplicationList(_id: "${clientId}") { id secret } }`);
    expect(answer.errors).toBeUndefined();
    expect(answer.data.ClientApplication.secret).toBe(secret);
    expect(answer.data.ClientApplicationList).toEqual([{ id: clientId, secret }]);
  });

  it('never reach a member who is not an admin: read, search, batch, GraphQL', async () => {
    const { member, clientId } = await projectWithMember();
    const read = await member.get(`/ClientApplication/${clientId}`);
    expect(read.status).toBe(200);
    expect(read.body.secret).toBeUndefined();
    const found = await member.get(`/ClientApplication?_id=${clientId}`);
    expect(found.body.entry[0].resource.secret).toBeUndefined();
    // Included resources are read as search matches are; the memberships that name clients are hidden from members.
    const batch = await member.post('/', { resourceType: 'Bundle', type: 'batch', entry: [{ request: { method: 'GET', url: `ClientApplication/${clientId}` } }] });
    expect(batch.body.entry[0].resource.id).toBe(clientId);
    expect(batch.body.entry[0].resource.secret).toBeUndefined();
    const answer = await graphql(member, `{ ClientApplicationList(_id: "${clientId}") { id secret } }`);
    expect(answer.data.ClientApplicationList).toEqual([{ id: clientId, secret: null }]);
  });

  it('are not in history: secrets are not versioned', async () => {
    const { admin, clientId } = await projectWithMember();
    const history = await admin.get(`/ClientApplication/${clientId}/_history`);
    expect(history.status).toBe(200);
    expect(history.body.entry[0].resource.secret).toBeUndefined();
  });
});
