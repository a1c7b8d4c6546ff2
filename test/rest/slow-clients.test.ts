import { connect, type Socket } from 'node:net';
import { getIntrospectionQuery } from 'graphql';
import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer } from '../helpers/server.js';

/**
 * Clients too slow to be served, over a real socket: one that never reads its (large) answer and
 * ones that trickle their request. Each connection must be closed by the server within its limit,
 * while the server keeps answering everyone else.
 */
const api = await useTestServer({ SEND_TIMEOUT_MS: '1000', HEADERS_TIMEOUT_MS: '1000', REQUEST_TIMEOUT_MS: '2000' });

/** Generous: the limits above are 1-2 s; this only keeps a server that never closes from hanging the test. */
const DEADLINE_MS = 20_000;

function open(): Promise<Socket> {
  const { hostname, port } = new URL(api.url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Resolves when the socket is closed, or with false at the deadline. */
function closedWithin(socket: Socket, ms: number, poke?: () => void): Promise<boolean> {
  return new Promise((resolve) => {
    if (socket.destroyed) return resolve(true);
    const timer = setInterval(() => poke?.(), 100);
    const deadline = setTimeout(() => finish(false), ms);
    const finish = (closed: boolean) => {
      clearInterval(timer);
      clearTimeout(deadline);
      resolve(closed);
    };
    socket.once('close', () => finish(true));
    socket.on('error', () => undefined);
  });
}

async function healthy(): Promise<number> {
  return (await api.raw('/healthcheck')).status;
}

describe('a client that never reads its answer', () => {
  it('has its connection closed after SEND_TIMEOUT_MS while the server answers others', async () => {
    const client = api.newProject();
    const body = JSON.stringify({ query: getIntrospectionQuery() });
    const socket = await open();
    socket.pause();
    socket.write(
      [
        'POST /graphql HTTP/1.1',
        `Host: ${new URL(api.url).host}`,
        `Authorization: Bearer ${await client.token()}`,
        'Content-Type: application/json',
        `Content-Length: ${Buffer.byteLength(body)}`,
        '',
        body,
      ].join('\r\n'),
    );

    // The answer (over 10 MB) fills the system's buffers; the server serves others meanwhile.
    expect(await healthy()).toBe(200);
    expect((await client.post('/Patient', patientBody())).status).toBe(201);

    // A socket that does not read learns of the close only when it writes: a few bytes between
    // requests (which HTTP allows) show it.
    const closed = await closedWithin(socket, DEADLINE_MS, () => socket.write('\r\n'));
    socket.destroy();
    expect(closed).toBe(true);
    expect(await healthy()).toBe(200);
  });
});

describe('a client that never reads a large resource it asked for by id', () => {
  it('has its connection closed after SEND_TIMEOUT_MS while the server answers others', async () => {
    const client = api.newProject();
    // About 8 MB of JSON: more than the system's socket buffers take.
    const created = await client.post('/Patient', { resourceType: 'Patient', name: Array.from({ length: 2000 }, () => ({ family: 'x'.repeat(4000) })) });
    expect(created.status).toBe(201);
    const socket = await open();
    socket.pause();
    socket.write(
      [`GET /fhir/R4/Patient/${created.body.id} HTTP/1.1`, `Host: ${new URL(api.url).host}`, `Authorization: Bearer ${await client.token()}`, '', ''].join(
        '\r\n',
      ),
    );

    expect(await healthy()).toBe(200);
    expect((await client.get(`/Patient/${created.body.id}`)).status).toBe(200);

    const closed = await closedWithin(socket, DEADLINE_MS, () => socket.write('\r\n'));
    socket.destroy();
    expect(closed).toBe(true);
    expect(await healthy()).toBe(200);
  });
});

describe('a large answer, written a chunk at a time', () => {
  // Characters of 1 to 4 bytes in UTF-8, so that chunk boundaries fall inside characters and pairs.
  const family = 'aé€😀'.repeat(60_000);

  it.each([
    ['without compression', 'identity'],
    ['compressed', 'gzip'],
  ])('arrives whole, %s', async (_label, encoding) => {
    const client = api.newProject();
    const created = await client.post('/Patient', { resourceType: 'Patient', name: [{ family }] });
    expect(created.status).toBe(201);

    const read = await client.get(`/Patient/${created.body.id}`, { 'Accept-Encoding': encoding });

    expect(read.status).toBe(200);
    expect(read.body.name[0].family).toBe(family);
  });

  it('arrives whole for bytes (Binary)', async () => {
    const client = api.newProject();
    const bytes = Uint8Array.from({ length: 700_000 }, (_, i) => (i * 7) % 256);
    const created = await client.request('POST', '/Binary', bytes, { 'Content-Type': 'application/octet-stream' });
    expect(created.status).toBe(201);

    const res = await api.raw(`/fhir/R4/Binary/${created.body.id}`, { headers: { ...(await client.authHeaders()), Accept: 'application/octet-stream' } });

    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe('700000');
    expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
  });
});

describe('a client that trickles its request', () => {
  it('gets 408 and a closed connection when its headers take longer than HEADERS_TIMEOUT_MS', async () => {
    const socket = await open();
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.write(`GET /healthcheck HTTP/1.1\r\nHost: ${new URL(api.url).host}\r\n`);

    const closed = await closedWithin(socket, DEADLINE_MS, () => socket.write('X-Slow: 1\r\n'));

    expect(closed).toBe(true);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(await healthy()).toBe(200);
  });

  it('gets 408 and a closed connection when its body takes longer than REQUEST_TIMEOUT_MS', async () => {
    const client = api.newProject();
    const socket = await open();
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    socket.write(
      [
        'POST /fhir/R4/Patient HTTP/1.1',
        `Host: ${new URL(api.url).host}`,
        `Authorization: Bearer ${await client.token()}`,
        'Content-Type: application/fhir+json',
        'Content-Length: 1000000',
        '',
        '{"resourceType":"Patient","name":[{"family":"',
      ].join('\r\n'),
    );

    const closed = await closedWithin(socket, DEADLINE_MS, () => socket.write('x'));

    expect(closed).toBe(true);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(await healthy()).toBe(200);
  });
});
