import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { addMemberClient, bearer, sendJson } from '../auth/helpers.js';
import { deployedBot, execute } from './helpers.js';

const api = await useTestServer();

/** A Bot runs with the Project's secrets, which only admins see: members run Bots, admins write them. */
describe('who writes Bots', () => {
  it('refuses a member who is not a project admin a Bot create (403), writing nothing', async () => {
    const admin = api.newProject();
    const member = await addMemberClient(api, admin, { admin: false });
    const created = await sendJson(api, 'POST', '/fhir/R4/Bot', { resourceType: 'Bot', name: 'member bot' }, bearer(member.token));
    expect(created.status).toBe(403);
    expect(created.body.issue[0].code).toBe('forbidden');
    const found = await admin.get('/Bot?name=member');
    expect(found.body.entry ?? []).toHaveLength(0);
  });

  it('refuses a member $deploy of an admin\'s Bot (403), the deployed code still running', async () => {
    const admin = api.newProject();
    const id = await deployedBot(admin, 'exports.handler = async () => "admin code";');
    const member = await addMemberClient(api, admin, { admin: false });
    const deployed = await sendJson(api, 'POST', `/fhir/R4/Bot/${id}/$deploy`, { code: 'exports.handler = async (m, e) => e.secrets;', filename: 'index.js' }, bearer(member.token));
    expect(deployed.status).toBe(403);
    expect((await execute(admin, id, {})).text).toBe('admin code');
  });

  it('lets a member execute an admin\'s Bot', async () => {
    const admin = api.newProject();
    const id = await deployedBot(admin, 'exports.handler = async () => "ran";');
    const member = await addMemberClient(api, admin, { admin: false });
    const ran = await api.raw(`/fhir/R4/Bot/${id}/$execute`, { method: 'POST', headers: { 'Content-Type': 'application/json', ...bearer(member.token) }, body: '{}' });
    expect(ran.status).toBe(200);
    expect(await ran.text()).toBe('ran');
  });
});
