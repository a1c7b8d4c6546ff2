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
    const id = await deployedBot(client, code, { system: true });
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
