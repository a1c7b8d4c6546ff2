import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Identity } from '../../src/identity/identity.js';
import { openPlanDatabase, writeObservations, writeSubjects, type PlanDatabase } from '../helpers/plan-database.js';

const serverUrl = process.env.DATABASE_URL;
const PROJECT = 'jit-plans';
const OBSERVATIONS = 2000;
const PATIENTS = 200;

/** A member whose AccessPolicy narrows both types, so that chains and `_has` test criteria on what they look into. */
const member: Identity = {
  projectId: PROJECT,
  superAdmin: false,
  accessPolicy: {
    policyId: 'jit-plans',
    resources: [
      { resourceType: 'Patient', readonly: true, criteria: 'Patient?name=smith' },
      { resourceType: 'Observation', readonly: true, criteria: 'Observation?status=final' },
    ],
  },
};

/**
 * On tables never analyzed, the planner's estimates (and the plan-once pool's penalties) priced
 * statements that read a few hundred rows past jit_above_cost, and PostgreSQL compiled them at
 * every execution: tens of milliseconds for a page of a member's chained search among 1,000,000
 * Observations. The threshold is set to 0 here (any estimate passes it): the connections' settings
 * (src/db/database.ts planSettings) must keep every statement uncompiled whatever the estimates.
 */
describe.skipIf(!serverUrl)('JIT compilation of searches, on data never analyzed', () => {
  let db: PlanDatabase;

  beforeAll(async () => {
    db = await openPlanDatabase('flint_jit_plans');
    await writeObservations(db.custom, PROJECT, OBSERVATIONS);
    await writeSubjects(db.custom, PROJECT, OBSERVATIONS, PATIENTS, '');
    // Every statement past the threshold, as estimates without statistics put some: the connections' own settings must keep JIT off.
    for (const client of [db.custom, db.generic]) await client.query('SET jit_above_cost = 0');
  }, 60_000);

  afterAll(async () => {
    await db?.close();
  });

  it('no statement of a chained search by a member with AccessPolicy criteria is compiled', async () => {
    const answer = await db.explain(member, 'Observation', 'subject:Patient.name=smith42');
    expect(answer.ids.length).toBeGreaterThan(0);
    expect(answer.statements.filter(({ jit }) => jit).map(({ sql }) => sql)).toEqual([]);
  });

  it('no statement of a _has search by a member with AccessPolicy criteria is compiled', async () => {
    const answer = await db.explain(member, 'Patient', '_has:Observation:subject:code=http://loinc.org|8867-4&name=smith42');
    expect(answer.statements.filter(({ jit }) => jit).map(({ sql }) => sql)).toEqual([]);
  });
});
