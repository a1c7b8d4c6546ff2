import { randomUUID } from 'node:crypto';
import { getIntrospectionQuery } from 'graphql';

/**
 * Hostile request shapes: each one a single request that once crashed or froze the server, or
 * answered 500 (a black-box probe of the server, and the Bundle shapes of the bundles work). The
 * fuzz suite (test/fuzz/hostile.test.ts) sends each once and expects a 4xx that says what is
 * wrong; the `hostile` benchmark (bench/hostile.ts) sends them in a loop while it measures the
 * health check. No test-runner imports here: the benchmark imports this module too.
 */

export type DatabaseKind = 'pglite' | 'postgres';

/**
 * What a resisting server answers: a 4xx refusal, 2xx for a shape that is valid after all, or for
 * GraphQL a refused field: the request itself is valid, so GraphQL over HTTP answers 200 with the
 * field's error (an OperationOutcome in its extensions) and the field null.
 */
export type Expected = 'refused' | 'accepted' | 'field-refused';

/** How a refusal explains itself (explainsRefusal). */
export type AnswerKind = 'fhir' | 'oauth' | 'graphql';

export interface ShapeRequest {
  readonly method: string;
  /** From the server's root: `/fhir/R4/...`, `/oauth2/token`. */
  readonly path: string;
  readonly headers?: Record<string, string>;
  readonly body?: string | Uint8Array;
}

/** The server and project a shape is sent to; fixtures are made on first use and kept. */
export interface ShapeTarget {
  readonly baseUrl: string;
  readonly database: DatabaseKind;
  /** The project's ClientApplication (OAuth shapes send its credentials). */
  readonly clientId: string;
  readonly clientSecret: string;
  /** A bearer token of that client. */
  readonly token: string;
  /** A Patient of the project (the JSON Patch shapes patch it). */
  patientId(): Promise<string>;
  /** The canonical URL of a ValueSet of LARGE_VALUE_SET_CONCEPTS concepts in the project. */
  largeValueSetUrl(): Promise<string>;
}

export interface HostileShape {
  readonly name: string;
  readonly answers: AnswerKind;
  expected(database: DatabaseKind): Expected;
  request(target: ShapeTarget): Promise<ShapeRequest>;
}

export interface ShapeAnswer {
  readonly status: number;
  readonly body: unknown;
  readonly text: string;
}

/** Concepts of the value set the `ValueSetExpand` aliases expand (100 aliases: 100 times as many). */
export const LARGE_VALUE_SET_CONCEPTS = 2000;
/** "A few MB": enough to show a value is refused by its size, not parsed (the probe sent 15 MiB). */
const HUGE_VALUE_CHARS = 3 * 1024 * 1024;

const refused = (): Expected => 'refused';
const FHIR_JSON = 'application/fhir+json';
const FORM = 'application/x-www-form-urlencoded';

