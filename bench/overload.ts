import autocannon from 'autocannon';
import { typicalPatient } from './fixtures.js';
import { clientCredentialsToken, launchFlint, newProjectClient, stopFlint, type BenchClient } from './flint-process.js';

/**
 * The `overload` scenario: one project floods the server (pages of 50 Patients at many
 * connections, each sent again as soon as it is answered, refused or not: a client that ignores
 * Retry-After) while another project reads its Patients by id at a steady light load. Measured
 * on a server with the default admission control and on one whose bounds no load reaches,
 * alternately (BENCH_OVERLOAD_ROUNDS pairs, default 2): the steady project's latency and success
 * rate, and the flood's share of 503 answers.
 */

export const FLOOD_CONNECTIONS = 128;
export const STEADY_CONNECTIONS = 2;
const FLOOD_PATIENTS = 100;
const STEADY_PATIENTS = 20;
const ROUNDS = Number(process.env.BENCH_OVERLOAD_ROUNDS ?? 2);

/** Admission bounds that no load of this scenario reaches: the server works on every request at once. */
const WITHOUT_ADMISSION = { ADMISSION_MAX_IN_WORK: '1000000', ADMISSION_MAX_QUEUED: '1000000', ADMISSION_MAX_QUEUED_PER_PROJECT: '1000000' };

export interface OverloadRun {
  readonly mode: string;
  readonly steady: { rps: number; p50: number; p99: number; successPercent: number; failures: number };
  readonly flood: { rps: number; refusedPercent: number; p50: number; p99: number };
}

/** Both modes, alternately, each on a new server on `port` started with `env`. */
export async function runOverload(port: number, env: Record<string, string>, superAdmin: BenchClient, seconds: number): Promise<OverloadRun[]> {
  const runs: OverloadRun[] = [];
  const modes: [string, Record<string, string>][] = [
    ['with admission control (defaults)', {}],
    ['without admission control', WITHOUT_ADMISSION],
  ];
  for (let round = 0; round < ROUNDS; round++) {
    for (const [mode, settings] of modes) {
      const child = await launchFlint(port, { ...env, SUPER_ADMIN_CLIENT_ID: superAdmin.id, SUPER_ADMIN_CLIENT_SECRET: superAdmin.secret, ...settings });
      try {
        runs.push({ mode, ...(await floodWhileSteady(`http://127.0.0.1:${port}`, superAdmin, seconds)) });
      } finally {
        await stopFlint(child);
      }
    }
  }
  return runs;
}

async function floodWhileSteady(base: string, superAdmin: BenchClient, seconds: number): Promise<Omit<OverloadRun, 'mode'>> {
  const superToken = await clientCredentialsToken(base, superAdmin);
  const [flooding, steady] = await Promise.all(['Flooding', 'Steady'].map(async (name) => clientCredentialsToken(base, await newProjectClient(base, superToken, name))));
  await seed(base, flooding, FLOOD_PATIENTS);
  const steadyIds = await seed(base, steady, STEADY_PATIENTS);
  let next = 0;
  const [flood, light] = await Promise.all([
    run({
      url: `${base}/fhir/R4/Patient?_count=50`,
      connections: FLOOD_CONNECTIONS,
      duration: seconds,
      // A thread of its own: in the steady client's, reading the flood's answers delayed the
      // steady answers' reading, which its latencies then counted.
      workers: 1,
      headers: { authorization: `Bearer ${flooding}` },
    }),
    run({
      url: base,
      connections: STEADY_CONNECTIONS,
      duration: seconds,
      requests: [{ method: 'GET', headers: { authorization: `Bearer ${steady}` }, setupRequest: (req) => ({ ...req, path: `/fhir/R4/Patient/${steadyIds[next++ % steadyIds.length]}` }) }],
    }),
  ]);
  return {
    steady: { rps: Math.round(light.requests.average), p50: light.latency.p50, p99: light.latency.p99, successPercent: percent(light['2xx'], answered(light) + light.errors), failures: light.non2xx + light.errors },
    flood: {
      rps: Math.round(flood.requests.average),
      refusedPercent: percent(flood.statusCodeStats?.['503']?.count ?? 0, answered(flood)),
      p50: flood.latency.p50,
      p99: flood.latency.p99,
    },
  };
}

function answered(result: autocannon.Result): number {
  return result['2xx'] + result.non2xx;
}

function percent(part: number, whole: number): number {
  return whole === 0 ? 0 : Math.round((1000 * part) / whole) / 10;
}

function run(options: autocannon.Options): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => autocannon(options, (error, result) => (error ? reject(error) : resolve(result))));
}

/** `count` Patients in the project of `token`, 10 at a time (within the admission bounds); their ids. */
async function seed(base: string, token: string, count: number): Promise<string[]> {
  const headers = { 'content-type': 'application/fhir+json', authorization: `Bearer ${token}` };
  const create = async () => {
    const res = await fetch(`${base}/fhir/R4/Patient`, { method: 'POST', headers, body: JSON.stringify(typicalPatient()) });
    if (res.status !== 201) throw new Error(`seed failed: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { id: string }).id;
  };
  const ids: string[] = [];
  while (ids.length < count) ids.push(...(await Promise.all(Array.from({ length: Math.min(10, count - ids.length) }, create))));
  return ids;
}
