import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { addMemberClient, bearer, getJson, sendJson } from './helpers.js';

/**
 * A Project's `secret` and `systemSecret` (what its bots read as `event.secrets`) are shown to the
 * project's admins and super admins only (`systemSecret` to super admins only: test/bots/secrets.test.ts):
 * every other member's view of the Project leaves them out.
 */
const api = await useTestServer();
const SECRET = [{ name: 'API_KEY', valueString: 'k-123' }];

/** A project whose Project holds a secret, and a token of a member who is not an admin. */
async function projectWithSecret(): Promise<{ admin: ProjectClient; member: Record<string, string> }> {
  const admin = api.newProject();
  // The project is made with its first token.
  await admin.token();
  const project = await api.superAdmin.get(`/Project/${admin.projectId}`);
  const stored = await api.superAdmin.put(`/Project/${admin.projectId}`, { ...project.body, secret: SECRET, systemSecret: SECRET });
  expect(stored.status, stored.text).toBe(200);
  const { token } = await addMemberClient(api, admin);
  return { admin, member: bearer(token) };
}

describe('Project secrets', () => {
  it('are shown to the project admin', async () => {
    const { admin } = await projectWithSecret();
    const res = await admin.get(`/Project/${admin.projectId}`);
    expect(res.status).toBe(200);
    expect(res.body.secret).toEqual(SECRET);
  });

  it('are left out of a member’s read', async () => {
    const { admin, member } = await projectWithSecret();
    const res = await getJson(api, `/fhir/R4/Project/${admin.projectId}`, member);
    expect(res.status).toBe(200);
    expect(res.body.name).toEqual(expect.any(String));
    expect(res.body.secret).toBeUndefined();
    expect(res.body.systemSecret).toBeUndefined();
  });

  it('are left out of a member’s search', async () => {
    const { admin, member } = await projectWithSecret();
    const res = await getJson(api, `/fhir/R4/Project?_id=${admin.projectId}`, member);
    expect(res.status).toBe(200);
    expect(res.body.entry).toHaveLength(1);
    expect(res.body.entry[0].resource.secret).toBeUndefined();
  });

  it('are left out of a member’s history and vread', async () => {
    const { admin, member } = await projectWithSecret();
    const history = await getJson(api, `/fhir/R4/Project/${admin.projectId}/_history`, member);
    expect(history.status).toBe(200);
    expect(history.body.entry.length).toBeGreaterThan(1);
    for (const entry of history.body.entry) expect(entry.resource.secret).toBeUndefined();
    const latest = history.body.entry[0].resource.meta.versionId;
    const vread = await getJson(api, `/fhir/R4/Project/${admin.projectId}/_history/${latest}`, member);
    expect(vread.status).toBe(200);
    expect(vread.body.secret).toBeUndefined();
  });

  it('are left out of a member’s GraphQL read', async () => {
    const { admin, member } = await projectWithSecret();
    const res = await sendJson(api, 'POST', '/fhir/R4/$graphql', { query: `{ Project(id: "${admin.projectId}") { id secret { name } } }` }, member);
    expect(res.status).toBe(200);
    expect(res.body.data.Project.id).toBe(admin.projectId);
    expect(res.body.data.Project.secret).toBeNull();
  });
});
