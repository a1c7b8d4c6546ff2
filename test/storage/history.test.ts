import { randomUUID } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { createRequestContext } from '../../src/access/context.js';
import { OperationOutcomeError } from '../../src/fhir/outcome.js';
import type { AccessRules, Identity } from '../../src/identity/identity.js';
import type { HistoryOptions, HistoryPage, ResourceRepository } from '../../src/storage/types.js';
import { patientBody, useTestServer } from '../helpers/server.js';

/**
 * History through the guarded repository of a request context (no HTTP): system history, `_at`,
 * cursors and the AccessPolicy's effect on system history. Each test writes in projects of its own.
 */

const api = await useTestServer();

function repoAs(identity: Identity): ResourceRepository {
  return createRequestContext(api.server.services, identity, randomUUID()).repo;
}

/** An admin of a new project, and a function to act in it under an AccessPolicy. */
function newProject(): { projectId: string; repo: ResourceRepository; withPolicy: (rules: AccessRules['resources']) => ResourceRepository } {
  const projectId = randomUUID();
  return {
    projectId,
    repo: repoAs({ projectId, superAdmin: false, projectAdmin: true }),
    withPolicy: (resources) => repoAs({ projectId, superAdmin: false, accessPolicy: { policyId: randomUUID(), resources } }),
  };
}

const observation = { resourceType: 'Observation', status: 'final', code: { text: 'heart rate' } };

/** A distinct millisecond: versions written on either side of it are strictly before or after it. */
async function instantBetweenWrites(): Promise<string> {
  await new Promise((resolve) => setTimeout(resolve, 5));
  const instant = new Date().toISOString();
  await new Promise((resolve) => setTimeout(resolve, 5));
  return instant;
}

const keys = (page: HistoryPage) => page.versions.map((v) => `${v.resourceType}/${v.id}/${v.versionId}`);

async function rejection(promise: Promise<unknown>): Promise<OperationOutcomeError> {
  const error: unknown = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof OperationOutcomeError)) throw new Error(`expected an OperationOutcomeError, got ${String(error)}`);
  return error;
}

describe('system history', () => {
  it('lists every type of the project newest first, and nothing of another project', async () => {
    const mine = newProject();
    const other = newProject();
    const patient = (await mine.repo.createResource('Patient', patientBody())).resource;
    await other.repo.createResource('Patient', patientBody());
    const obs = (await mine.repo.createResource('Observation', observation)).resource;
    await other.repo.createResource('Observation', observation);
    const updated = (await mine.repo.updateResource('Patient', patient.id!, { ...patientBody(), id: patient.id, gender: 'female' })).resource;

    const page = await mine.repo.history(undefined, undefined, { count: 50 });
    expect(keys(page)).toEqual([
      `Patient/${patient.id}/${updated.meta!.versionId}`,
      `Observation/${obs.id}/${obs.meta!.versionId}`,
      `Patient/${patient.id}/${patient.meta!.versionId}`,
    ]);
    expect(page.versions.map((v) => v.first)).toEqual([false, true, true]);
    expect(page.versions.every((v) => v.projectId === mine.projectId)).toBe(true);
    expect(page.hasMore).toBe(false);
    expect(page.nextCursor).toBeUndefined();

    // Naming another project narrows a super admin's history only; anyone else keeps their own.
    const narrowed = await mine.repo.history(undefined, undefined, { count: 50, projectId: other.projectId });
    expect(keys(narrowed)).toEqual(keys(page));
    const superAdmin = repoAs({ projectId: randomUUID(), superAdmin: true });
    const ofOther = await superAdmin.history(undefined, undefined, { count: 50, projectId: other.projectId });
    expect(ofOther.versions.map((v) => [v.resourceType, v.projectId])).toEqual([
      ['Observation', other.projectId],
      ['Patient', other.projectId],
    ]);
  });

  it('pages by offset as before', async () => {
    const { repo } = newProject();
    for (let i = 0; i < 5; i++) await repo.createResource('Patient', patientBody());
    const all = keys(await repo.history(undefined, undefined, { count: 50 }));
    const second = await repo.history(undefined, undefined, { count: 2, offset: 2 });
    expect(keys(second)).toEqual(all.slice(2, 4));
    expect(second.hasMore).toBe(true);
  });
});

describe('_at', () => {
  it('gives each resource its version current at the instant, deletions included', async () => {
    const { repo } = newProject();
    const kept = (await repo.createResource('Patient', patientBody())).resource;
    const gone = (await repo.createResource('Observation', observation)).resource;
    await repo.deleteResource('Observation', gone.id!);
    const at = await instantBetweenWrites();
    await repo.updateResource('Patient', kept.id!, { ...patientBody(), id: kept.id, gender: 'female' });
    await repo.createResource('Patient', patientBody());

    const page = await repo.history(undefined, undefined, { count: 50, at });
    expect(page.versions.map((v) => [v.resourceType, v.id, v.deleted])).toEqual([
      ['Observation', gone.id, true],
      ['Patient', kept.id, false],
    ]);
    expect(page.versions[1].versionId).toBe(kept.meta!.versionId);

    // The same for a type's history and a resource's.
    expect(keys(await repo.history('Patient', undefined, { count: 50, at }))).toEqual([`Patient/${kept.id}/${kept.meta!.versionId}`]);
    expect(keys(await repo.history('Patient', kept.id, { count: 50, at }))).toEqual([`Patient/${kept.id}/${kept.meta!.versionId}`]);
  });

  it('refuses what is not an instant', async () => {
    const { repo } = newProject();
    const error = await rejection(repo.history(undefined, undefined, { count: 10, at: 'yesterday' }));
    expect(error.status).toBe(400);
    expect(error.outcome.issue[0].expression).toEqual(['_at']);
  });
});

