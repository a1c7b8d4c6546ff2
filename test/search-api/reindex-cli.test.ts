import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { parseArguments } from '../../scripts/reindex.js';
import { createProject } from '../../src/auth/account-writes.js';
import { loadConfig } from '../../src/config.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { clientCredentialsToken, eventually, projectClient, testEnv, type ProjectClient } from '../helpers/server.js';
import { create, found } from './helpers.js';

/**
 * `npm run reindex` as a separate process, on the database of the tests: PostgreSQL when
 * DATABASE_URL is set (the server keeps running), otherwise an embedded database in a temporary
 * directory (the server is stopped first: PGlite has one process at a time).
 */

const postgres = process.env.DATABASE_URL;
const dataDir = postgres ? undefined : mkdtempSync(join(tmpdir(), 'flint-reindex-'));
const servers: RunningServer[] = [];
afterAll(async () => {
  for (const server of servers) await server.close().catch(() => undefined);
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function start(): Promise<RunningServer> {
  const server = await startServer(loadConfig(testEnv(dataDir ? { DATA_DIR: dataDir } : {})), { log: pino({ level: 'silent' }) });
  servers.push(server);
  return server;
}

async function clientOf(server: RunningServer, projectId: string, credentials: { clientId: string; clientSecret: string }): Promise<ProjectClient> {
  const token = await clientCredentialsToken(server.url, credentials.clientId, credentials.clientSecret);
  return projectClient(`${server.url}/fhir/R4`, projectId, async () => token);
}

function runCli(args: string[], namespace?: string): Promise<{ stdout: string; stderr: string }> {
  return promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/reindex.ts', ...args], {
    cwd: new URL('../../', import.meta.url).pathname,
    env: {
      ...process.env,
      DATABASE_URL: postgres ?? '',
      DATA_DIR: dataDir ?? '',
      // Vitest sets BASE_URL=/ in this process; the configuration wants an absolute URL.
      BASE_URL: 'http://localhost/',
      LOG_LEVEL: 'silent',
      // The cache notices of the server under test (each test server has a namespace of its own).
      ...(namespace ? { CACHE_NAMESPACE: namespace } : {}),
    },
  });
}

describe('npm run reindex', () => {
  it('rebuilds the index rows of a project on the database the server uses', { timeout: 120_000 }, async () => {
    let server = await start();
    const projectId = randomUUID();
    const project = await createProject(server.services.auth, { id: projectId, name: 'Reindex CLI' });
    const credentials = { clientId: project.client.id, clientSecret: project.client.secret };
    let client = await clientOf(server, projectId, credentials);
    const id = await create(client, { resourceType: 'Patient', name: [{ family: 'Cliffordson' }] });
    await server.services.db.execute('DELETE FROM string_index WHERE "resourceType" = $1 AND "resourceId" = $2', ['Patient', id]);
    expect(await found(client, '/Patient?name=cliffordson')).toEqual([]);
    // Counted (and kept) before the reindex; the running server hears of the reindex (PostgreSQL).
    expect((await client.get('/Patient?name=cliffordson&_summary=count')).body.total).toBe(0);

    if (dataDir) await server.close();
    const { stdout } = await runCli(['--project', projectId, '--type', 'Patient', '--batch-size', '10'], server.services.config.cacheNamespace);
    expect(stdout).toContain('Patient\t1');
    expect(stdout).toContain('Reindexed 1 resources');

    if (dataDir) {
      server = await start();
      client = await clientOf(server, projectId, credentials);
    }
    expect(await found(client, '/Patient?name=cliffordson')).toEqual([id]);
    expect(await eventually(async () => (await client.get('/Patient?name=cliffordson&_summary=count')).body.total, 1)).toBe(1);
  });

  it('refuses an unknown option with the usage', () => {
    expect(() => parseArguments(['--projects', 'x'])).toThrow(/usage: npm run reindex/);
    expect(parseArguments(['--type', 'Patient,Observation', '--type', 'Encounter'])).toMatchObject({
      resourceTypes: ['Patient', 'Observation', 'Encounter'],
    });
  });
});
