import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { rawGet } from '../helpers/raw-http.js';
import { useTestServer } from '../helpers/server.js';

const api = await useTestServer();

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

const get = (path: string, headers: Record<string, string>) => rawGet(`${api.url}${path}`, headers);

describe('the GraphiQL page', () => {
  it('is HTML with an entity tag and asks to be revalidated', async () => {
    const res = await get('/graphql', { accept: BROWSER_ACCEPT });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers.etag).toMatch(/^"[\w-]+"$/);
    expect(res.body.toString()).toContain('<title>Flint GraphiQL</title>');
  });

  it('answers 304 without a body to a browser that holds it', async () => {
    const first = await get('/graphql', { accept: BROWSER_ACCEPT });
    const again = await get('/graphql', { accept: BROWSER_ACCEPT, 'if-none-match': `W/${first.headers.etag as string}` });
    expect(again.status).toBe(304);
    expect(again.headers.etag).toBe(first.headers.etag);
    expect(again.body.byteLength).toBe(0);
  });

  it('is sent gzip-compressed to a browser that accepts gzip, the same page once decoded', async () => {
    const plain = await get('/fhir/R4/$graphql', { accept: BROWSER_ACCEPT });
    const compressed = await get('/fhir/R4/$graphql', { accept: BROWSER_ACCEPT, 'accept-encoding': 'gzip, deflate, br' });
    expect(compressed.status).toBe(200);
    expect(compressed.headers['content-encoding']).toBe('gzip');
    expect(Number(compressed.headers['content-length'])).toBe(compressed.body.byteLength);
    expect(compressed.body.byteLength).toBeLessThan(plain.body.byteLength / 2);
    expect(gunzipSync(compressed.body).equals(plain.body)).toBe(true);
  });

  it('names the endpoint it was asked at, each with its own entity tag', async () => {
    const system = await get('/graphql', { accept: BROWSER_ACCEPT });
    const fhir = await get('/fhir/R4/$graphql', { accept: BROWSER_ACCEPT });
    expect(fhir.body.toString()).toContain('"endpoint":"/fhir/R4/$graphql"');
    expect(fhir.headers.etag).not.toBe(system.headers.etag);
  });
});