describe('cursors', () => {
  it('walk every version exactly once, in order, while new versions are written', async () => {
    const { repo } = newProject();
    for (let i = 0; i < 6; i++) {
      const written = (await repo.createResource(i % 2 ? 'Observation' : 'Patient', i % 2 ? observation : patientBody())).resource;
      if (i % 4 === 0) await repo.updateResource('Patient', written.id!, { ...patientBody(), id: written.id, gender: 'other' });
    }
    const all = keys(await repo.history(undefined, undefined, { count: 50 }));
    expect(all).toHaveLength(8);

    const walked: string[] = [];
    let options: HistoryOptions = { count: 2 };
    for (let pages = 0; ; pages++) {
      expect(pages).toBeLessThan(10);
      const page = await repo.history(undefined, undefined, options);
      walked.push(...keys(page));
      // Versions written mid-walk are newer than any cursor: they do not shift the pages to come.
      if (pages === 0) await repo.createResource('Patient', patientBody());
      if (!page.nextCursor) {
        expect(page.hasMore).toBe(false);
        expect(pages).toBe(3);
        break;
      }
      options = { count: 2, cursor: page.nextCursor };
    }
    expect(walked).toEqual(all);
  });

  it('walk a type history too', async () => {
    const { repo } = newProject();
    for (let i = 0; i < 5; i++) await repo.createResource('Patient', patientBody());
    await repo.createResource('Observation', observation);
    const first = await repo.history('Patient', undefined, { count: 3 });
    const second = await repo.history('Patient', undefined, { count: 3, cursor: first.nextCursor });
    expect([...keys(first), ...keys(second)]).toEqual(keys(await repo.history('Patient', undefined, { count: 50 })));
    expect(second.nextCursor).toBeUndefined();
  });

  it('refuse a malformed cursor with 400', async () => {
    const { repo } = newProject();
    const page = await repo.history(undefined, undefined, { count: 1 });
    expect(page.versions).toEqual([]);
    const forged = [
      'not a cursor',
      Buffer.from('yesterday|abc').toString('base64url'),
      Buffer.from(`2024-01-01T00:00:00.000Z|${randomUUID()}|x`).toString('base64url'),
      `${Buffer.from(`2024-01-01T00:00:00.000Z|${randomUUID()}`).toString('base64url')}!`,
    ];
    for (const cursor of forged) {
      const error = await rejection(repo.history(undefined, undefined, { count: 10, cursor }));
      expect(error.status).toBe(400);
      expect(error.outcome.issue[0].expression).toEqual(['_cursor']);
    }
  });
});

describe('system history under an AccessPolicy', () => {
  it('leaves out the types the policy narrows by criteria or does not allow', async () => {
    const project = newProject();
    await project.repo.createResource('Patient', patientBody());
    const obs = (await project.repo.createResource('Observation', observation)).resource;
    await project.repo.createResource('Encounter', { resourceType: 'Encounter', status: 'finished', class: { code: 'AMB' } });

    const narrowed = project.withPolicy([
      { resourceType: 'Patient', readonly: true, criteria: 'Patient?gender=female' },
      { resourceType: '*', readonly: true },
    ]);
    const page = await narrowed.history(undefined, undefined, { count: 50 });
    // Two writes in one millisecond have no order of their own: the types, not their order.
    expect(page.versions.map((v) => v.resourceType).sort()).toEqual(['Encounter', 'Observation']);
    // A type's own history under criteria is still refused, as before.
    expect((await rejection(narrowed.history('Patient', undefined, { count: 50 }))).status).toBe(403);

    const listed = project.withPolicy([
      { resourceType: 'Observation', readonly: true },
      { resourceType: 'Patient', readonly: true, criteria: 'Patient?gender=female' },
    ]);
    expect(keys(await listed.history(undefined, undefined, { count: 50 }))).toEqual([`Observation/${obs.id}/${obs.meta!.versionId}`]);
  });
});

describe('the order of a resource\'s versions', () => {
  it('lists versions written within one millisecond in the order they were written', async () => {
    const { repo } = newProject();
    const created = (await repo.createResource('Patient', patientBody())).resource;
    const written = [created.meta!.versionId!];
    // The clock stands still: every version is written "in the same millisecond".
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() });
    try {
      for (let i = 0; i < 10; i++) {
        const { resource } = await repo.updateResource('Patient', created.id!, { ...created, birthDate: `2000-01-${String(i + 1).padStart(2, '0')}` });
        written.push(resource.meta!.versionId!);
      }
    } finally {
      vi.useRealTimers();
    }
    const page = await repo.history('Patient', created.id!, { count: 50 });
    expect(page.versions.map((v) => v.versionId)).toEqual(written.reverse());
  });
});
