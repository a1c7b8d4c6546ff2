import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { afterAll } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startServer, type RunningServer } from '../../src/server.js';

/**
 * Tests talk to a real server over HTTP. It runs on PostgreSQL when DATABASE_URL is set, on an
 * in-memory PGlite otherwise. Until tokens exist, a test header picks the caller's project so
 * that each test works in a project of its own.
 */
export const TEST_PROJECT_HEADER = 'x-test-project';

export interface TestResponse<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface ProjectClient {
  readonly projectId: string;
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
  /** A client acting in a brand-new project. */
  newProject(): ProjectClient;
  raw(path: string, init?: RequestInit): Promise<Response>;
}

export function testEnv(overrides: Record<string, string> = {}): Record<string, string | undefined> {
  return {
    PORT: '0',
    // Vite sets BASE_URL=/ in the test process; Flint needs an absolute URL.
    BASE_URL: 'http://localhost/',
    DATABASE_URL: process.env.DATABASE_URL,
    DATA_DIR: 'memory://',
    LOG_LEVEL: 'silent',
    DATABASE_POOL_SIZE: '4',
    ...overrides,
  };
}

/** Starts one server for the calling test file and stops it after the file's tests. */
export async function useTestServer(overrides: Record<string, string> = {}): Promise<TestServer> {
  const config = loadConfig(testEnv(overrides));
  const server = await startServer(config, {
    log: pino({ level: 'silent' }),
    authenticate: async (request) => ({
      projectId: request.headers.get(TEST_PROJECT_HEADER) ?? 'default',
      superAdmin: false,
    }),
  });
  afterAll(() => server.close());
  const fhir = `${server.url}/fhir/R4`;
  return {
    url: server.url,
    fhir,
    server,
    newProject: () => projectClient(fhir, randomUUID()),
    raw: (path, init) => fetch(`${server.url}${path}`, init),
  };
}

export function projectClient(fhir: string, projectId: string): ProjectClient {
  const request = async <T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const init: RequestInit = {
      method,
      headers: {
        [TEST_PROJECT_HEADER]: projectId,
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
