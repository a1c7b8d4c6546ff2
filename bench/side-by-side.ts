/**
 * Two FHIR servers measured side by side with the same requests: Flint and, say, a Medplum you run
 * yourself (docs/benchmarks.md). Each server first gets the same data through its own API (a new
 * project; BENCH_PATIENTS Patients, BENCH_OBSERVATIONS Observations); nothing analyzes either
 * database. Then each request is driven by autocannon at 16 connections, on one server at a time
 * (the other's processes stopped, and the machine quiet first: side-by-side-turns.ts):
 * BENCH_WARMUP seconds unmeasured, then BENCH_DURATION seconds measured. The
 * creates come last, so that every search runs on the same seeded rows on both servers.
 *
 *   SIDE_B_NAME=Medplum SIDE_B_URL=http://127.0.0.1:18410 SIDE_B_CLIENT_ID=... SIDE_B_CLIENT_SECRET=... \
 *   FLINT_DATABASE_URL=postgres://postgres@127.0.0.1:5432/flint_x npx tsx bench/side-by-side.ts
 *
 * Side A is Flint of this tree started on FLINT_DATABASE_URL (bench/side-by-side-data.ts), or any
 * server given as SIDE_A_URL/_CLIENT_ID/_CLIENT_SECRET. SIDE_B_PIDS=1234,1235: the other
 * server's processes, stopped while Flint is measured (without them it is only left idle). SIDE_<A|B>_INIT=1 (or ownerless): the client
 * is a super admin's and a project is made with Project/$init. BENCH_SCENARIOS=a,b picks requests by the start
 * of their names. Prints a markdown table; BENCH_RESULTS=<file> also appends it there.
 */
import { appendFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import autocannon from 'autocannon';
import { stopFlint } from './flint-process.js';
import { FAMILIES } from './search-data.js';
import { MRN_SYSTEM, RUN_TAG, observation, patient, pick, seed, seededCodes, sideFromEnv, startFlintSide, type Side } from './side-by-side-data.js';
import { clientFloorMs } from './side-by-side-floor.js';
import { aloneOn } from './side-by-side-turns.js';
import { walkPages, type Walk } from './side-by-side-walk.js';

const PATIENTS = Number(process.env.BENCH_PATIENTS ?? 3000);
const OBSERVATIONS = Number(process.env.BENCH_OBSERVATIONS ?? 10_000);
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 5);
const CONNECTIONS = 16;
/** Measured walks of every Patient per server, after one unmeasured. */
const WALK_ROUNDS = Number(process.env.BENCH_WALK_ROUNDS ?? 5);

interface Scenario {
  readonly name: string;
  /** One request of the scenario against `side` (path under the server's base, body if any). */
  readonly request: (side: Side) => { method: 'GET' | 'POST'; path: string; body?: string; contentType?: string };
}

const search = (type: string, query: (side: Side) => string): Scenario['request'] => (side) => ({ method: 'GET', path: `/fhir/R4/${type}?${query(side)}` });
const graphql = (query: string, variables: (side: Side) => Record<string, unknown> = () => ({})): Scenario['request'] => (side) => ({
  method: 'POST',
  path: '/fhir/R4/$graphql',
  body: JSON.stringify({ query, variables: variables(side) }),
  contentType: 'application/json',
});
const post = (make: (side: Side) => Record<string, unknown>): Scenario['request'] => (side) => {
  const resource = make(side);
  return { method: 'POST', path: `/fhir/R4/${resource.resourceType as string}`, body: JSON.stringify(resource), contentType: 'application/fhir+json' };
};

