import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { bootstrapSuperAdmin, SUPER_ADMIN_PROJECT_ID } from '../../src/auth/bootstrap.js';
import { loadServerKeys } from '../../src/auth/keys.js';
import { loadConfig } from '../../src/config.js';
import { startServer, type RunningServer } from '../../src/server.js';
import { testEnv } from '../helpers/server.js';

const dirs: string[] = [];
/** Each test starts embedded databases on disk (seconds each on a busy machine). */
const SLOW = 180_000;
afterAll(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

/** Servers on an embedded database of their own (never the shared PostgreSQL test database). */
function embedded(env: Record<string, string>, dataDir?: string) {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), 'flint-bootstrap-'));
  if (!dataDir) dirs.push(dir);
  return { dir, start: () => startServer(loadConfig(testEnv({ DATABASE_URL: '', DATA_DIR: dir, ...env })), { log: pino({ level: 'silent' }) }) };
}

async function token(server: RunningServer, params: Record<string, string>) {
  const res = await fetch(`${server.url}/oauth2/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(params),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

describe('bootstrap', () => {
  it('prints a random super admin password once, and keeps it across restarts', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    const { dir, start } = embedded({ SUPER_ADMIN_PASSWORD: '', SUPER_ADMIN_EMAIL: 'root@example.org' });
    let server = await start();
    let password: string;
    try {
      const lines = log.mock.calls.map((call) => String(call[0])).filter((line) => line.includes('root@example.org'));
      expect(lines).toHaveLength(1);
      password = /root@example\.org \/ (\S+)/.exec(lines[0])![1];
      expect((await token(server, { grant_type: 'password', username: 'root@example.org', password })).status).toBe(200);
    } finally {
      await server.close();
    }
    log.mockClear();
    server = await embedded({ SUPER_ADMIN_PASSWORD: '', SUPER_ADMIN_EMAIL: 'root@example.org' }, dir).start();
    try {
      expect(log.mock.calls.filter((call) => String(call[0]).includes('root@example.org'))).toHaveLength(0);
      expect((await token(server, { grant_type: 'password', username: 'root@example.org', password })).status).toBe(200);
    } finally {
      await server.close();
      log.mockRestore();
    }
  }, SLOW);

  it('ensures the super-admin client with exactly the configured credentials, and keeps keys across restarts', async () => {
    const { dir, start } = embedded({ SUPER_ADMIN_CLIENT_ID: 'ops-client', SUPER_ADMIN_CLIENT_SECRET: 'first-secret' });
    const first = await start();
    let accessToken: string;
    try {
      const res = await token(first, { grant_type: 'client_credentials', client_id: 'ops-client', client_secret: 'first-secret' });
      expect(res.status).toBe(200);
      expect(res.body.project.reference).toBe(`Project/${SUPER_ADMIN_PROJECT_ID}`);
      accessToken = res.body.access_token;
    } finally {
      await first.close();
    }
    const second = await embedded({ SUPER_ADMIN_CLIENT_ID: 'ops-client', SUPER_ADMIN_CLIENT_SECRET: 'second-secret' }, dir).start();
    try {
      // A token from before the restart still verifies: the keys live in the database.
      const read = await fetch(`${second.url}/fhir/R4/Project/${SUPER_ADMIN_PROJECT_ID}`, { headers: { Authorization: `Bearer ${accessToken}` } });
      expect(read.status).toBe(200);
      expect(await read.json()).toMatchObject({ name: 'Super Admin', superAdmin: true });
      expect((await token(second, { grant_type: 'client_credentials', client_id: 'ops-client', client_secret: 'first-secret' })).status).toBe(401);
      expect((await token(second, { grant_type: 'client_credentials', client_id: 'ops-client', client_secret: 'second-secret' })).status).toBe(200);
      const client = await fetch(`${second.url}/fhir/R4/ClientApplication/ops-client`, { headers: { Authorization: `Bearer ${accessToken}` } });
      expect(await client.json()).toMatchObject({ id: 'ops-client', secret: 'second-secret' });
    } finally {
      await second.close();
    }
  }, SLOW);

  it('converges when bootstraps and key generation race', async () => {
    const { start } = embedded({});
    const server = await start();
    try {
      const { auth, db } = server.services;
      const before = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM resource_history');
      const keys = await Promise.all([loadServerKeys(db), loadServerKeys(db)]);
      expect(keys[0].kid).toBe(keys[1].kid);
      expect(keys[0].kid).toBe(auth.keys.kid);
      await Promise.all([bootstrapSuperAdmin(auth, server.services.log), bootstrapSuperAdmin(auth, server.services.log)]);
      const after = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM resource_history');
      // Nothing changed, so no new versions were written.
      expect(after[0].n).toBe(before[0].n);
      const projects = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM resource WHERE "resourceType" = 'Project' AND content->>'superAdmin' = 'true'`);
      expect(projects[0].n).toBe(1);
    } finally {
      await server.close();
    }
  }, SLOW);

  it.skipIf(!process.env.DATABASE_URL)('lets two servers start at once on one PostgreSQL database', async () => {
    const env = testEnv();
    const [a, b] = await Promise.all([
      startServer(loadConfig(env), { log: pino({ level: 'silent' }) }),
      startServer(loadConfig(env), { log: pino({ level: 'silent' }) }),
    ]);
    try {
      expect(a.services.auth.keys.kid).toBe(b.services.auth.keys.kid);
      const res = await token(a, { grant_type: 'client_credentials', client_id: env.SUPER_ADMIN_CLIENT_ID!, client_secret: env.SUPER_ADMIN_CLIENT_SECRET! });
      const read = await fetch(`${b.url}/fhir/R4/Project/${SUPER_ADMIN_PROJECT_ID}`, { headers: { Authorization: `Bearer ${res.body.access_token}` } });
      expect(read.status).toBe(200);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  }, SLOW);
});
