import { describe, expect, it } from 'vitest';
import { exportFileKey } from '../../src/bulk/export-files.js';
import { eventually, useTestServer } from '../helpers/server.js';
import { BASE, create, exportDone } from './export-helpers.js';

/** EXPORT_FILE_TTL_MS: an ended export's files, manifest and AsyncJob are removed after it. */

const TTL_MS = 5_000;
const api = await useTestServer({ EXPORT_FILE_TTL_MS: String(TTL_MS) });

describe('export expiry', () => {
  it('answers the manifest and each file with an Expires header: EXPORT_FILE_TTL_MS after the export ended', async () => {
    const p = api.newProject();
    await create(p, { resourceType: 'Patient', name: [{ family: 'Expires' }] });
    const { status, manifest } = await exportDone(p);
    const job = await p.get(`/AsyncJob/${status.split('/').pop()}`);
    expect(job.status, job.text).toBe(200);
    const expected = new Date(Date.parse(job.body.meta.lastUpdated) + TTL_MS).toUTCString();
    expect((await p.get(status)).headers.get('expires')).toBe(expected);
    expect((await p.get(manifest.output[0].url.slice(BASE.length))).headers.get('expires')).toBe(expected);
  });

  it('removes an ended export once EXPORT_FILE_TTL_MS has passed: its status URL, files and AsyncJob are 404', async () => {
    const p = api.newProject();
    await create(p, { resourceType: 'Patient', name: [{ family: 'Expiring' }] });
    const { status, manifest } = await exportDone(p);
    const file = manifest.output[0].url.slice(BASE.length);
    const jobId = status.split('/').pop()!;
    expect((await p.get(file)).status).toBe(200);

    expect(await eventually(async () => (await p.get(status)).status, 404, TTL_MS * 10)).toBe(404);
    expect((await p.get(file)).status).toBe(404);
    expect((await p.get(`/AsyncJob/${jobId}`)).status).toBe(410);
    expect(await api.server.services.binaryStorage.getStream(exportFileKey(jobId, 'Patient-1.ndjson'))).toBeUndefined();
  });

  it('leaves an ended export of another JOB_QUEUE to the servers of that queue', async () => {
    const p = api.newProject();
    await create(p, { resourceType: 'Patient', name: [{ family: 'Elsewhere' }] });
    const kept = (await exportDone(p)).status;
    // As a server of another queue (with its own EXPORT_FILE_TTL_MS) would have left it.
    await api.server.services.db.execute(`UPDATE job SET queue = 'elsewhere' WHERE id = $1`, [kept.split('/').pop()]);
    const swept = (await exportDone(p)).status;

    expect(await eventually(async () => (await p.get(swept)).status, 404, TTL_MS * 10)).toBe(404);
    expect((await p.get(kept)).status).toBe(200);
  });
});
