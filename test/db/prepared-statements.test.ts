import { describe, expect, it } from 'vitest';
import { StatementNames } from '../../src/db/prepared-statements.js';
import { useTestServer, type TestServer } from '../helpers/server.js';

describe('statement names', () => {
  it('names a statement text at its second use, and keeps that name', () => {
    const names = new StatementNames();
    expect(names.nameFor('SELECT $1')).toBeUndefined();
    const name = names.nameFor('SELECT $1');
    expect(name).toMatch(/^flint_\d+$/);
    expect(names.nameFor('SELECT $1')).toBe(name);
  });

  it('gives different texts different names', () => {
    const names = new StatementNames();
    for (const text of ['SELECT $1', 'SELECT $2', 'SELECT $1', 'SELECT $2']) names.nameFor(text);
    expect(names.nameFor('SELECT $1')).not.toBe(names.nameFor('SELECT $2'));
  });
});

/** The statements prepared on the server's (single) connection, read through that connection. */
async function preparedOnServer(api: TestServer): Promise<string[]> {
  const rows = await api.server.services.db.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements');
  return rows.map((row) => row.statement);
}

async function searchThreeTimes(api: TestServer): Promise<unknown[]> {
  const client = api.newProject();
  await client.post('/Patient', { resourceType: 'Patient', name: [{ family: 'Prepared' }] });
  const bodies = [];
  for (let i = 0; i < 3; i++) bodies.push((await client.get('/Patient?name=prep')).body.entry?.map((e: { resource: { id: string } }) => e.resource.id));
  return bodies;
}

describe.skipIf(!process.env.DATABASE_URL)('prepared statements on PostgreSQL', async () => {
  describe('by default', async () => {
    const api = await useTestServer({ DATABASE_POOL_SIZE: '1' });

    it('a repeated search is prepared on the connection and answers as before', async () => {
      const [first, second, third] = await searchThreeTimes(api);
      expect(first).toHaveLength(1);
      expect(second).toEqual(first);
      expect(third).toEqual(first);
      expect((await preparedOnServer(api)).some((sql) => sql.includes('string_index'))).toBe(true);
    });

    it('plans every execution for its own values, never with a generic plan', async () => {
      const [setting] = await api.server.services.db.query<{ mode: string }>("SELECT current_setting('plan_cache_mode') AS mode");
      expect(setting.mode).toBe('force_custom_plan');
    });
  });

  describe('with DATABASE_PREPARED_STATEMENTS=1', async () => {
    const api = await useTestServer({ DATABASE_POOL_SIZE: '1', DATABASE_PREPARED_STATEMENTS: '1' });

    it('prepares at most one statement per connection', async () => {
      const [first, , third] = await searchThreeTimes(api);
      expect(third).toEqual(first);
      expect(await preparedOnServer(api)).toHaveLength(1);
    });
  });

  describe('with DATABASE_PREPARED_STATEMENTS=0', async () => {
    const api = await useTestServer({ DATABASE_POOL_SIZE: '1', DATABASE_PREPARED_STATEMENTS: '0' });

    it('prepares nothing', async () => {
      const [first, , third] = await searchThreeTimes(api);
      expect(third).toEqual(first);
      expect(await preparedOnServer(api)).toEqual([]);
    });
  });
});
