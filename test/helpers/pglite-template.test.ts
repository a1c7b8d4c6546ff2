import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { describe, expect, inject, it } from 'vitest';
import { openPGlite } from '../../src/db/pglite.js';
import { useTestServer } from './server.js';

const template = inject('pgliteTemplate');
const api = await useTestServer();
const MIGRATIONS = readdirSync(new URL('../../prisma/migrations/', import.meta.url), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .sort();

// The migrated dump test servers start from (test/helpers/global-setup.ts); PostgreSQL runs have none.
describe.skipIf(template === undefined)('test servers on the migrated dump', () => {
  it('start with every migration applied when the dump was built', async () => {
    expect(api.server.services.config.dataDir).toBe(`memory://${template}`);
    const rows = await api.server.services.db.query<{ name: string; ms: number }>(
      'SELECT name, extract(epoch FROM applied_at) * 1000 AS ms FROM "_flint_migrations" ORDER BY name',
    );
    expect(rows.map((row) => row.name)).toEqual(MIGRATIONS);
    // Not applied by the server at its start, which came after the dump was written.
    const dumped = statSync(template!).mtimeMs;
    for (const row of rows) expect(Number(row.ms)).toBeLessThanOrEqual(dumped);
  });

  it('write to a copy of it, never to the dump', async () => {
    const before = digest(template!);
    const copy = await openPGlite(`memory://${template}`);
    try {
      await copy.exec(`INSERT INTO "_flint_migrations" (name) VALUES ('written-by-a-copy')`);
      expect((await copy.query(`SELECT 1 FROM "_flint_migrations" WHERE name = 'written-by-a-copy'`)).rows).toHaveLength(1);
    } finally {
      await copy.close();
    }
    expect(digest(template!)).toBe(before);
  });
});

describe('memory://<file>', () => {
  it('refuses a dump that is not there, instead of starting empty', async () => {
    await expect(openPGlite('memory:///nonexistent/flint-dump.tar')).rejects.toThrow(/ENOENT/);
  });
});

function digest(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}
