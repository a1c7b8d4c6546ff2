import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sentRequest } from '../helpers/raw-socket.js';
import { patientBody, startTestServer, type ProjectClient, type TestResponse, type TestServer } from '../helpers/server.js';

/**
 * Admission control over real sockets. A request is held in work by a client that has not sent the
 * last byte of its body yet, so the places in work and in the queues are taken exactly when the test
 * says, and the health check (which admission lets through) shows when a request is waiting: the
 * outcomes never depend on timing.
 */

interface Load {
  inWork: number;
  queued: number;
}

async function loadOf(api: TestServer): Promise<Load> {
  const body = (await (await api.raw('/healthcheck')).json()) as { admission: Load };
  return body.admission;
}

/** Waits until `done()` holds (polling). */
async function until(done: () => boolean): Promise<void> {
  for (let attempt = 0; attempt < 600 && !done(); attempt++) await new Promise((resolve) => setTimeout(resolve, 50));
  if (!done()) throw new Error('the awaited condition never held');
}

/** Waits until the server's admission load is `expected` (polling its health check). */
async function untilLoad(api: TestServer, expected: Load): Promise<void> {
  for (let attempt = 0; attempt < 600; attempt++) {
    const load = await loadOf(api);
    if (load.inWork === expected.inWork && load.queued === expected.queued) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the admission load never became ${JSON.stringify(expected)} (last: ${JSON.stringify(await loadOf(api))})`);
}

/** A POST of a Patient whose body lacks its last byte: in work until `finish()`, which resolves with its status. */
async function heldCreate(api: TestServer, client: ProjectClient): Promise<{ finish(): Promise<number> }> {
  const socket = await sentRequest(api, '');
  let answer = '';
  const status = new Promise<number>((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString();
      const match = /^HTTP\/1\.1 (\d{3})/.exec(answer);
      if (match) resolve(Number(match[1]));
    });
  });
  const body = JSON.stringify(patientBody());
  socket.write(
    [
      'POST /fhir/R4/Patient HTTP/1.1',
      `Host: ${new URL(api.url).host}`,
      `Authorization: Bearer ${await client.token()}`,
      'Content-Type: application/fhir+json',
      `Content-Length: ${Buffer.byteLength(body)}`,
      '',
      body.slice(0, -1),
    ].join('\r\n'),
  );
  return {
    async finish() {
      socket.write(body.slice(-1));
      const code = await status;
      socket.destroy();
      return code;
    },
  };
}

/** A project client whose token is verified already (its requests go to its project's lane). */
async function knownClient(api: TestServer): Promise<ProjectClient> {
  const client = api.newProject();
  expect((await client.get('/Patient?_count=1')).status).toBe(200);
  return client;
}

function expectBusy(response: TestResponse, retryAfter: string): void {
  expect(response.status).toBe(503);
  expect(response.headers.get('retry-after')).toBe(retryAfter);
  expect(response.body).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: 'transient' }] });
}

describe('admission control with one place in work and two in the queues', () => {
  let api: TestServer;
  beforeAll(async () => {
    api = await startTestServer({
      ADMISSION_MAX_IN_WORK: '1',
      ADMISSION_MAX_QUEUED: '2',
      ADMISSION_MAX_QUEUED_PER_PROJECT: '2',
      ADMISSION_MAX_WAIT_MS: '120000',
    });
  }, 120_000);
  afterAll(() => api?.server.close());

  it("refuses a project's flood with 503 and Retry-After, serves another project's request, then drains", async () => {
    const flooding = await knownClient(api);
    const other = await knownClient(api);
    const held = await heldCreate(api, flooding);
    await untilLoad(api, { inWork: 1, queued: 0 });

    // Three more of the flooding project: two wait (its lane's bound), the third is refused.
    const answered: TestResponse[] = [];
    const flood = [0, 1, 2].map(() => flooding.get('/Patient?_count=1').then((response) => (answered.push(response), response)));
    await until(() => answered.length === 1);
    expectBusy(answered[0], '120');
    await untilLoad(api, { inWork: 1, queued: 2 });

    // Every queue together is full, but the other project's lane is empty: the flood's newest
    // waiting request gives it its place.
    const served = other.get('/Patient?_count=1');
    await until(() => answered.length === 2);
    expectBusy(answered[1], '120');
    await untilLoad(api, { inWork: 1, queued: 2 });

    expect(await held.finish()).toBe(201);
    expect((await served).status).toBe(200);
    expect((await Promise.all(flood)).map((response) => response.status).sort()).toEqual([200, 503, 503]);
    await untilLoad(api, { inWork: 0, queued: 0 });
    expect((await flooding.get('/Patient?_count=1')).status).toBe(200);
  });

  /** While a create holds the one place, `path` waits in the queue; its client then closes the connection. */
  async function leaveWhileWaiting(client: ProjectClient, path: string): Promise<void> {
    const held = await heldCreate(api, client);
    await untilLoad(api, { inWork: 1, queued: 0 });
    const leaving = await sentRequest(api, `GET /fhir/R4/${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${await client.token()}\r\n\r\n`);
    await untilLoad(api, { inWork: 1, queued: 1 });
    leaving.destroy();
    await untilLoad(api, { inWork: 1, queued: 0 });
    expect(await held.finish()).toBe(201);
  }

  it('takes a waiting search out of its queue when its client closes the connection', async () => {
    await leaveWhileWaiting(await knownClient(api), 'Patient?_count=1');
  });

  it('takes a waiting read by id out of its queue when its client closes the connection', async () => {
    const client = await knownClient(api);
    const { body: patient } = await client.post('/Patient', patientBody());
    await leaveWhileWaiting(client, `Patient/${patient.id}`);
  });

  it('lets health checks through while every place is taken', async () => {
    const client = await knownClient(api);
    const held = await heldCreate(api, client);
    await untilLoad(api, { inWork: 1, queued: 0 });
    expect((await api.raw('/healthcheck')).status).toBe(200);
    expect(await held.finish()).toBe(201);
  });
});

describe('admission control with a short wait', () => {
  let api: TestServer;
  beforeAll(async () => {
    api = await startTestServer({ ADMISSION_MAX_IN_WORK: '1', ADMISSION_MAX_WAIT_MS: '200' });
  }, 120_000);
  afterAll(() => api?.server.close());

  it('refuses a request that waited ADMISSION_MAX_WAIT_MS for its turn, and serves the next one once a place is free', async () => {
    const holder = await knownClient(api);
    const waiting = await knownClient(api);
    const held = await heldCreate(api, holder);
    await untilLoad(api, { inWork: 1, queued: 0 });
    expectBusy(await waiting.get('/Patient?_count=1'), '1');
    expect(await held.finish()).toBe(201);
    expect((await waiting.get('/Patient?_count=1')).status).toBe(200);
  });
});
