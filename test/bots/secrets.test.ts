import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { deployedBot, execute } from './helpers.js';

const api = await useTestServer();

describe('bot secrets and Project/$clone', () => {
  it('drops the project secrets from the clone', async () => {
    const client = api.newProject();
    await client.token();
    const project = await api.superAdmin.get(`/Project/${client.projectId}`);
    await api.superAdmin.put(`/Project/${client.projectId}`, { ...project.body, secret: [{ name: 'API_KEY', valueString: 'k-123' }] });
    const cloned = await api.superAdmin.post(`/Project/${client.projectId}/$clone`, { name: 'Copy without secrets' }, { 'Content-Type': 'application/json' });
    expect(cloned.status, cloned.text).toBe(201);
    const copy = await api.superAdmin.get(`/Project/${cloned.body.id}`);
    expect(copy.body.name).toBe('Copy without secrets');
    expect(copy.body.secret).toBeUndefined();
  });
});

describe('bot secrets in event.secrets', () => {
  async function withSecrets(client: ProjectClient): Promise<void> {
    await client.token();
    const project = await api.superAdmin.get(`/Project/${client.projectId}`);
    const updated = await api.superAdmin.put(`/Project/${client.projectId}`, {
      ...project.body,
      secret: [{ name: 'SHARED', valueString: 'project' }],
      systemSecret: [{ name: 'SHARED', valueString: 'system' }, { name: 'SYSTEM_ONLY', valueString: 's-1' }],
    });
    expect(updated.status, updated.text).toBe(200);
  }
  const code = 'exports.handler = async (medplum, event) => Object.keys(event.secrets).sort().map((name) => name + "=" + event.secrets[name].valueString).join(",");';

  it('holds the project systemSecret entries for a system Bot, a secret of the same name winning', async () => {
    const client = api.newProject();
    await withSecrets(client);
    const id = await deployedBot(client, code);
    const bot = await client.get(`/Bot/${id}`);
    const marked = await api.superAdmin.put(`/Bot/${id}`, { ...bot.body, system: true });
    expect(marked.status, marked.text).toBe(200);
    expect((await execute(client, id, {})).text).toBe('SHARED=project,SYSTEM_ONLY=s-1');
  });

  it('leaves the systemSecret entries out for other Bots', async () => {
    const client = api.newProject();
    await withSecrets(client);
    const id = await deployedBot(client, code);
    expect((await execute(client, id, {})).text).toBe('SHARED=project');
  });

  it('refuses a Bot with a secret element of its own (the definitions have none)', async () => {
    const created = await api.newProject().post('/Bot', { resourceType: 'Bot', name: 'b', secret: [{ name: 'A', valueString: 'x' }] });
    expect(created.status).toBe(400);
  });
});

describe('secrets only super admins see or set', () => {
  it('shows a project admin the Project\'s secret but not its systemSecret', async () => {
    const client = api.newProject();
    await client.token();
    const project = await api.superAdmin.get(`/Project/${client.projectId}`);
    await api.superAdmin.put(`/Project/${client.projectId}`, { ...project.body, secret: [{ name: 'A', valueString: 'a' }], systemSecret: [{ name: 'S', valueString: 's' }] });
    const seen = await client.get(`/Project/${client.projectId}`);
    expect(seen.status).toBe(200);
    expect(seen.body.secret).toEqual([{ name: 'A', valueString: 'a' }]);
    expect(seen.body.systemSecret).toBeUndefined();
  });

  it('shows a super admin the Project\'s systemSecret', async () => {
    const client = api.newProject();
    await client.token();
    const project = await api.superAdmin.get(`/Project/${client.projectId}`);
    await api.superAdmin.put(`/Project/${client.projectId}`, { ...project.body, systemSecret: [{ name: 'S', valueString: 's' }] });
    expect((await api.superAdmin.get(`/Project/${client.projectId}`)).body.systemSecret).toEqual([{ name: 'S', valueString: 's' }]);
  });

  it('refuses a project admin\'s Bot marked system, naming the element', async () => {
    const created = await api.newProject().post('/Bot', { resourceType: 'Bot', name: 'b', system: true });
    expect(created.status).toBe(403);
    expect(created.body.issue[0].expression).toEqual(['Bot.system']);
  });

  it('refuses a project admin\'s update that unmarks a system Bot', async () => {
    const client = api.newProject();
    const bot = (await client.post('/Bot', { resourceType: 'Bot', name: 'b' })).body;
    await api.superAdmin.put(`/Bot/${bot.id}`, { ...bot, system: true });
    const changed = await client.put(`/Bot/${bot.id}`, { resourceType: 'Bot', id: bot.id, name: 'b' });
    expect(changed.status).toBe(403);
    expect(changed.body.issue[0].expression).toEqual(['Bot.system']);
  });

  it('refuses a project admin\'s patch that marks a Bot system', async () => {
    const client = api.newProject();
    const bot = (await client.post('/Bot', { resourceType: 'Bot', name: 'b' })).body;
    const patched = await client.patch(`/Bot/${bot.id}`, [{ op: 'add', path: '/system', value: true }]);
    expect(patched.status).toBe(403);
  });

  it('lets a project admin update a system Bot that stays system', async () => {
    const client = api.newProject();
    const bot = (await client.post('/Bot', { resourceType: 'Bot', name: 'b' })).body;
    await api.superAdmin.put(`/Bot/${bot.id}`, { ...bot, system: true });
    const renamed = await client.put(`/Bot/${bot.id}`, { resourceType: 'Bot', id: bot.id, name: 'renamed', system: true });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body.system).toBe(true);
  });

  it('refuses a transaction Bundle entry marking a Bot system, naming the entry', async () => {
    const bundle = {
      resourceType: 'Bundle', type: 'transaction',
      entry: [
        { resource: { resourceType: 'Bot', name: 'plain' }, request: { method: 'POST', url: 'Bot' } },
        { resource: { resourceType: 'Bot', name: 'system', system: true }, request: { method: 'POST', url: 'Bot' } },
      ],
    };
    const answer = await api.newProject().post('/', bundle);
    expect(answer.status).toBe(403);
    expect(JSON.stringify(answer.body)).toContain('Bot.system');
  });
});
