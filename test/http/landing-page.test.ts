import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';

const api = await useTestServer({ BASE_URL: 'https://fhir.example.org/flint/' });

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

describe('GET /', () => {
  it('answers API clients with JSON naming the server, its version and its endpoints', async () => {
    const res = await api.raw('/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await res.json()).toEqual({
      name: 'Flint',
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      fhirBase: 'https://fhir.example.org/flint/fhir/R4',
      capabilityStatement: 'https://fhir.example.org/flint/fhir/R4/metadata',
      graphql: 'https://fhir.example.org/flint/graphql',
      smartConfiguration: 'https://fhir.example.org/flint/.well-known/smart-configuration',
      healthcheck: 'https://fhir.example.org/flint/healthcheck',
      documentation: 'https://hl7.org/fhir/R4/http.html',
    });
  });

  it('answers a browser with an HTML page linking the FHIR base and GraphQL', async () => {
    const res = await api.raw('/', { headers: { Accept: BROWSER_ACCEPT } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const html = await res.text();
    expect(html).toContain('<h1>Flint <small>');
    expect(html).toContain('<a href="https://fhir.example.org/flint/fhir/R4">');
    expect(html).toContain('<a href="https://fhir.example.org/flint/graphql">');
  });

  it('answers JSON when the client ranks JSON above HTML', async () => {
    const res = await api.raw('/', { headers: { Accept: 'text/html;q=0.5, application/json' } });
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  });

  it('needs no token', async () => {
    const res = await api.raw('/', { headers: { Authorization: 'Bearer not-a-token' } });
    expect(res.status).toBe(200);
  });
});
