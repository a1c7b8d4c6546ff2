import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';

/**
 * Operation input with no parameters at all: a plain JSON `{}` where an operation takes plain JSON
 * (`Project/$clone`, SPEC 4.7), and a Parameters body with `"parameter": []`, which R4 JSON
 * forbids but clients building Parameters in code send: both mean "no parameters".
 */
const api = await useTestServer();

describe('operation input without parameters', () => {
  it('clones a project from the plain JSON body {}', async () => {
    const source = api.newProject();
    await source.token();
    const res = await api.superAdmin.post(`/Project/${source.projectId}/$clone`, {});
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.resourceType).toBe('Project');
    expect(res.body.id).not.toBe(source.projectId);
  });

  it('clones a project from a Parameters body with "parameter": []', async () => {
    const source = api.newProject();
    await source.token();
    const res = await api.superAdmin.post(`/Project/${source.projectId}/$clone`, { resourceType: 'Parameters', parameter: [] });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.resourceType).toBe('Project');
  });

  it('reads "parameter": [] as no parameters in any operation', async () => {
    const admin = api.newProject();
    const { clientId } = await api.credentialsOf(admin);
    const res = await admin.post(`/ClientApplication/${clientId}/$rotate-secret`, { resourceType: 'Parameters', parameter: [] });
    expect(res.status).toBe(200);
    expect(res.body.resourceType).toBe('ClientApplication');
  });

  it('still names a missing required parameter when "parameter" is []', async () => {
    const admin = api.newProject();
    const res = await admin.post('/Project/$init', { resourceType: 'Parameters', parameter: [] });
    expect(res.status).toBe(400);
    expect(res.body.issue[0]).toMatchObject({ code: 'invalid', expression: ['Parameters.parameter'] });
    expect(res.body.issue[0].diagnostics ?? res.body.issue[0].details?.text).toMatch(/"name"/);
  });

  it('keeps refusing an empty array elsewhere in the input', async () => {
    const admin = api.newProject();
    const res = await admin.post('/Project/$init', {
      resourceType: 'Parameters',
      parameter: [{ name: 'name', valueString: 'x', extension: [] }],
    });
    expect(res.status).toBe(400);
  });

  it('keeps refusing a stored Parameters resource with "parameter": [] (the tolerance is for operation input)', async () => {
    const admin = api.newProject();
    const res = await admin.post('/Parameters', { resourceType: 'Parameters', parameter: [] });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body.issue)).toMatch(/[Ee]mpty array/);
  });
});