let created = 0;
const scenarios: Scenario[] = [
  { name: 'read Patient by id', request: (side) => ({ method: 'GET', path: `/fhir/R4/Patient/${pick(side.patientIds)}` }) },
  { name: 'Patient?name=<3-letter prefix>', request: search('Patient', () => `name=${encodeURIComponent(pick(FAMILIES).slice(0, 3).toLowerCase())}`) },
  { name: 'Patient?identifier=<sys>|<val>', request: search('Patient', () => `identifier=${MRN_SYSTEM}|${RUN_TAG}-${Math.floor(Math.random() * PATIENTS)}`) },
  {
    name: 'Observation?subject&code',
    request: search('Observation', (side) => `subject=Patient/${pick(side.patientIds)}&code=http://loinc.org|${pick(seededCodes(PATIENTS, OBSERVATIONS))}`),
  },
  { name: 'Observation?_sort=-_lastUpdated&_count=20', request: search('Observation', () => '_sort=-_lastUpdated&_count=20') },
  {
    name: 'GraphQL Patient by id',
    request: graphql('query ($id: ID!) { Patient(id: $id) { id name { family given } gender birthDate } }', (side) => ({ id: pick(side.patientIds) })),
  },
  {
    name: 'GraphQL ObservationList(_count: 50) with subject names',
    request: graphql('{ ObservationList(_count: 50) { id subject { resource { ... on Patient { name { family } } } } } }'),
  },
  { name: 'create Patient', request: post(() => patient(PATIENTS + created++)) },
  { name: 'create Observation', request: post((side) => observation(pick(side.patientIds))) },
];

interface Measure {
  rps: number;
  p50: number;
  p99: number;
  failed: number;
}

function drive(side: Side, scenario: Scenario, duration: number): Promise<Measure> {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: side.base,
        connections: CONNECTIONS,
        duration,
        headers: { authorization: `Bearer ${side.token}` },
        requests: [
          {
            setupRequest: (req) => {
              const { method, path, body, contentType } = scenario.request(side);
              return { ...req, method, path, body, headers: { ...req.headers, ...(contentType ? { 'content-type': contentType } : {}) } };
            },
          },
        ],
      },
      (error, result) =>
        error ? reject(error) : resolve({ rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, failed: result.non2xx + result.errors + result.timeouts }),
    );
  });
}

/** One request of the scenario, so that a refused shape is seen before it is timed: its status and entry count. */
async function probe(side: Side, scenario: Scenario): Promise<string> {
  const { method, path, body, contentType } = scenario.request(side);
  const res = await fetch(`${side.base}${path}`, {
    method,
    body,
    headers: { authorization: `Bearer ${side.token}`, ...(contentType ? { 'content-type': contentType } : {}) },
  });
  const json = (await res.json()) as { resourceType?: string; entry?: unknown[]; data?: Record<string, unknown>; errors?: unknown[] };
  const list = json.data && Object.values(json.data)[0];
  const size = json.resourceType === 'Bundle' ? (json.entry?.length ?? 0) : Array.isArray(list) ? list.length : undefined;
  const problem = res.status >= 300 || json.errors ? ` ${JSON.stringify(json).slice(0, 200)}` : '';
  return `${side.name} ${res.status}${size === undefined ? '' : ` (${size} entries)`}${problem}`;
}

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
const ratio = (a: number, b: number) => (b > 0 ? `${round(a / b, 2)}x` : 'n/a');

async function measure(sides: Side[], scenario: Scenario): Promise<string> {
  console.log(`${scenario.name}: ${(await Promise.all(sides.map((side) => probe(side, scenario)))).join('; ')}`);
  const results: Measure[] = [];
  for (const side of sides) {
    results.push(
      await aloneOn(sides, side, async () => {
        if (WARMUP > 0) await drive(side, scenario, WARMUP);
        return drive(side, scenario, DURATION);
      }),
    );
  }
  const [a, b] = results;
  return `| ${scenario.name.replaceAll('|', '\\|')} | ${round(a.rps, 0)} | ${a.p50} / ${a.p99} | ${round(b.rps, 0)} | ${b.p50} / ${b.p99} | ${ratio(a.rps, b.rps)} | ${a.failed}; ${b.failed} |`;
}