export const HOSTILE_SHAPES: readonly HostileShape[] = [
  fhir('JSON Patch that doubles the document with 40 copy operations', async (t) => ({
    method: 'PATCH',
    path: `/fhir/R4/Patient/${await t.patientId()}`,
    headers: bearer(t, 'application/json-patch+json'),
    body: JSON.stringify([
      { op: 'add', path: '/name', value: [{}] },
      ...Array.from({ length: 40 }, () => ({ op: 'copy', from: '/name', path: '/name/-' })),
    ]),
  })),
  fhir('JSON Patch whose value is nested 100,000 deep', async (t) => ({
    method: 'PATCH',
    path: `/fhir/R4/Patient/${await t.patientId()}`,
    headers: bearer(t, 'application/json-patch+json'),
    body: `[{"op":"add","path":"/extension","value":${nested(100_000, '[', ']', '"x"')}}]`,
  })),
  fhir('resource body nested 100,000 deep', async (t) => ({
    method: 'POST',
    path: '/fhir/R4/Patient',
    headers: bearer(t, FHIR_JSON),
    body: `{"resourceType":"Patient","extension":[${nested(100_000, '{"url":"http://example.org/x","extension":[', ']}', '{}')}]}`,
  })),
  fhir('lone UTF-16 surrogate in a create', async (t) => ({
    method: 'POST',
    path: '/fhir/R4/Patient',
    headers: bearer(t, FHIR_JSON),
    body: '{"resourceType":"Patient","name":[{"family":"a\\ud800b"}]}',
  })),
  fhir('NUL in a resource string', async (t) => ({
    method: 'POST',
    path: '/fhir/R4/Patient',
    headers: bearer(t, FHIR_JSON),
    body: JSON.stringify({ resourceType: 'Patient', name: [{ family: 'a\u0000b' }] }),
  })),
  fhir('NUL in a search value', async (t) => ({ method: 'GET', path: '/fhir/R4/Patient?name=a%00b', headers: bearer(t) })),
  fhir('NUL in a token search value', async (t) => ({
    method: 'GET',
    path: '/fhir/R4/Patient?identifier=http://example.org/mrn|a%00b',
    headers: bearer(t),
  })),
  fhir('history with _offset=9999999999999999999', async (t) => ({
    method: 'GET',
    path: '/fhir/R4/Patient/_history?_offset=9999999999999999999',
    headers: bearer(t),
  })),
  fhir('ValueSet with a regex filter "(("', async (t) => ({
    method: 'POST',
    path: '/fhir/R4/ValueSet',
    headers: bearer(t, FHIR_JSON),
    body: JSON.stringify({
      resourceType: 'ValueSet',
      status: 'active',
      url: `http://example.org/ValueSet/${randomUUID()}`,
      compose: { include: [{ system: 'http://loinc.org', filter: [{ property: 'code', op: 'regex', value: '((' }] }] },
    }),
  })),
  graphql('GraphQL selection nested 50,000 deep', async () => `{ PatientList ${nested(50_000, '{ extension ', ' }', '{ url }')} }`),
  graphql('GraphQL input object nested 50,000 deep', async () => `{ PatientList(name: ${nested(50_000, '{ a: ', ' }', '1')}) { id } }`),
  graphql('GraphQL list literal nested 50,000 deep', async () => `{ PatientList(name: ${nested(50_000, '[', ']', '"x"')}) { id } }`),
  graphql('100 aliases of full __schema introspection', async () => aliasedIntrospection(100)),
  graphql('100 aliases of ValueSetExpand over a large value set', async (t) => {
    const url = await t.largeValueSetUrl();
    const fields = Array.from({ length: 100 }, (_, i) => `e${i}: ValueSetExpand(url: "${url}") { expansion { contains { system code display } } }`);
    return `{ ${fields.join(' ')} }`;
  }),
  fhir('search value of 3 MiB (POST _search)', async (t) => ({
    method: 'POST',
    path: '/fhir/R4/Patient/_search',
    headers: bearer(t, FORM),
    body: `name=${'a'.repeat(HUGE_VALUE_CHARS)}`,
  })),
  { ...graphql('GraphQL search argument of 3 MiB', async () => `{ PatientList(name: "${'a'.repeat(HUGE_VALUE_CHARS)}") { id } }`), expected: () => 'field-refused' },
  fhir('10,000 name= parameters (POST _search)', async (t) => ({
    method: 'POST',
    path: '/fhir/R4/Patient/_search',
    headers: bearer(t, FORM),
    body: Array.from({ length: 10_000 }, (_, i) => `name=n${i}`).join('&'),
  })),
  oauth('client credentials with scope=%00', async (t) => tokenRequest(`${clientCredentials(t)}&scope=%00`)),
  oauth('grant_type given twice', async (t) => tokenRequest(`${clientCredentials(t)}&grant_type=client_credentials`)),
  oauth('HTTP Basic and body credentials together', async (t) =>
    tokenRequest(clientCredentials(t), { Authorization: `Basic ${Buffer.from(`${t.clientId}:${t.clientSecret}`).toString('base64')}` }),
  ),
  fhir('POST without Content-Type', async (t) => ({
    method: 'POST',
    path: '/fhir/R4/Patient',
    headers: bearer(t),
    // Bytes: fetch gives a string body a text/plain Content-Type of its own.
    body: new TextEncoder().encode('{"resourceType":"Patient"}'),
  })),
  fhir('POST with a non-UTF-8 charset', async (t) => ({
    method: 'POST',
    path: '/fhir/R4/Patient',
    headers: bearer(t, `${FHIR_JSON}; charset=iso-8859-1`),
    body: '{"resourceType":"Patient","name":[{"family":"Muller"}]}',
  })),
  fhir('invalid UTF-8 bytes in a create', async (t) => ({
    method: 'POST',
    path: '/fhir/R4/Patient',
    headers: bearer(t, FHIR_JSON),
    body: Buffer.concat([Buffer.from('{"resourceType":"Patient","name":[{"family":"a'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}]}')]),
  })),
  graphqlBody('invalid UTF-8 bytes in a GraphQL mutation', async () =>
    // The family name's bytes are not UTF-8; the rest is a valid request.
    Buffer.concat([
      Buffer.from('{"query":"mutation { PatientCreate(res: { name: [{ family: \\"'),
      Buffer.from([0xff, 0xfe, 0xc3]),
      Buffer.from('\\" }] }) { id } }"}'),
    ]),
  ),
  fhir('transaction of 10,001 conditional entries (over MAX_BUNDLE_ENTRIES)', async (t) => transaction(t, conditionalCreates(10_001))),
  {
    name: 'transaction of 1,001 conditional entries (over the embedded database cap)',
    answers: 'fhir',
    // PostgreSQL has no cap below MAX_BUNDLE_ENTRIES: there the transaction is valid and commits.
    expected: (database) => (database === 'pglite' ? 'refused' : 'accepted'),
    request: async (t) => transaction(t, conditionalCreates(1001)),
  },
  {
    name: 'transaction whose two entries refer to each other by urn:uuid (a cycle)',
    answers: 'fhir',
    expected: () => 'accepted',
    request: async (t) => transaction(t, referenceCycle()),
  },
  fhir('transaction referring to a urn:uuid no entry defines', async (t) =>
    transaction(t, [
      {
        request: { method: 'POST', url: 'Observation' },
        resource: { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: `urn:uuid:${randomUUID()}` } },
      },
    ]),
  ),
  fhir('transaction holding a nested Bundle', async (t) =>
    transaction(t, [{ request: { method: 'POST', url: '' }, resource: { resourceType: 'Bundle', type: 'transaction', entry: referenceCycle() } }]),
  ),
];

