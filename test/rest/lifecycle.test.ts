import { rmSync } from 'node:fs';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { newDataDir, patientBody, startServerProcess, superAdminClient, testEnv } from '../helpers/server.js';

// A folder holding a copy of the run's migrated database, as every test server starts from one:
// migrating an empty database instead takes tens of seconds on a loaded machine.
const dataDir = await newDataDir();
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function start(env: Record<string, string> = {}) {
  const config = loadConfig(testEnv(env));
  return startServer(config, { log: pino({ level: 'silent' }) });
}

/** What a server start in a test gets: as much as one in a hook (vitest hookTimeout). */
const START_MS = 60_000;

describe('server lifecycle', () => {
  it.skipIf(process.env.DATABASE_URL)('keeps embedded data across a restart', { timeout: 2 * START_MS }, async () => {
    const first = await start({ DATA_DIR: dataDir });
    const created = await superAdminClient(first.url).post('/Patient', patientBody());
    await first.close();
    const second = await start({ DATA_DIR: dataDir });
    try {
      const read = await superAdminClient(second.url).get(`/Patient/${created.body.id}`);
      expect(read.status).toBe(200);
      expect(read.body).toEqual(created.body);
    } finally {
      await second.close();
    }
  });

  it('answers an unexpected failure with 500 exception and no internals', { timeout: START_MS }, async () => {
    const server = await start();
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
    const { url, child } = await startServerProcess();
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
