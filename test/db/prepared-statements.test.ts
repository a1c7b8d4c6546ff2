import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { preparingClient, StatementNames } from '../../src/db/prepared-statements.js';
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

  describe('a search driven by a key', async () => {
    const api = await useTestServer({ DATABASE_POOL_SIZE: '1' });

    /** Plan counts of the prepared statements on the connections of `planOnce` or not that `which` picks. */
    async function plansWhere(which: (statement: string) => boolean, planOnce: boolean): Promise<{ generic: number; custom: number }[]> {
      const rows = await api.server.services.db.query<{ statement: string; generic_plans: unknown; custom_plans: unknown }>(
        'SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements',
        [],
        { planOnce },
      );
      return rows.filter((row) => which(row.statement)).map((row) => ({ generic: Number(row.generic_plans), custom: Number(row.custom_plans) }));
    }

    /** Plan counts of the prepared reads (not writes) that read `table` and not `not`. */
    function plansOf(table: string, not: string, planOnce: boolean): Promise<{ generic: number; custom: number }[]> {
      return plansWhere((statement) => statement.includes(table) && !statement.includes(not) && !statement.includes('INSERT INTO'), planOnce);
    }

    async function observationsOfOnePatient(): Promise<{ client: ReturnType<TestServer['newProject']>; patientId: string }> {
      const client = api.newProject();
      const patient = await client.post('/Patient', { resourceType: 'Patient' });
      const code = { coding: [{ system: 'http://loinc.org', code: '8867-4' }] };
      for (let i = 0; i < 2; i++) {
        await client.post('/Observation', { resourceType: 'Observation', status: 'final', code, subject: { reference: `Patient/${patient.body.id}` } });
      }
      return { client, patientId: patient.body.id };
    }

    it('is planned once per connection (a generic plan), and answers as before', async () => {
      const { client, patientId } = await observationsOfOnePatient();
      for (let i = 0; i < 8; i++) {
        const page = await client.get(`/Observation?subject=Patient/${patientId}&code=http://loinc.org|8867-4`);
        expect(page.body.entry).toHaveLength(2);
      }
      const plans = await plansOf('reference_index', 'pg_prepared_statements', true);
      expect(plans.length).toBeGreaterThan(0);
      expect(plans.every((p) => p.custom === 0)).toBe(true);
    });

    it('leaves a search without a key planned for its values every time', async () => {
      const { client } = await observationsOfOnePatient();
      // The creates' own reads (the project's active Subscriptions, a key-driven search) came before.
      const keyDrivenBefore = await plansOf('token_index', 'reference_index', true);
      for (let i = 0; i < 8; i++) await client.get('/Observation?code=http://loinc.org|8867-4&status=final');
      const plans = await plansOf('token_index', 'reference_index', false);
      expect(plans.length).toBeGreaterThan(0);
      expect(plans.every((p) => p.generic === 0)).toBe(true);
      expect(await plansOf('token_index', 'reference_index', true)).toEqual(keyDrivenBefore);
    });

    it('plans the one statement of a create once per connection, and stores what was sent', async () => {
      const client = api.newProject();
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) ids.push((await client.post('/Patient', { resourceType: 'Patient', name: [{ family: `Once${i}` }] })).body.id);
      const plans = await plansWhere((statement) => statement.includes('INSERT INTO resource '), true);
      expect(plans.length).toBeGreaterThan(0);
      expect(plans.every((p) => p.custom === 0)).toBe(true);
      expect((await client.get(`/Patient/${ids[7]}`)).body.name).toEqual([{ family: 'Once7' }]);
      expect((await client.get('/Patient?family=Once3')).body.entry.map((e: { resource: { id: string } }) => e.resource.id)).toEqual([ids[3]]);
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

describe.skipIf(!process.env.DATABASE_URL)('rows of a named statement', () => {
  it('reads every execution with its own values and columns, each column as its type', async () => {
    const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 1, Client: preparingClient(new StatementNames(), 10) });
    try {
      const text = 'SELECT $1::int AS n, $2::text AS t, $3::boolean AS b, $4::timestamptz AS at, NULL::text AS nothing';
      const other = 'SELECT $1::text AS n, $1::int + 1 AS later';
      const answers = [];
      for (let i = 0; i < 4; i++) {
        const result = await pool.query({ text, values: [i, `text ${i}`, i % 2 === 0, `2026-01-0${i + 1}T00:00:00Z`] });
        answers.push({ fields: result.fields.map((field) => field.name), rows: result.rows });
        const second = await pool.query({ text: other, values: [String(i)] });
        answers.push({ fields: second.fields.map((field) => field.name), rows: second.rows });
      }
      expect(answers).toEqual(
        [0, 1, 2, 3].flatMap((i) => [
          { fields: ['n', 't', 'b', 'at', 'nothing'], rows: [{ n: i, t: `text ${i}`, b: i % 2 === 0, at: new Date(`2026-01-0${i + 1}T00:00:00Z`), nothing: null }] },
          { fields: ['n', 'later'], rows: [{ n: String(i), later: i + 1 }] },
        ]),
      );
      const named = await pool.query<{ name: string }>('SELECT name FROM pg_prepared_statements WHERE statement IN ($1, $2)', [text, other]);
      expect(named.rows.map((row) => row.name)).toEqual([expect.stringMatching(/^flint_\d+$/), expect.stringMatching(/^flint_\d+$/)]);
    } finally {
      await pool.end();
    }
  });
});
