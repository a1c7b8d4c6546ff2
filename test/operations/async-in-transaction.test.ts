import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { BASE, exportedLines, idsOf, poll, type Json } from '../bulk/export-helpers.js';

/**
 * An asynchronous operation (`Prefer: respond-async`) inside a transaction Bundle: its AsyncJob
 * and queued job are written in the transaction, so the job runs only if the Bundle commits, and
 * after it, seeing its writes.
 */

const api = await useTestServer();

const ASYNC = { Prefer: 'respond-async' };

function transaction(...entry: Json[]): Json {
  return { resourceType: 'Bundle', type: 'transaction', entry };
}

const createPatient = (family: string): Json => ({
  fullUrl: `urn:uuid:${crypto.randomUUID()}`,
  resource: { resourceType: 'Patient', name: [{ family }] },
  request: { method: 'POST', url: 'Patient' },
});

describe('asynchronous operations in a transaction Bundle', () => {
  it('queue their job when the transaction commits; the job sees what the transaction wrote', async () => {
    const p = api.newProject();
    const res = await p.post('/', transaction(createPatient('Committed'), { request: { method: 'GET', url: '$export?_type=Patient' } }), ASYNC);
    expect(res.status, res.text).toBe(200);
    const [created, started] = res.body.entry;
    expect(started.response.status).toMatch(/^202/);
    expect(started.response.location).toMatch(/\/\$export-status\/[0-9a-f-]{36}$/);
    const status = await poll(p, started.response.location.slice(BASE.length));
    expect(status.status, status.text).toBe(200);
    expect(idsOf(await exportedLines(p, status.body))).toEqual([`Patient/${created.resource.id}`]);
  });

  it('leave no AsyncJob and no job when the transaction rolls back', async () => {
    const p = api.newProject();
    // Reads run last, in order: the export's entry is accepted before this one fails.
    const failing = { request: { method: 'GET', url: 'Patient/00000000-0000-4000-8000-000000000000' } };
    const res = await p.post('/', transaction(createPatient('RolledBack'), { request: { method: 'GET', url: '$export' } }, failing), ASYNC);
    expect(res.status, res.text).toBe(404);
    expect((await p.get('/AsyncJob')).body.entry ?? []).toEqual([]);
    expect((await p.get('/Patient')).body.entry ?? []).toEqual([]);
    const rows = await api.server.services.db.query<{ n: number }>('SELECT count(*)::int AS n FROM job WHERE "projectId" = $1', [p.projectId]);
    expect(rows[0].n).toBe(0);
  });
});
