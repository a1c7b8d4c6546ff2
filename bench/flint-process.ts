import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { buildTree } from './tree-build.js';

/** A client application the benchmark server is started with (SUPER_ADMIN_CLIENT_ID/SECRET). */
export interface BenchClient {
  readonly id: string;
  readonly secret: string;
}

/**
 * The V8 flags of `npm start` (package.json): a young generation of 64 MB, so that the objects of
 * requests still in flight (16 connections, a GraphQL page of 100 resources each) are not copied
 * and promoted at every minor collection.
 */
export const FLINT_NODE_FLAGS = ['--max-semi-space-size=64', '--min-semi-space-size=64'];

/**
 * The node arguments that run the server of the source tree `tree` as `npm start` does: its
 * JavaScript build (compiled here first when its sources changed: tree-build.ts) when the tree has one, else `src/main.ts` through tsx (older
 * trees, so an A/B against them runs each as its own `npm start` did). BENCH_NODE_FLAGS: extra flags
 * for the server only, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`.
 */
export function serverArgs(tree = '.'): string[] {
  const extra = process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? [];
  const build = resolve(tree, 'scripts', 'build-dist.mjs');
  if (!existsSync(build)) return [...FLINT_NODE_FLAGS, ...extra, '--import', 'tsx', 'src/main.ts'];
  buildTree(tree);
  return [...FLINT_NODE_FLAGS, ...extra, 'dist/main.js'];
}

/**
 * Starts Flint as a child process on `port`, as `npm start` does (serverArgs), and waits until
 * /healthcheck answers. Its output is dropped unless BENCH_SERVER_STDOUT is set (for
 * BENCH_NODE_FLAGS that print, e.g. `--trace-gc`); its errors are shown.
 */
export async function launchFlint(port: number, env: Record<string, string | undefined>): Promise<ChildProcess> {
  const child = spawn(process.execPath, serverArgs(), {
    env: { ...process.env, PORT: String(port), ...env },
    stdio: ['ignore', process.env.BENCH_SERVER_STDOUT ? 'inherit' : 'ignore', 'inherit'],
  });
  return answering(child, port, 'Flint');
}

/**
 * `child` once /healthcheck on `port` answers; killed, and an error naming `what`, after
 * BENCH_START_SECONDS (60; a busy machine may need more).
 */
export async function answering(child: ChildProcess, port: number, what: string): Promise<ChildProcess> {
  const attempts = Number(process.env.BENCH_START_SECONDS ?? 60) * 5;
  for (let attempt = 0; attempt < attempts; attempt++) {
    if (await fetch(`http://127.0.0.1:${port}/healthcheck`).then((r) => r.ok, () => false)) return child;
    await new Promise((r) => setTimeout(r, 200));
  }
  child.kill('SIGKILL');
  throw new Error(`${what} did not start`);
}

/**
 * Waits until the server on `port` has no request in work or queued (its /healthcheck's admission
 * load), for at most `limitSeconds`; the seconds waited. autocannon stops sending when a scenario
 * ends, but the server still runs the requests it accepted (a client going away does not cancel
 * its statement): the unfinished requests of a slow scenario hold the database pool, and the
 * scenario after it would be measured behind them.
 */
export async function idleServer(port: number, limitSeconds = 60): Promise<number> {
  const started = performance.now();
  while (performance.now() - started < limitSeconds * 1000) {
    const load = await fetch(`http://127.0.0.1:${port}/healthcheck`).then(
      async (r) => ((await r.json()) as { admission?: { inWork: number; queued: number } }).admission,
      () => undefined,
    );
    if (load && load.inWork === 0 && load.queued === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return (performance.now() - started) / 1000;
}

/** SIGTERM, then waits for the process to drain and exit. */
export async function stopFlint(child: ChildProcess): Promise<void> {
  // A server a scenario took down has exited already: no exit event will come.
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** An access token by client credentials. */
export async function clientCredentialsToken(baseUrl: string, client: BenchClient, scope?: string): Promise<string> {
  const res = await fetch(`${baseUrl}/oauth2/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.id, client_secret: client.secret, ...(scope ? { scope } : {}) }),
  });
  const body = (await res.json()) as { access_token?: string };
  if (!body.access_token) throw new Error(`token request failed: ${res.status} ${JSON.stringify(body)}`);
  return body.access_token;
}

/**
 * A new project made by Project/$init (with a super admin's token) and its default
 * ClientApplication, whose tokens the benchmarks use as an app's (a super admin's searches span
 * every project, which the project-first indexes cannot narrow).
 */
export async function newProjectClient(baseUrl: string, superAdminToken: string, name: string, withOwner = true): Promise<BenchClient> {
  const fhir = `${baseUrl}/fhir/R4`;
  const headers = { 'content-type': 'application/fhir+json', authorization: `Bearer ${superAdminToken}` };
  const parameters = [{ name: 'name', valueString: name }];
  // Without an owner for servers that cannot make a User offline (Medplum checks the password against a web service).
  if (withOwner) parameters.push({ name: 'ownerEmail', valueString: `bench-${Date.now()}-${Math.random().toString(36).slice(2)}@example.org` });
  const init = await fetch(`${fhir}/Project/$init`, { method: 'POST', headers, body: JSON.stringify({ resourceType: 'Parameters', parameter: parameters }) });
  if (init.status !== 201) throw new Error(`Project/$init failed: ${init.status} ${await init.text()}`);
  const project = (await init.json()) as { id: string };
  const found = await fetch(`${fhir}/ClientApplication?_project=${project.id}`, { headers });
  const bundle = (await found.json()) as { entry?: { resource: { id: string } }[] };
  const id = bundle.entry?.[0]?.resource.id;
  // A read (not a search) carries the secret, for admins.
  const client = id ? ((await (await fetch(`${fhir}/ClientApplication/${id}`, { headers })).json()) as { secret?: string }) : undefined;
  if (!id || !client?.secret) throw new Error(`no readable ClientApplication in the new project: ${JSON.stringify(bundle)}`);
  return { id, secret: client.secret };
}

/** One FHIR request with a bearer token; a non-2xx answer throws with its body. */
export async function fhirCall(fhirBase: string, token: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${fhirBase}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/fhir+json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
  return json;
}
