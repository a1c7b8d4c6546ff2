import { describe, expect, it } from 'vitest';
import { projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';
import { addMemberClient } from './helpers.js';

/**
 * Reads under AccessPolicy criteria while the resource flips in and out of them. A read answers
 * the version its criteria were judged on: never one outside them because the version written
 * just after it is within them. The race needs a write committed between the read's statements,
 * so each test races many reads against many writes and counts the answers seen.
 */
const api = await useTestServer();

const WRITES = 120;
const READERS = 4;

const observation = (id: string, status: string) => ({ resourceType: 'Observation', id, status, code: { text: 'x' } });

/** An admin, a member who may read final Observations only, and an Observation that starts preliminary. */
async function finalOnlyMember(): Promise<{ admin: ProjectClient; member: ProjectClient; id: string }> {
  const admin = api.newProject();
  const policy = await admin.post('/AccessPolicy', {
    resourceType: 'AccessPolicy',
    name: 'final only',
    resource: [{ resourceType: 'Observation', criteria: 'Observation?status=final' }],
  });
  const added = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy.body.id}` });
  const member = projectClient(api.fhir, admin.projectId, async () => added.token);
  const created = await admin.post('/Observation', { resourceType: 'Observation', status: 'preliminary', code: { text: 'x' } });
  return { admin, member, id: created.body.id };
}

/** Flips the Observation between preliminary and final WRITES times while `read` runs in READERS loops; the statuses each read saw. */
async function statusesSeenWhileFlipping(admin: ProjectClient, id: string, read: () => Promise<string | undefined>): Promise<string[]> {
  let writing = true;
  const seen: string[] = [];
  const readers = Array.from({ length: READERS }, async () => {
    while (writing) {
      const status = await read();
      if (status !== undefined) seen.push(status);
    }
  });
  try {
    for (let i = 0; i < WRITES; i++) {
      const written = await admin.put(`/Observation/${id}`, observation(id, i % 2 === 0 ? 'final' : 'preliminary'));
      expect(written.status).toBe(200);
    }
  } finally {
    writing = false;
    await Promise.all(readers);
  }
  return seen;
}

describe('reads under criteria while the resource changes', () => {
  it('answer a read by id only with a version within the criteria', async () => {
    const { admin, member, id } = await finalOnlyMember();
    const seen = await statusesSeenWhileFlipping(admin, id, async () => {
      const res = await member.get(`/Observation/${id}`);
      if (res.status !== 404) expect(res.status).toBe(200);
      return res.status === 200 ? (res.body.status as string) : undefined;
    });
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.filter((status) => status !== 'final')).toEqual([]);
  });

  it('answer a batch read only with versions within the criteria', async () => {
    const { admin, member, id } = await finalOnlyMember();
    const seen = await statusesSeenWhileFlipping(admin, id, async () => {
      // Two reads: a batch reads its plain reads together.
      const read = { request: { method: 'GET', url: `Observation/${id}` } };
      const res = await member.post('', { resourceType: 'Bundle', type: 'batch', entry: [read, read] });
      expect(res.status).toBe(200);
      const entry = res.body.entry[0];
      return entry.response.status.startsWith('200') ? (entry.resource.status as string) : undefined;
    });
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.filter((status) => status !== 'final')).toEqual([]);
  });
});
