import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, expect, inject } from 'vitest';
import { createProject } from '../../src/auth/account-writes.js';
import { loadConfig } from '../../src/config.js';
import { startServer, type RunningServer } from '../../src/server.js';

/**
 * Tests talk to a real server over HTTP. It runs on PostgreSQL when DATABASE_URL is set, on an
 * in-memory PGlite otherwise. Each `newProject()` client works in a project of its own, with a
 * real admin ClientApplication and a real bearer token obtained on its first request.
 */

/** The super-admin client every test server is started with (testEnv). */
export const TEST_SUPER_ADMIN = {
  email: 'admin@example.com',
  password: 'test-super-admin-password',
  clientId: 'test-super-admin',
  clientSecret: 'test-super-admin-secret',
} as const;

/** Gets an access token by client credentials (`POST /oauth2/token`). */
export async function clientCredentialsToken(baseUrl: string, clientId: string, clientSecret: string): Promise<string> {
  const res = await fetch(`${baseUrl}/oauth2/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }),
  });
  const body = (await res.json()) as { access_token?: string };
  if (res.status !== 200 || !body.access_token) throw new Error(`token request failed: ${res.status} ${JSON.stringify(body)}`);
  return body.access_token;
}

/** A memoised token source: the first call fetches, later calls share the promise. */
export function lazyToken(fetchToken: () => Promise<string>): () => Promise<string> {
  let token: Promise<string> | undefined;
  return () => (token ??= fetchToken());
}

export interface TestResponse<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface ProjectClient {
  readonly projectId: string;
  /** The client's bearer token (created with the project on first use). */
  token(): Promise<string>;
  /** `{ Authorization: 'Bearer ...' }`, for raw fetch calls. */
  authHeaders(): Promise<Record<string, string>>;
  request<T = any>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<TestResponse<T>>;
  get<T = any>(path: string, headers?: Record<string, string>): Promise<TestResponse<T>>;
  post<T = any>(path: string, body: unknown, headers?: Record<string, string>): Promise<TestResponse<T>>;
  put<T = any>(path: string, body: unknown, headers?: Record<string, string>): Promise<TestResponse<T>>;
  patch<T = any>(path: string, body: unknown, headers?: Record<string, string>): Promise<TestResponse<T>>;
  delete<T = any>(path: string, headers?: Record<string, string>): Promise<TestResponse<T>>;
}

export interface TestServer {
  readonly url: string;
  readonly fhir: string;
  readonly server: RunningServer;
  /** A client acting in a brand-new project, as its admin ClientApplication. */
  newProject(): ProjectClient;
  /** A client acting as the super admin ClientApplication (sees every project). */
  readonly superAdmin: ProjectClient;
  /** Credentials of a newProject() client: its project's default ClientApplication. */
  credentialsOf(client: ProjectClient): Promise<{ clientId: string; clientSecret: string }>;
  /** Unauthenticated fetch of `${url}${path}` (add `await client.authHeaders()` for FHIR routes). */
  raw(path: string, init?: RequestInit): Promise<Response>;
}

export function testEnv(overrides: Record<string, string> = {}): Record<string, string | undefined> {
  return {
    PORT: '0',
    // Vite sets BASE_URL=/ in the test process; Flint needs an absolute URL.
    BASE_URL: 'http://localhost/',
    DATABASE_URL: process.env.DATABASE_URL,
    DATA_DIR: memoryDataDir(),
    LOG_LEVEL: 'silent',
    DATABASE_POOL_SIZE: '4',
    SUPER_ADMIN_EMAIL: TEST_SUPER_ADMIN.email,
    SUPER_ADMIN_PASSWORD: TEST_SUPER_ADMIN.password,
    SUPER_ADMIN_CLIENT_ID: TEST_SUPER_ADMIN.clientId,
    SUPER_ADMIN_CLIENT_SECRET: TEST_SUPER_ADMIN.clientSecret,
    // Cache notices of this server only: test servers share one database (and Redis), and one
    // server's failed logins must not throttle another server. Servers meant to hear each other
    // pass the same CACHE_NAMESPACE.
    CACHE_NAMESPACE: `test_${randomUUID().replace(/-/g, '').slice(0, 12)}`,
    // Abandoned AsyncJobs are swept at start, then only every 5 minutes: a server serves many test
    // files (useTestServer), and a sweep in the middle of a test would add to the statements it
    // counts. The recovery tests set their own (test/operations/async-job-recovery.test.ts).
    ASYNC_JOB_STALE_MS: '600000',
    // Likewise the job queue's polls: a job queued in this process is claimed at once all the same
    // (every worker of the process is told); the job tests set their own.
    JOB_POLL_MS: '600000',
    // Jobs of this server only: test servers share one database, and one started with other
    // settings (a shorter lease, smaller export files or expiry, a file's own operations) must not
    // claim another file's jobs nor sweep its exports. Servers meant to share jobs pass the same
    // JOB_QUEUE (the failover tests).
    JOB_QUEUE: `test_${randomUUID().replace(/-/g, '').slice(0, 12)}`,
    // Likewise the PostgreSQL statistics keeper's statements (test/db/postgres-statistics.test.ts
    // runs its own).
    STATISTICS_INTERVAL_MS: '0',
    // Requests beyond the places in work wait for them rather than being refused: tests send
    // bursts of one project (races of 32 identical writes) on a machine whose load varies. The
    // overload tests set their own bounds (test/rest/overload.test.ts).
    ADMISSION_MAX_QUEUED: '10000',
    ADMISSION_MAX_QUEUED_PER_PROJECT: '10000',
    ADMISSION_MAX_WAIT_MS: '600000',
    // Subscription tests deliver to a receiver on loopback. Workers are woken by their server's
    // own commits and retries; a poll in the middle of a test would add to the statements it counts
    // (the delivery tests that need polls set their own).
    OUTBOUND_ALLOW_PRIVATE_ADDRESSES: 'true',
    SUBSCRIPTION_POLL_MS: '600000',
    // WebSocket tests count the messages a socket received: heartbeats only where a test asks.
    WS_HEARTBEAT_MS: '0',
    ...overrides,
  };
}

/**
 * An in-memory embedded database: a copy of the migrated dump built once per run
 * (test/helpers/global-setup.ts), so that a server's start migrates nothing; an empty one to migrate
 * when there is no dump (outside vitest, or when it could not be built).
 */
function memoryDataDir(): string {
  return `memory://${migratedDump() ?? ''}`;
}

/** The migrated dump of this run (test/helpers/global-setup.ts), if any (none outside vitest). */
function migratedDump(): string | undefined {
  try {
    return inject('pgliteTemplate');
  } catch {
    return undefined;
  }
}

/**
 * A new folder for `DATA_DIR` (the embedded database on disk, which a later server can reopen),
 * removed by the caller. Holds a copy of the migrated dump when there is one, so that the first
 * server on it migrates nothing; empty otherwise (or when `tar` fails), and the server migrates.
 */
export async function newDataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'flint-test-data-'));
  const template = migratedDump();
  if (template) {
    // openPGlite keeps the database in `<DATA_DIR>/pglite`; the dump holds that folder's files.
    const folder = join(dir, 'pglite');
    await mkdir(folder);
    const untar = spawnSync('tar', ['-xf', template, '-C', folder], { stdio: 'ignore' });
    if (untar.status !== 0) await rm(folder, { recursive: true, force: true });
  }
  return dir;
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** Set by vitest.config.ts for the files that share their worker's default server. */
    sharedTestServer: boolean;
  }
}