async function walkRow(sides: Side[]): Promise<{ row: string; floor: string }> {
  const walks = [];
  for (const side of sides) {
    walks.push(
      await aloneOn(sides, side, async () => {
        await walkPages(side); // unmeasured: the first walk warms what the measured one reads
        return walkPages(side, WALK_ROUNDS);
      }),
    );
  }
  const [a, b] = walks;
  const rate = (walk: Walk) => round(1000 / walk.meanMs, 0);
  const name = `page walk Patient?_count=100, one request at a time, ${WALK_ROUNDS} walks (pages/s; p50 / max ms a page; ${a.pages} and ${b.pages} pages)`;
  const row = `| ${name} | ${rate(a)} | ${a.p50Ms} / ${a.maxMs} | ${rate(b)} | ${b.p50Ms} / ${b.maxMs} | ${ratio(b.meanMs, a.meanMs)} | ${a.failed}; ${b.failed} |`;
  return { row, floor: await walkAboveFloor(sides, walks) };
}

/** The walk's mean a page above what the client alone takes (side-by-side-floor.ts), each server's share. */
async function walkAboveFloor(sides: Side[], [a, b]: Walk[]): Promise<string> {
  const floor = await aloneOn(sides, sides[0], () => clientFloorMs(sides[0], a.pages));
  const above = (walk: Walk) => round(walk.meanMs - floor, 2);
  return (
    `Page walk, the client's own share: a static server of ${sides[0].name}'s first page takes the client ${round(floor, 2)} ms a page` +
    ` (fetch, gunzip, JSON.parse); above it, ${sides[0].name} ${above(a)} and ${sides[1].name} ${above(b)} ms a page, ${ratio(above(b), above(a))}.` +
    ` Each walk's first two pages take ${sides[0].name} ${a.firstTwoMeanMs} and ${sides[1].name} ${b.firstTwoMeanMs} ms by the mean,` +
    ` the pages after them ${a.restMeanMs} and ${b.restMeanMs} ms.`
  );
}

async function main(): Promise<void> {
  const flint = await startFlintSide();
  try {
    const a = flint?.side ?? (await sideFromEnv('A'));
    const b = await sideFromEnv('B');
    if (!a || !b) throw new Error('two servers are needed: FLINT_DATABASE_URL or SIDE_A_URL, and SIDE_B_URL (see the header)');
    await compare(a, b);
  } finally {
    if (flint) await stopFlint(flint.child);
  }
}

async function compare(a: Side, b: Side): Promise<void> {
  const sides = [a, b];
  const load = () => loadavg().map((l) => round(l, 2)).join(' ');
  const lines = [`${new Date().toISOString()}: ${a.name} vs ${b.name}, ${cpus().length} cores, load ${load()}`];
  for (const side of sides) lines.push(`${side.name}: seeded ${PATIENTS} Patients + ${OBSERVATIONS} Observations in ${round(await seed(side, PATIENTS, OBSERVATIONS))} s`);
  console.log(lines.join('\n'));
  const selected = process.env.BENCH_SCENARIOS?.split(',');
  const rows = [`| request | ${a.name} req/s | p50 / p99 ms | ${b.name} req/s | p50 / p99 ms | ${a.name} ÷ ${b.name} | failed (${a.name}; ${b.name}) |`, '|---|---|---|---|---|---|---|'];
  const chosen = (name: string) => !selected || selected.some((s) => name.startsWith(s));
  for (const scenario of scenarios.filter((s) => chosen(s.name) && !s.name.startsWith('create'))) rows.push(await measure(sides, scenario));
  const walk = chosen('page walk') ? await walkRow(sides) : undefined;
  if (walk) rows.push(walk.row);
  for (const scenario of scenarios.filter((s) => chosen(s.name) && s.name.startsWith('create'))) rows.push(await measure(sides, scenario));
  lines.push(`${CONNECTIONS} connections, ${WARMUP} s warm-up, ${DURATION} s measured per request and server; load at the end ${load()}`, '', ...rows);
  if (walk) lines.push('', walk.floor);
  console.log(lines.join('\n'));
  if (process.env.BENCH_RESULTS) appendFileSync(process.env.BENCH_RESULTS, `\n${lines.join('\n')}\n`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
