import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';

const api = await useTestServer();

describe('the ProjectMembership of a Bot', () => {
  it('exists as soon as the Bot is created, before any deploy', async () => {
    const client = api.newProject();
    const created = await client.post('/Bot', { resourceType: 'Bot', name: 'new bot' });
    expect(created.status).toBe(201);
    const memberships = await client.get(`/ProjectMembership?profile=Bot/${created.body.id}`);
    expect(memberships.body.entry).toHaveLength(1);
    expect(memberships.body.entry[0].resource.user).toEqual({ reference: `Bot/${created.body.id}` });
  });

  it('is made once with a Bot of a transaction Bundle, and not at all when the Bundle fails', async () => {
    const client = api.newProject();
    const bundle = (second: Record<string, unknown>) => ({
      resourceType: 'Bundle',
      type: 'transaction',
      entry: [
        { fullUrl: 'urn:uuid:9b1d3f3e-1f6a-4a57-9d53-0f6f0f0b0a01', resource: { resourceType: 'Bot', name: 'bundled bot' }, request: { method: 'POST', url: 'Bot' } },
        { resource: second, request: { method: 'POST', url: String(second.resourceType) } },
      ],
    });
    const failed = await client.post('', bundle({ resourceType: 'Patient', birthDate: 'not a date' }));
    expect(failed.status).toBe(400);
    expect((await client.get('/Bot')).body.entry ?? []).toHaveLength(0);
    expect((await client.get('/ProjectMembership?_count=100')).body.entry.filter((entry: { resource: { profile?: { reference?: string } } }) => entry.resource.profile?.reference?.startsWith('Bot/'))).toHaveLength(0);

    const done = await client.post('', bundle({ resourceType: 'Patient' }));
    expect(done.status).toBe(200);
    const botId = done.body.entry[0].resource.id;
    expect((await client.get(`/ProjectMembership?profile=Bot/${botId}`)).body.entry).toHaveLength(1);
  });

  it('is the one its bot runs as after a deploy (no second one)', async () => {
    const client = api.newProject();
    const created = await client.post('/Bot', { resourceType: 'Bot', name: 'deployed bot' });
    const deployed = await client.post(`/Bot/${created.body.id}/$deploy`, { code: 'exports.handler = async () => "ok";' }, { 'Content-Type': 'application/json' });
    expect(deployed.status).toBe(200);
    expect((await client.post(`/Bot/${created.body.id}/$execute`, {})).status).toBe(200);
    expect((await client.get(`/ProjectMembership?profile=Bot/${created.body.id}`)).body.entry).toHaveLength(1);
  });
});

describe('the ProjectMembership of a cloned Bot', () => {
  async function cloneOf(client: ReturnType<typeof api.newProject>, body: Record<string, unknown>): Promise<string> {
    await client.token();
    const cloned = await api.superAdmin.post(`/Project/${client.projectId}/$clone`, body, { 'Content-Type': 'application/json' });
    expect(cloned.status, cloned.text).toBe(201);
    return cloned.body.id as string;
  }

  it('is made with the clone when the clone leaves memberships out', async () => {
    const client = api.newProject();
    const bot = await client.post('/Bot', { resourceType: 'Bot', name: 'cloned bot' });
    const projectId = await cloneOf(client, { name: 'bots only', resourceTypes: ['Bot'] });
    const bots = await api.superAdmin.get(`/Bot?_project=${projectId}`);
    const copy = bots.body.entry.find((entry: { resource: { meta: { project: string } } }) => entry.resource.meta.project === projectId).resource;
    expect(copy.id).not.toBe(bot.body.id);
    const memberships = await api.superAdmin.get(`/ProjectMembership?profile=Bot/${copy.id}`);
    expect(memberships.body.entry).toHaveLength(1);
    expect(memberships.body.entry[0].resource.meta.project).toBe(projectId);
    expect(memberships.body.entry[0].resource.user).toEqual({ reference: `Bot/${copy.id}` });
  });

  it('is the cloned one when memberships are cloned too (no second one)', async () => {
    const client = api.newProject();
    await client.post('/Bot', { resourceType: 'Bot', name: 'cloned bot' });
    const projectId = await cloneOf(client, { name: 'everything' });
    const bots = await api.superAdmin.get('/Bot?_count=1000');
    const copy = bots.body.entry.find((entry: { resource: { meta: { project: string } } }) => entry.resource.meta.project === projectId).resource;
    expect((await api.superAdmin.get(`/ProjectMembership?profile=Bot/${copy.id}`)).body.entry).toHaveLength(1);
  });
});
