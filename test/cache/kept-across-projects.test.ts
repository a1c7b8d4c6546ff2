import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';
import type { InvalidationBus } from '../../src/cache/invalidation.js';
import { RESOURCES_WRITTEN_TOPIC, SearchCache } from '../../src/cache/search-cache.js';

/**
 * Kept exact counts and pages read ahead of one project outlive another project's clone and
 * reindex (src/cache/search-cache.ts): those notices name the projects they wrote, so on a server
 * shared by many projects one project's clone or reindex does not void every project's answers.
 * Seen through the server's metrics: a count answered from what was kept is a hit.
 */

const TOKEN = 'kept-across-projects-token';
// A namespace of its own: no other test server's notices reach it.
const api = await useTestServer({ METRICS_TOKEN: TOKEN, METRICS_PORT: '0', CACHE_NAMESPACE: `kept_${randomUUID().slice(0, 8)}` });

/** A type no other test writes: a reindex of it in every project touches only this file's resources. */
const RARE_TYPE = 'ImmunizationEvaluation';

async function lookups(cache: string): Promise<number> {
  const text = await (await api.raw('/metrics', { headers: { Authorization: `Bearer ${TOKEN}` } })).text();
  const prefix = `flint_cache_lookups_total{cache="${cache}",result="hit"} `;
  const line = text.split('\n').find((l) => l.startsWith(prefix));
  return line ? Number(line.slice(prefix.length)) : 0;
}

/** A project with two Patients whose exact count is kept. */
async function projectWithKeptCount(): Promise<ProjectClient> {
  const client = api.newProject();
  for (let i = 0; i < 2; i++) expect((await client.post('/Patient', patientBody())).status).toBe(201);
  expect((await client.get('/Patient?_summary=count')).body.total).toBe(2);
  return client;
}

/** Whether `client`'s next count of its Patients is answered from what was kept. */
async function countIsKept(client: ProjectClient): Promise<boolean> {
  const before = await lookups('search_count');
  expect((await client.get('/Patient?_summary=count')).body.total).toBe(2);
  return (await lookups('search_count')) === before + 1;
}

async function reindex(...parameter: Record<string, string>[]): Promise<void> {
  const res = await api.superAdmin.post('/$reindex', { resourceType: 'Parameters', parameter });
  expect(res.status, res.text).toBe(200);
}

async function evaluation(client: ProjectClient): Promise<void> {
  const created = await client.post(`/${RARE_TYPE}`, {
    resourceType: RARE_TYPE,
    status: 'completed',
    patient: { reference: 'Patient/x' },
    targetDisease: { text: 'measles' },
    immunizationEvent: { reference: 'Immunization/x' },
    doseStatus: { text: 'valid' },
  });
  expect(created.status, created.text).toBe(201);
}

describe('a count taken right after this server wrote', () => {
  it('is kept: the notice sent to other servers afterwards does not void it here', async () => {
    const kept = await projectWithKeptCount();
    expect(await countIsKept(kept)).toBe(true);
  });
});

describe("one project's clone or reindex and another project's kept answers", () => {
  it("keeps another project's count over a reindex of one type in every project", async () => {
    const other = api.newProject();
    await evaluation(other);
    const kept = await projectWithKeptCount();
    await reindex({ name: 'type', valueCode: RARE_TYPE });
    expect(await countIsKept(kept)).toBe(true);
  });

  it("voids the count of a project whose resources a reindex of every project rebuilt", async () => {
    const kept = await projectWithKeptCount();
    await evaluation(kept);
    await reindex({ name: 'type', valueCode: RARE_TYPE }, { name: 'type', valueCode: 'Patient' });
    expect(await countIsKept(kept)).toBe(false);
  });

  it("keeps another project's count over a reindex of one project", async () => {
    const other = api.newProject();
    expect((await other.post('/Patient', patientBody())).status).toBe(201);
    const kept = await projectWithKeptCount();
    await reindex({ name: 'project', valueString: other.projectId });
    expect(await countIsKept(kept)).toBe(true);
  });

  it("keeps another project's count over a clone", async () => {
    const other = api.newProject();
    expect((await other.post('/Patient', patientBody())).status).toBe(201);
    const kept = await projectWithKeptCount();
    const cloned = await api.superAdmin.post(`/Project/${other.projectId}/$clone`, { name: 'copy' }, { 'Content-Type': 'application/json' });
    expect(cloned.status, cloned.text).toBe(201);
    expect(await countIsKept(kept)).toBe(true);
  });
});

describe('notices of writes in many projects', () => {
  it('go to other servers as notices the bus can send (under 7,900 bytes), naming every project', async () => {
    const sent: string[] = [];
    const bus: InvalidationBus = {
      kind: 'postgres',
      publish: async (topic, key) => void (topic === RESOURCES_WRITTEN_TOPIC && sent.push(key)),
      subscribe: () => undefined,
      hasSubscribers: () => true,
      close: async () => undefined,
    };
    const cache = new SearchCache();
    cache.shareThrough(bus);
    // Ids as long as FHIR allows (64 characters), as a reindex of every project tells them.
    const projects = Array.from({ length: 300 }, (_, i) => `${String(i).padStart(3, '0')}${'p'.repeat(61)}`);
    for (const project of projects) cache.written(project, 'MedicinalProductPharmaceutical');
    await cache.flush();
    expect(Math.max(...sent.map((key) => Buffer.byteLength(JSON.stringify({ o: randomUUID(), t: RESOURCES_WRITTEN_TOPIC, k: key }))))).toBeLessThan(7_900);
    expect(sent.flatMap((key) => key.split(',')).map((pair) => pair.split('/')[0]).sort()).toEqual(projects);
  });
});
