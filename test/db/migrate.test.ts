import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { Database } from '../../src/db/database.js';
import { migrate, splitStatements } from '../../src/db/migrate.js';
import { testEnv } from '../helpers/server.js';

describe('migrations', () => {
  it('apply once even when two runners start together', async () => {
    // Empty embedded databases (testEnv's start from an already migrated copy); unused on PostgreSQL.
    const config = loadConfig({ ...testEnv(), DATA_DIR: 'memory://' });
    const [a, b] = [await Database.open(config), await Database.open(config)];
    try {
      const results = await Promise.all([migrate(a), migrate(b)]);
      const rows = await a.query<{ name: string }>('SELECT name FROM "_flint_migrations" ORDER BY name');
      expect(new Set(rows.map((r) => r.name)).size).toBe(rows.length);
      expect(rows.map((r) => r.name)).toContain('0001_init');
      if (config.databaseUrl === undefined) {
        // Two in-memory PGlite databases are independent: each applies everything once.
        expect(results[0]).toContain('0001_init');
        expect(results[0]).toEqual(results[1]);
      } else {
        // One shared server: whatever was pending was applied by exactly one of the runners.
        expect(results[0].filter((name) => results[1].includes(name))).toEqual([]);
      }
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('split scripts on statement ends, not on semicolons inside lines', () => {
    expect(splitStatements("-- c\nCREATE TABLE a (x text DEFAULT ';');\nCREATE INDEX b ON a (x);\n")).toEqual([
      "CREATE TABLE a (x text DEFAULT ';')",
      'CREATE INDEX b ON a (x)',
    ]);
  });
});