/** Sends a shape with fetch; the body parsed as JSON when it is JSON. */
export async function sendShape(target: ShapeTarget, shape: HostileShape, signal?: AbortSignal): Promise<ShapeAnswer> {
  const request = await shape.request(target);
  const res = await fetch(`${target.baseUrl}${request.path}`, {
    method: request.method,
    headers: request.headers,
    body: request.body as BodyInit | undefined,
    signal,
  });
  const text = await res.text();
  return { status: res.status, body: parsedOrUndefined(text), text };
}

/**
 * Whether a refusal explains itself in the shape's kind of answer: an OperationOutcome; OAuth's
 * error JSON; GraphQL errors, each with a message (a query refused before it runs, such as a
 * syntax error, has GraphQL's own error and no OperationOutcome).
 */
export function explainsRefusal(kind: AnswerKind, body: unknown): boolean {
  if (isOutcome(body)) return true;
  if (kind === 'oauth') return typeof (body as { error?: unknown } | undefined)?.error === 'string';
  if (kind === 'graphql') {
    const errors = (body as { errors?: { message?: unknown }[] } | undefined)?.errors;
    return Array.isArray(errors) && errors.length > 0 && errors.every((error) => typeof error.message === 'string' && error.message !== '');
  }
  return false;
}

/** Whether the server answers its health check, waiting up to `deadlineMs` (no timing is asserted). */
export async function healthCheckStatus(baseUrl: string, deadlineMs = 30_000): Promise<number | 'no answer'> {
  try {
    return (await fetch(`${baseUrl}/healthcheck`, { signal: AbortSignal.timeout(deadlineMs) })).status;
  } catch {
    return 'no answer';
  }
}

/** A ShapeTarget whose fixtures are made over HTTP in the client's project on first use. */
export function shapeTarget(options: Omit<ShapeTarget, 'patientId' | 'largeValueSetUrl'>): ShapeTarget {
  let patient: Promise<string> | undefined;
  let valueSet: Promise<string> | undefined;
  return {
    ...options,
    patientId: () => (patient ??= createFixture(options, { resourceType: 'Patient', name: [{ family: 'Fuzz' }] }).then((p) => p.id)),
    largeValueSetUrl: () => (valueSet ??= createLargeValueSet(options)),
  };
}

function fhir(name: string, request: HostileShape['request']): HostileShape {
  return { name, answers: 'fhir', expected: refused, request };
}

function oauth(name: string, request: HostileShape['request']): HostileShape {
  return { name, answers: 'oauth', expected: refused, request };
}

/** A GraphQL query POSTed as JSON; `graphql-response+json` asks for a 4xx status on a request error. */
function graphql(name: string, query: (target: ShapeTarget) => Promise<string>): HostileShape {
  return graphqlBody(name, async (t) => JSON.stringify({ query: await query(t) }));
}

/** A GraphQL request whose body the shape writes itself. */
function graphqlBody(name: string, body: (target: ShapeTarget) => Promise<string | Uint8Array>): HostileShape {
  return {
    name,
    answers: 'graphql',
    expected: refused,
    request: async (t) => ({
      method: 'POST',
      path: '/fhir/R4/$graphql',
      headers: { ...bearer(t, 'application/json'), Accept: 'application/graphql-response+json' },
      body: await body(t),
    }),
  };
}

