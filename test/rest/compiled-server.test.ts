import { execFileSync, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deployedBot, execute } from '../bots/helpers.js';
import { patientBody, startServerProcess, superAdminClient, type ProjectClient } from '../helpers/server.js';

/**
 * `npm start` compiles src/ to dist/ (scripts/build-dist.mjs) and runs the JavaScript: the
 * compiled server finds what it reads from beside its own modules (migrations, GraphQL schema,
 * operation definitions, the embedded database's worker, the bot sandbox's sources).
 */
describe('the compiled server (npm start)', { timeout: 180_000 }, () => {
  let child: ChildProcess | undefined;
  let client: ProjectClient;
  let url: string;

  beforeAll(async () => {
    execFileSync(process.execPath, ['scripts/build-dist.mjs'], { stdio: 'pipe' });
    // A first Bot run builds the sandbox's runtime: slow on a busy machine, not what is tested here.
    const started = await startServerProcess({ BOT_TIMEOUT_MS: '120000' }, ['dist/main.js']);
    child = started.child;
    url = started.url;
    client = superAdminClient(url);
  }, 180_000);

  afterAll(() => {
    child?.kill('SIGKILL');
  });

  it('creates and reads a resource', async () => {
    const created = await client.post('/Patient', patientBody());
    expect(created.status).toBe(201);
    const read = await client.get(`/Patient/${created.body.id}`);
    expect(read.status).toBe(200);
    expect(read.headers.get('etag')).toBe(`W/"${created.body.meta.versionId}"`);
    expect(read.body).toEqual(created.body);
  });

  it('answers GraphQL from its schema files', async () => {
    const created = await client.post('/Patient', patientBody());
    const answer = await client.post('/$graphql', { query: `{ Patient(id: "${created.body.id}") { id } }` }, { 'Content-Type': 'application/json' });
    expect(answer.status).toBe(200);
    expect(answer.body.data.Patient.id).toBe(created.body.id);
  });

  it('runs a Bot in its sandbox', async () => {
    const id = await deployedBot(client, 'exports.handler = async (medplum, event) => ({ doubled: event.input.n * 2 });');
    const answer = await execute(client, id, { n: 21 });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toEqual({ doubled: 42 });
  });
});