/** The default server of this test worker, started by the first file that asks for it. */
let workerServer: Promise<TestServer> | undefined;
/** The files given the worker's server: a second call from one of them wanted a second server. */
const filesOnWorkerServer = new Set<string>();

/**
 * The server of the calling test file. With overrides, or in the files that vitest.config.ts runs
 * with a server of their own (OWN_SERVER), a new server that stops after the file's tests.
 * Otherwise the default server of this test worker, a process that runs its files one after
 * another: started by the first of them, it ends with the process. Each test makes its own
 * project, so files sharing a server see each other's data only as a super admin searching across
 * projects does (as on PostgreSQL, where every test server shares one database). What a server
 * keeps for its lifetime is shared too: its CapabilityStatement and GraphQL schema (built once,
 * with the operations registered then), its compiled GraphQL queries (a test of a query's first,
 * standard run needs a query text no other file sends, an id in it will do) and its failed logins
 * from the loopback address (30 within 15 minutes throttle every login; the shared files make a
 * handful).
 */
export async function useTestServer(overrides: Record<string, string> = {}): Promise<TestServer> {
  if (Object.keys(overrides).length === 0 && inject('sharedTestServer')) {
    const file = expect.getState().testPath ?? '';
    if (filesOnWorkerServer.has(file)) {
      throw new Error(`${file} asks for a second default server: list it in OWN_SERVER (vitest.config.ts) for servers of its own`);
    }
    filesOnWorkerServer.add(file);
    workerServer ??= startTestServer({}).catch((error: unknown) => {
      workerServer = undefined;
      throw error;
    });
    return workerServer;
  }
  const api = await startTestServer(overrides);
  afterAll(() => api.server.close());
  return api;
}

