import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { addMemberClient, bearer, getJson, sendJson } from './helpers.js';

/**
 * A Project's `secret` and `systemSecret` (what its bots read as `event.secrets`) are shown to the
 * project's admins and super admins only (`systemSecret` to super admins only: test/bots/secrets.test.ts);
 * other members do not see the Project at all.
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

  it('never reach a member who is not an admin, who may not read the Project at all (403)', async () => {
    const { admin, member } = await projectWithSecret();
    const paths = [`Project/${admin.projectId}`, `Project?_id=${admin.projectId}`, `Project/${admin.projectId}/_history`, `Project/${admin.projectId}/_history/1`];
    for (const path of paths) {
      const res = await getJson(api, `/fhir/R4/${path}`, member);
      expect(res.status, path).toBe(403);
      expect(JSON.stringify(res.body)).not.toContain('k-123');
    }
    const gql = await sendJson(api, 'POST', '/fhir/R4/$graphql', { query: `{ Project(id: "${admin.projectId}") { id secret { name } } }` }, member);
    expect(gql.body.data?.Project ?? null).toBeNull();
    expect(JSON.stringify(gql.body)).not.toContain('k-123');
  });
});
