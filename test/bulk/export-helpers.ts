import { expect } from 'vitest';
import type { ExportPosition } from '../../src/bulk/export-files.js';
import type { Identity } from '../../src/identity/identity.js';
import { enqueueJob } from '../../src/operations/jobs/queue.js';
import { jobQueued } from '../../src/operations/jobs/worker.js';
import type { ProjectClient, TestResponse, TestServer } from '../helpers/server.js';

/** What the bulk export tests share: kick-off, polling the status URL, reading the files. */

export type Json = any;

export const ASYNC = { Prefer: 'respond-async' };
export const BASE = 'http://localhost/fhir/R4';

export async function create(client: ProjectClient, resource: Json): Promise<Json> {
  const res = await client.post(`/${resource.resourceType}`, resource);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

/** The status URL path of a kick-off's 202 answer. */
export function statusPath(res: TestResponse<Json>): string {
  expect(res.status, res.text).toBe(202);
  const location = res.headers.get('content-location');
  expect(location).toMatch(/^http:\/\/localhost\/fhir\/R4\/\$export-status\/[0-9a-f-]{36}$/);
  return location!.slice(BASE.length);
}

/** Polls the status URL until it answers anything but 202; fails after 30 s. */
export async function poll(client: ProjectClient, path: string): Promise<TestResponse<Json>> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await client.get(path);
    if (res.status !== 202) return res;
    if (Date.now() > deadline) throw new Error(`export still running: ${res.headers.get('x-progress')}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The manifest of a finished kick-off (its 202 answer). */
export async function manifestOf(client: ProjectClient, kickOff: TestResponse<Json>): Promise<Json> {
  const res = await poll(client, statusPath(kickOff));
  expect(res.status, res.text).toBe(200);
  return res.body;
}

export async function exportDone(client: ProjectClient, query = ''): Promise<{ status: string; manifest: Json; manifestType: string | null }> {
  const status = statusPath(await client.get(`/$export${query}`, ASYNC));
  const res = await poll(client, status);
  expect(res.status, res.text).toBe(200);
  return { status, manifest: res.body, manifestType: res.headers.get('content-type') };
}

/** Every line of every file of the manifest, parsed, with the file's type. */
export async function exportedLines(client: ProjectClient, manifest: Json): Promise<{ type: string; resource: Json }[]> {
  const lines: { type: string; resource: Json }[] = [];
  for (const output of manifest.output) {
    const res = await client.get(output.url.slice(BASE.length));
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/fhir+ndjson');
    const text = res.text.split('\n');
    expect(text.pop()).toBe('');
    expect(text.length).toBe(output.count);
    for (const line of text) lines.push({ type: output.type, resource: JSON.parse(line) });
  }
  return lines;
}

/** `Type/id` of each line, sorted. */
export const idsOf = (lines: { resource: Json }[]): string[] => lines.map(({ resource }) => `${resource.resourceType}/${resource.id}`).sort();

/**
 * An export whose job no server runs before an hour has passed: queued as the kick-off leaves it,
 * but due later, in one transaction (no server can claim it in between); as a project admin
 * unless `identity` is given.
 */
export async function queuedExport(api: TestServer, client: ProjectClient, input: Json = {}, identity?: Omit<Identity, 'scopes'>): Promise<string> {
  const projectId = client.projectId;
  await client.token();
  const { db, auth } = api.server.services;
  const created = await auth.repo(projectId).createResource('AsyncJob', { resourceType: 'AsyncJob', status: 'accepted', requestTime: new Date().toISOString(), request: `${BASE}/$export` });
  const id = created.resource.id!;
  await db.transaction(async (tx) => {
    const starter = identity ?? { projectId, superAdmin: false, projectAdmin: true };
    await enqueueJob(tx, api.server.services.config.jobs.queue, { id, projectId, operation: 'export', level: 'system', input, identity: starter, requestUrl: `${BASE}/$export` });
    await tx.execute(`UPDATE job SET "runAfter" = now() + interval '1 hour' WHERE id = $1`, [id]);
  });
  return `/$export-status/${id}`;
}

/** Lets a queued export run now, from `position`: as a run that took it and stopped there would resume. */
export async function runFrom(api: TestServer, status: string, position: ExportPosition): Promise<void> {
  const { db } = api.server.services;
  await db.execute(`UPDATE job SET checkpoint = $2::json, "runAfter" = now() WHERE id = $1`, [status.split('/').pop(), JSON.stringify(position)]);
  jobQueued(db);
}