/** A new server with testEnv(overrides), which the caller stops (`server.close()`); useTestServer() stops its own. */
export async function startTestServer(overrides: Record<string, string>): Promise<TestServer> {
  const config = loadConfig(testEnv(overrides));
  const server = await startServer(config, { log: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }) });
  const fhir = `${server.url}/fhir/R4`;
  const credentials = new WeakMap<ProjectClient, () => Promise<{ clientId: string; clientSecret: string }>>();
  const newProject = (): ProjectClient => {
    const projectId = randomUUID();
    let created: Promise<{ clientId: string; clientSecret: string }> | undefined;
    const setup = () =>
      (created ??= createProject(server.services.auth, { id: projectId, name: `Test project ${projectId.slice(0, 8)}` }).then((p) => ({
        clientId: p.client.id,
        clientSecret: p.client.secret,
      })));
    const client = projectClient(
      fhir,
      projectId,
      lazyToken(async () => {
        const { clientId, clientSecret } = await setup();
        return clientCredentialsToken(server.url, clientId, clientSecret);
      }),
    );
    credentials.set(client, setup);
    return client;
  };
  return {
    url: server.url,
    fhir,
    server,
    newProject,
    superAdmin: superAdminClient(server.url),
    credentialsOf: (client) => {
      const setup = credentials.get(client);
      if (!setup) throw new Error('credentialsOf() takes a client made by newProject()');
      return setup();
    },
    raw: (path, init) => fetch(`${server.url}${path}`, init),
  };
}

/** A client acting as the super admin ClientApplication of a server started with testEnv(). */
export function superAdminClient(baseUrl: string): ProjectClient {
  return projectClient(
    `${baseUrl}/fhir/R4`,
    '',
    lazyToken(() => clientCredentialsToken(baseUrl, TEST_SUPER_ADMIN.clientId, TEST_SUPER_ADMIN.clientSecret)),
  );
}

