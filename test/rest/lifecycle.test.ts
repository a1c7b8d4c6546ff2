import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { patientBody, startServerProcess, superAdminClient, testEnv } from '../helpers/server.js';

const dataDir = mkdtempSync(join(tmpdir(), 'flint-lifecycle-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function start(env: Record<string, string> = {}) {
  const config = loadConfig(testEnv({ DATA_DIR: dataDir, ...env }));
  return startServer(config, { log: pino({ level: 'silent' }) });
}

describe('server lifecycle', () => {
  it.skipIf(process.env.DATABASE_URL)('keeps embedded data across a restart', async () => {
    const first = await start();
    const created = await superAdminClient(first.url).post('/Patient', patientBody());
    await first.close();
    const second = await start();
    try {
      const read = await superAdminClient(second.url).get(`/Patient/${created.body.id}`);
      expect(read.status).toBe(200);
      expect(read.body).toEqual(created.body);
    } finally {
      await second.close();
    }
  });

  it('answers an unexpected failure with 500 exception and no internals', async () => {
    const server = await start({ DATA_DIR: 'memory://' });
    const client = superAdminClient(server.url);
    await client.token();
    await server.services.db.close();
    try {
      const res = await client.post('/Patient', patientBody());
      expect(res.status).toBe(500);
      expect(res.body).toEqual({
        resourceType: 'OperationOutcome',
        issue: [{ severity: 'error', code: 'exception', details: { text: 'Internal server error' } }],
      });
    } finally {
      await server.close().catch(() => undefined);
    }
  });

  it('finishes in-flight requests on SIGTERM, then exits 0', async () => {
    const { url, child } = await startServerProcess({ DATA_DIR: 'memory://' });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const client = superAdminClient(url);
    await client.token();
    const inFlight = Array.from({ length: 20 }, () => client.post('/Patient', patientBody()));
    await new Promise((r) => setTimeout(r, 5));
    child.kill('SIGTERM');
    const statuses = (await Promise.allSettled(inFlight)).map((r) => (r.status === 'fulfilled' ? r.value.status : 'refused'));
    expect(await exited).toBe(0);
    // Requests the server had accepted complete normally; none is cut off with an error status.
    expect(statuses.filter((s) => s !== 201 && s !== 'refused')).toEqual([]);
    expect(statuses).toContain(201);
  }, 150_000);
});
