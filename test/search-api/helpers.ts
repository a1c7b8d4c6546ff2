import { expect } from 'vitest';
import type { ProjectClient, TestResponse } from '../helpers/server.js';

type Json = any;

/** Creates a resource and returns its id (asserts 201). */
export async function create(client: ProjectClient, resource: Json): Promise<string> {
  const res = await client.post(`/${resource.resourceType}`, resource);
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}

/** The ids of the `match` entries, in order. */
export function matchIds(res: TestResponse<Json>): string[] {
  expect(res.status, res.text).toBe(200);
  return (res.body.entry ?? []).filter((e: Json) => e.search?.mode === 'match').map((e: Json) => e.resource.id as string);
}

/** The `Type/id` of the `include` entries, sorted. */
export function includeRefs(res: TestResponse<Json>): string[] {
  expect(res.status, res.text).toBe(200);
  return (res.body.entry ?? [])
    .filter((e: Json) => e.search?.mode === 'include')
    .map((e: Json) => `${e.resource.resourceType}/${e.resource.id}`)
    .sort();
}

/** Runs a search and returns the matched ids, sorted (for order-free assertions). */
export async function found(client: ProjectClient, query: string): Promise<string[]> {
  return matchIds(await client.get(query)).sort();
}

export function link(res: TestResponse<Json>, relation: string): string | undefined {
  return (res.body.link ?? []).find((l: Json) => l.relation === relation)?.url;
}

/** The path below the FHIR base of an absolute link, for the test client. */
export function pathOf(url: string): string {
  const at = url.indexOf('/fhir/R4');
  return url.slice(at + '/fhir/R4'.length);
}

/** The match ids of every page of a search, following its `next` links from `path`. */
export async function matchesOfEveryPage(client: ProjectClient, path: string): Promise<string[]> {
  const seen: string[] = [];
  let next: string | undefined = path;
  while (next) {
    const page = await client.get(next);
    seen.push(...matchIds(page));
    const url = link(page, 'next');
    next = url ? pathOf(url) : undefined;
  }
  return seen;
}

export function sorted(...ids: string[]): string[] {
  return [...ids].sort();
}

export function expectInvalid(res: TestResponse<Json>, mention: string): void {
  expect(res.status, res.text).toBe(400);
  expect(res.body.resourceType).toBe('OperationOutcome');
  expect(res.body.issue[0].code).toBe('invalid');
  expect(res.body.issue[0].details.text).toContain(mention);
}

/** Creates the resources in parallel batches of 20; their ids in the order given. */
export async function createInBatches(client: ProjectClient, resources: readonly Json[]): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < resources.length; i += 20) ids.push(...(await Promise.all(resources.slice(i, i + 20).map((r: Json) => create(client, r)))));
  return ids;
}

/** The match ids of the pages of `query` by `_offset`, `count` at a time, up to `total` matches. */
export async function matchesByOffset(client: ProjectClient, query: string, count: number, total: number): Promise<string[]> {
  const seen: string[] = [];
  for (let offset = 0; offset < total; offset += count) seen.push(...matchIds(await client.get(`${query}&_count=${count}&_offset=${offset}`)));
  return seen;
}