/** A client of `fhir` that sends `Authorization: Bearer <token()>` on every request. */
export function projectClient(fhir: string, projectId: string, token: () => Promise<string>): ProjectClient {
  const authHeaders = async () => ({ Authorization: `Bearer ${await token()}` });
  const request = async <T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const init: RequestInit = {
      method,
      headers: {
        ...(await authHeaders()),
        ...(body !== undefined && !(body instanceof Uint8Array) ? { 'Content-Type': 'application/fhir+json' } : {}),
        ...headers,
      },
    };
    if (body !== undefined) init.body = isRawBody(body) ? body : JSON.stringify(body);
    const response = await fetch(`${fhir}${path}`, init);
    const text = await response.text();
    let parsed: unknown = undefined;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    return { status: response.status, headers: response.headers, body: parsed as T, text };
  };
  return {
    projectId,
    token,
    authHeaders,
    request,
    get: (path, headers) => request('GET', path, undefined, headers),
    post: (path, body, headers) => request('POST', path, body, headers),
    put: (path, body, headers) => request('PUT', path, body, headers),
    patch: (path, body, headers) =>
      request('PATCH', path, body, { 'Content-Type': 'application/json-patch+json', ...headers }),
    delete: (path, headers) => request('DELETE', path, undefined, headers),
  };
}

function isRawBody(body: unknown): body is string | Uint8Array<ArrayBuffer> {
  return typeof body === 'string' || body instanceof Uint8Array;
}

export const patientBody = (overrides: Record<string, unknown> = {}) => ({
  resourceType: 'Patient',
  identifier: [{ system: 'http://example.org/mrn', value: randomUUID() }],
  name: [{ family: 'Chalmers', given: ['Peter', 'James'] }],
  gender: 'male',
  birthDate: '1974-12-25',
  telecom: [{ system: 'phone', value: '(03) 5555 6473', use: 'work' }],
  address: [{ line: ['534 Erewhon St'], city: 'PleasantVille', state: 'Vic', postalCode: '3999' }],
  ...overrides,
});

/**
 * A project SearchParameter `code` on Patient matching the given names of a `use: nickname` name
 * (tests of custom parameters through other features: clone, GraphQL, several servers).
 */
export function nicknameSearchParameter(code = 'nickname'): Record<string, unknown> {
  return {
    resourceType: 'SearchParameter',
    url: `http://example.org/SearchParameter/${code}`,
    name: code,
    status: 'active',
    description: 'A nickname',
    code,
    base: ['Patient'],
    type: 'string',
    expression: "Patient.name.where(use = 'nickname').given",
  };
}

/**
 * A Flint server in a child process (`src/main.ts` through tsx unless `entry` says otherwise) with testEnv(overrides)
 * on a random port; resolves once it answers /healthcheck. For what needs a process of its own:
 * signals, or a second server sharing no module state with this one.
 */
export async function startServerProcess(
  overrides: Record<string, string> = {},
  entry: readonly string[] = ['--import', 'tsx', 'src/main.ts'],
): Promise<{ url: string; child: ChildProcess }> {
  // Below Linux's ephemeral range (32768 up), where the ports of outgoing connections and of
  // servers listening on port 0 are taken from.
  const port = 20000 + Math.floor(Math.random() * 12000);
  const env = { ...process.env, ...testEnv({ PORT: String(port), ...overrides }) };
  const child = spawn(process.execPath, [...entry], {
    env: Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined)),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  // The end of what the child printed on stderr, to say why it did not start.
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)));
  const url = `http://127.0.0.1:${port}`;
  // Up to 120 s: the child compiles the sources (tsx) before it starts, slow on a machine busy
  // with both test workers.
  for (let i = 0; i < 1200 && child.exitCode === null; i++) {
    if (await fetch(`${url}/healthcheck`).then((r) => r.ok, () => false)) return { url, child };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  child.kill();
  throw new Error(`the server process did not start (exit code ${child.exitCode}): ${stderr}`);
}

/**
 * Polls `probe` until it returns `expected` (a cache notice between servers takes milliseconds),
 * for up to `withinMs`; the last value otherwise.
 */
export async function eventually<T>(probe: () => Promise<T>, expected: T, withinMs = 2000): Promise<T> {
  let value = await probe();
  for (let i = 0; i < withinMs / 50 && value !== expected; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    value = await probe();
  }
  return value;
}
