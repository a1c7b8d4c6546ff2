import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';

/**
 * Requests Node's HTTP parser refuses before any handler runs get an OperationOutcome too, not a
 * bare status line (src/http/client-errors.ts).
 */
const api = await useTestServer();

/** Sends raw bytes on a new connection; resolves with everything the server sent until it closed. */
function rawExchange(bytes: string): Promise<string> {
  const { hostname, port } = new URL(api.url);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect({ host: hostname, port: Number(port) }, () => socket.write(bytes));
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('error', reject);
  });
}

function outcomeOf(answer: string): { issue: { code: string; details: { text: string } }[]; resourceType: string } {
  return JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
}

describe('requests the HTTP parser refuses', () => {
  it('a search URL above 16 KB: 431 with an OperationOutcome pointing to POST _search', async () => {
    const client = api.newProject();
    const ids = Array.from({ length: 900 }, (_, i) => `patient-identifier-${i}`).join(',');
    const res = await client.get(`/Patient?_id=${ids}`);
    expect(res.status).toBe(431);
    expect(res.headers.get('content-type')).toContain('application/fhir+json');
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(res.body.issue[0].code).toBe('too-long');
    expect(res.body.issue[0].details.text).toContain('POST [type]/_search');
  });

  it('bytes that are not HTTP: 400 with an OperationOutcome, and the server goes on answering', async () => {
    const answer = await rawExchange('HELLO THERE\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    const body = outcomeOf(answer);
    expect(body.resourceType).toBe('OperationOutcome');
    expect(body.issue[0]).toMatchObject({ code: 'structure', details: { text: 'The request is not valid HTTP/1.1' } });
    expect((await api.raw('/healthcheck')).status).toBe(200);
  });
});
