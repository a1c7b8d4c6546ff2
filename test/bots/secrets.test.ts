import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';

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
