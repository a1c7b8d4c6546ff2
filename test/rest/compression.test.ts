import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { gunzipSync, inflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';

/** Response compression (src/http/app.ts, responseCompression), read with node:http so nothing decodes the body first. */
const api = await useTestServer();

interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  bytes: Buffer;
}

async function rawRequest(client: ProjectClient, method: string, path: string, headers: Record<string, string>, body?: string): Promise<RawAnswer> {
  const url = new URL(`${api.fhir}${path}`);
  const auth = await client.authHeaders();
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: { ...auth, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A project with enough Patients that a search for them is well over 1 KB. */
async function projectWithPatients(): Promise<ProjectClient> {
  const p = api.newProject();
  for (let i = 0; i < 10; i++) {
    const res = await p.post('/Patient', { resourceType: 'Patient', name: [{ family: `Family${i}`, given: ['Given'] }], birthDate: '1980-01-01' });
    expect(res.status).toBe(201);
  }
  return p;
}

describe('response compression', () => {
  it('gzips a large answer for a client that accepts gzip', async () => {
    const p = await projectWithPatients();
    const res = await rawRequest(p, 'GET', '/Patient?_count=10', { 'accept-encoding': 'gzip' });
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(res.headers.vary).toMatch(/accept-encoding/i);
    const bundle = JSON.parse(gunzipSync(res.bytes).toString('utf8'));
    expect(bundle.resourceType).toBe('Bundle');
    expect(bundle.entry).toHaveLength(10);
  });

  it('sends a compressed answer with its compressed length, not chunked', async () => {
    const p = await projectWithPatients();
    const res = await rawRequest(p, 'GET', '/Patient?_count=10', { 'accept-encoding': 'gzip' });
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(res.headers['transfer-encoding']).toBeUndefined();
    expect(Number(res.headers['content-length'])).toBe(res.bytes.byteLength);
  });

  it('sends a compressed answer of several send chunks (over 256 KB) whole, with its length', async () => {
    const p = api.newProject();
    // Random text compresses to about three quarters: ten of these are over 256 KB gzipped.
    const texts = Array.from({ length: 10 }, () => randomBytes(30_000).toString('base64'));
    for (const text of texts) {
      const res = await p.post('/Patient', { resourceType: 'Patient', name: [{ text }] });
      expect(res.status).toBe(201);
    }
    const res = await rawRequest(p, 'GET', '/Patient?_count=10', { 'accept-encoding': 'gzip' });
    expect(res.status).toBe(200);
    expect(res.bytes.byteLength).toBeGreaterThan(256 * 1024);
    expect(Number(res.headers['content-length'])).toBe(res.bytes.byteLength);
    const bundle = JSON.parse(gunzipSync(res.bytes).toString('utf8'));
    expect(bundle.entry.map((e: { resource: { name: { text: string }[] } }) => e.resource.name[0].text).sort()).toEqual([...texts].sort());
  });

  it('uses deflate when that is what the client accepts', async () => {
    const p = await projectWithPatients();
    const res = await rawRequest(p, 'GET', '/Patient?_count=10', { 'accept-encoding': 'deflate' });
    expect(res.headers['content-encoding']).toBe('deflate');
    expect(JSON.parse(inflateSync(res.bytes).toString('utf8')).entry).toHaveLength(10);
  });

  it('sends the body as it is to a client that does not ask for compression', async () => {
    const p = await projectWithPatients();
    const res = await rawRequest(p, 'GET', '/Patient?_count=10', {});
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(res.bytes.toString('utf8')).entry).toHaveLength(10);
  });

  it('leaves answers under 1 KB uncompressed', async () => {
    const p = api.newProject();
    const created = await p.post('/Patient', { resourceType: 'Patient', gender: 'female' });
    const res = await rawRequest(p, 'GET', `/Patient/${created.body.id}`, { 'accept-encoding': 'gzip' });
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(JSON.parse(res.bytes.toString('utf8')).id).toBe(created.body.id);
  });

  it('gzips a large GraphQL answer', async () => {
    const p = await projectWithPatients();
    const query = JSON.stringify({ query: '{ PatientList(_count: 10) { id name { family given } birthDate } }' });
    const res = await rawRequest(p, 'POST', '/$graphql', { 'accept-encoding': 'gzip', 'content-type': 'application/json' }, query);
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBe('gzip');
    const answer = JSON.parse(gunzipSync(res.bytes).toString('utf8'));
    expect(answer.data.PatientList).toHaveLength(10);
  });
});
