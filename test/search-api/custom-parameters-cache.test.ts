import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { SqlExecutor } from '../../src/db/database.js';
import { PARAMETERS_TTL_MS, projectParameters, searchParametersChanged } from '../../src/indexing/parameters.js';

/**
 * The per-process cache of a project's SearchParameters: with several servers on one database, a
 * server picks up another server's change once the entry is older than PARAMETERS_TTL_MS, and its
 * own changes at once. The database is a stand-in that counts the reads.
 */

afterEach(() => vi.restoreAllMocks());

function definition(code: string, expression: string) {
  return {
    resourceType: 'SearchParameter',
    id: `sp-${code}`,
    url: `http://example.org/${code}`,
    name: code,
    status: 'active',
    description: code,
    code,
    base: ['Patient'],
    type: 'token',
    expression,
  };
}

/** A database holding one project's stored SearchParameters, which the test changes as another server would. */
function storedDefinitions(initial: ReturnType<typeof definition>[]) {
  let rows = initial.map((sp) => ({ id: sp.id, versionId: randomUUID(), content: JSON.stringify(sp) }));
  const db: SqlExecutor & { reads: number } = {
    reads: 0,
    async query<R>() {
      db.reads++;
      return rows as R[];
    },
    async execute() {
      return 0;
    },
  };
  const replace = (next: ReturnType<typeof definition>[]) => {
    rows = next.map((sp) => ({ id: sp.id, versionId: randomUUID(), content: JSON.stringify(sp) }));
  };
  return { db, replace };
}

function frozenClock(): { advance(ms: number): void } {
  let now = Date.now();
  vi.spyOn(Date, 'now').mockImplementation(() => now);
  return { advance: (ms) => (now += ms) };
}

describe('project SearchParameter cache', () => {
  it('reads a project once while its entry is fresh', async () => {
    frozenClock();
    const project = randomUUID();
    const { db } = storedDefinitions([definition('eye', 'Patient.gender')]);
    expect((await projectParameters(db, project)).find('Patient', 'eye')?.expression).toBe('Patient.gender');
    await projectParameters(db, project);
    expect(db.reads).toBe(1);
  });

  it("sees another server's change once the entry is older than the time bound", async () => {
    const clock = frozenClock();
    const project = randomUUID();
    const { db, replace } = storedDefinitions([definition('eye', 'Patient.gender')]);
    await projectParameters(db, project);
    replace([definition('eye', 'Patient.birthDate')]);
    clock.advance(PARAMETERS_TTL_MS - 1);
    expect((await projectParameters(db, project)).find('Patient', 'eye')?.expression).toBe('Patient.gender');
    clock.advance(2);
    expect((await projectParameters(db, project)).find('Patient', 'eye')?.expression).toBe('Patient.birthDate');
  });

  it('sees a change made through this server at once', async () => {
    frozenClock();
    const project = randomUUID();
    const { db, replace } = storedDefinitions([]);
    expect((await projectParameters(db, project)).find('Patient', 'eye')).toBeUndefined();
    replace([definition('eye', 'Patient.gender')]);
    searchParametersChanged(project);
    expect((await projectParameters(db, project)).find('Patient', 'eye')).toBeDefined();
  });

  it('keeps the compiled definitions when a reload finds the same versions', async () => {
    const clock = frozenClock();
    const project = randomUUID();
    const { db } = storedDefinitions([definition('eye', 'Patient.gender')]);
    const first = await projectParameters(db, project);
    clock.advance(PARAMETERS_TTL_MS + 1);
    expect(await projectParameters(db, project)).toBe(first);
    expect(db.reads).toBe(2);
  });
});