function bearer(target: ShapeTarget, contentType?: string): Record<string, string> {
  return { Authorization: `Bearer ${target.token}`, Accept: FHIR_JSON, ...(contentType ? { 'Content-Type': contentType } : {}) };
}

function tokenRequest(body: string, headers: Record<string, string> = {}): ShapeRequest {
  return { method: 'POST', path: '/oauth2/token', headers: { 'Content-Type': FORM, ...headers }, body };
}

function clientCredentials(target: ShapeTarget): string {
  return new URLSearchParams({ grant_type: 'client_credentials', client_id: target.clientId, client_secret: target.clientSecret }).toString();
}

function transaction(target: ShapeTarget, entry: unknown[]): ShapeRequest {
  return { method: 'POST', path: '/fhir/R4', headers: bearer(target, FHIR_JSON), body: JSON.stringify({ resourceType: 'Bundle', type: 'transaction', entry }) };
}

function conditionalCreates(count: number): unknown[] {
  const system = `http://example.org/fuzz/${randomUUID()}`;
  return Array.from({ length: count }, (_, i) => ({
    request: { method: 'POST', url: 'Patient', ifNoneExist: `identifier=${system}|${i}` },
    resource: { resourceType: 'Patient', identifier: [{ system, value: String(i) }] },
  }));
}

/** Two Patients, each linking to the other by its urn:uuid fullUrl: valid FHIR. */
function referenceCycle(): unknown[] {
  const [a, b] = [`urn:uuid:${randomUUID()}`, `urn:uuid:${randomUUID()}`];
  const patient = (self: string, other: string) => ({
    fullUrl: self,
    request: { method: 'POST', url: 'Patient' },
    resource: { resourceType: 'Patient', link: [{ other: { reference: other }, type: 'seealso' }] },
  });
  return [patient(a, b), patient(b, a)];
}

/** `depth` openings, the innermost value, then `depth` closings. */
function nested(depth: number, open: string, close: string, innermost: string): string {
  return `${open.repeat(depth)}${innermost}${close.repeat(depth)}`;
}

/** The standard introspection query with its `__schema` field asked `count` times under aliases. */
function aliasedIntrospection(count: number): string {
  const query = getIntrospectionQuery();
  const start = query.indexOf('__schema {');
  let depth = 0;
  let end = query.indexOf('{', start);
  for (; end < query.length; end++) {
    if (query[end] === '{') depth++;
    if (query[end] === '}' && --depth === 0) break;
  }
  const field = query.slice(start, end + 1);
  const aliases = Array.from({ length: count }, (_, i) => `s${i}: ${field}`).join('\n');
  return `${query.slice(0, start)}${aliases}${query.slice(end + 1)}`;
}

function isOutcome(value: unknown): boolean {
  const outcome = value as { resourceType?: unknown; issue?: { details?: { text?: unknown }; diagnostics?: unknown }[] } | undefined;
  const issue = outcome?.issue?.[0];
  return outcome?.resourceType === 'OperationOutcome' && (typeof issue?.details?.text === 'string' || typeof issue?.diagnostics === 'string');
}

function parsedOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

async function createFixture(target: Pick<ShapeTarget, 'baseUrl' | 'token'>, resource: Record<string, unknown>): Promise<{ id: string }> {
  const res = await fetch(`${target.baseUrl}/fhir/R4/${String(resource.resourceType)}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${target.token}`, 'Content-Type': FHIR_JSON },
    body: JSON.stringify(resource),
  });
  if (res.status !== 201) throw new Error(`fixture ${String(resource.resourceType)} not created: ${res.status} ${(await res.text()).slice(0, 300)}`);
  return (await res.json()) as { id: string };
}

/** A CodeSystem of LARGE_VALUE_SET_CONCEPTS concepts and a ValueSet of all of them. */
async function createLargeValueSet(target: Pick<ShapeTarget, 'baseUrl' | 'token'>): Promise<string> {
  const system = `http://example.org/fuzz/CodeSystem/${randomUUID()}`;
  const url = `http://example.org/fuzz/ValueSet/${randomUUID()}`;
  const concept = Array.from({ length: LARGE_VALUE_SET_CONCEPTS }, (_, i) => ({ code: `c${i}`, display: `Concept number ${i}` }));
  await createFixture(target, { resourceType: 'CodeSystem', url: system, status: 'active', content: 'complete', concept });
  await createFixture(target, { resourceType: 'ValueSet', url, status: 'active', compose: { include: [{ system }] } });
  return url;
}
