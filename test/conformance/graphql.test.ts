import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { R4_EXAMPLES, R4_GRAPHQL_CASES } from '../helpers/fixtures.js';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { fhirXmlToJson } from './fhir-xml.js';

/**
 * HL7's FHIR GraphQL test cases (fhir-test-cases r4/graphql/manifest.xml), one test per case: the
 * example resources a case needs are loaded into a fresh project, the query runs at the case's
 * context (instance-level `<Type>/<id>/$graphql`, or the system endpoint), and the data is compared
 * with the expected output; `$error` cases must answer with errors.
 *
 * Resource ids are global in Flint, so each case loads its examples under ids of its own
 * (`example` → `example-<random>`, references between the loaded examples rewritten alike) and
 * maps them back in the output before comparing. GraphQL leaves absent fields as `null` where the
 * expected outputs omit them: nulls and empty lists are dropped before comparing.
 */

type Json = any;

interface ManifestCase {
  readonly name: string;
  readonly source: string;
  readonly output: string;
  /** `Type/id/$graphql`, or empty for the system endpoint. */
  readonly context: string;
  /** Example file (without extension) holding the context resource, when not `<type>-<id>`. */
  readonly resource: string | undefined;
  readonly operation: string | undefined;
}

function readManifest(): ManifestCase[] {
  const xml = readFileSync(new URL('manifest.xml', R4_GRAPHQL_CASES), 'utf8');
  return [...xml.matchAll(/<test\s([^>]*?)\/>/g)].map(([, attributes]) => {
    const attribute = (name: string) => new RegExp(`\\b${name}="([^"]*)"`).exec(attributes)?.[1];
    return {
      name: attribute('name') as string,
      source: attribute('source') as string,
      output: attribute('output') as string,
      context: attribute('context') ?? '',
      resource: attribute('resource'),
      operation: attribute('operation'),
    };
  });
}

/**
 * Cases whose query cannot be valid GraphQL against a typed schema (FHIR's reference implementation
 * evaluates queries untyped), each with the reason and an equivalent query that must give the
 * expected output; and the one case where Flint answers differently on purpose (`expected`).
 * `{{Type/id}}` in a rewritten query stands for the id the example was loaded under.
 */
interface Deviation {
  readonly reason: string;
  /** The query to run instead of the case's. */
  readonly query?: string;
  readonly variables?: Record<string, unknown>;
  /** The output to expect instead of the case's (data, compared as for every case). */
  readonly expected?: Json;
}

const DEVIATIONS: Record<string, Deviation> = {
  reference: {
    reason: '`Reference.resource` is the `Resource` interface: Patient fields need a fragment',
    query: '{ id subject { reference, resource { ... on Patient { active } } } code { coding { system code } } }',
  },
  'reference-type-in': {
    reason: '`resource(type: Patient)` still returns the `Resource` interface: `active` needs a fragment',
    query: '{ id subject { reference, resource(type: Patient) { ... on Patient { active } } } code { coding { system code } } }',
  },
  'reference-type-out': {
    reason: '`resource(type: Group)` still returns the `Resource` interface: `active` needs a fragment',
    query: '{ id subject { reference, resource(type: Group) { ... on Group { active } } } code { coding { system code } } }',
  },
  'extension-simple': {
    reason:
      'the two `subject` selections merge into one field (GraphQL field merging), so the expected list of two ' +
      '`subject` objects is not a GraphQL response; `resource` needs a fragment for `birthDate` and `_birthDate`',
    query: '{ subject { resource { ... on Patient { birthDate _birthDate { extension { valueDateTime } } } } } }',
    expected: { subject: { resource: { birthDate: '2016-05-18', _birthDate: { extension: [{ valueDateTime: '2016-05-18T10:28:45Z' }] } } } },
  },
  'search-single': {
    reason: '`id: example` is an enum literal; `ID` takes a string',
    query: '{ Patient(id: "{{Patient/example}}") { id, active } }',
  },
  'search-simple': {
    reason: 'search parameters are `[String!]` arguments (as REST values): `active: "true"`, not a Boolean literal',
    query: '{ PatientList(active: "true") { id, active } }',
  },
  'search-full': {
    reason: 'search parameters are `[String!]` (`active: "true"`); the page size field is `pageSize` (camel case, as the issue names it)',
    query:
      '{ PatientConnection(active: "true") { count offset pageSize edges { mode, score, resource { id, active } } first previous next last } }',
  },
  'directive-variable': {
    reason: '`@include(if:)` takes `Boolean!`: a nullable `$var: Boolean` may not be used there; the expected output includes the field, so `$var` is true',
    query: 'query test($var: Boolean!) { identifier @include(if: $var) { system value } active name { text given family } }',
    variables: { var: true },
  },
};

/** Examples a case's query follows beyond its context resource (references, reverse references, searches). */
const EXTRA_RESOURCES: Record<string, string[]> = {
  polymorphic: ['patient-example'],
  reference: ['patient-example'],
  'reference-type-in': ['patient-example'],
  'reference-type-out': ['patient-example'],
  'reference-fragment-type': ['patient-example'],
  'reference-reverse': ['condition-example'],
  'search-single': ['patient-example'],
  'search-simple': ['patient-example', 'patient-example-xds'],
  'search-full': ['patient-example', 'patient-example-xds'],
};

/** Cases whose expected values are partly the reference server's own (counts, paging links, scores). */
const SERVER_SPECIFIC: Record<string, (actual: Json, expected: Json) => void> = {
  'search-full': (actual, expected) => {
    const connection = actual.PatientConnection;
    expect(connection).toMatchObject({ count: expect.any(Number), offset: 0, pageSize: expect.any(Number) });
    const resources = (connection.edges as Json[]).map((edge) => edge.resource);
    const expectedResources = (expected.PatientConnection.edges as Json[]).map((edge) => edge.resource);
    expect(resources).toEqual(expect.arrayContaining(expectedResources));
    expect(resources).toHaveLength(expectedResources.length);
    for (const edge of connection.edges as Json[]) expect(edge.mode).toBe('match');
  },
};

const api = await useTestServer();
const manifest = readManifest();

describe('FHIR GraphQL test cases (fhir-test-cases r4/graphql)', () => {
  it('lists every case of the manifest', () => {
    expect(manifest.length).toBeGreaterThanOrEqual(29);
  });

  for (const testCase of manifest) {
    const deviation = DEVIATIONS[testCase.name];
    const title = deviation ? `${testCase.name} (${deviation.query ? 'rewritten' : 'differs'}: ${deviation.reason})` : testCase.name;
    it(title, async () => {
      const client = api.newProject();
      const { ids, contextId } = await loadExamples(client, examplesOf(testCase));
      const query = deviation?.query ? fillIds(deviation.query, ids) : readFileSync(new URL(testCase.source, R4_GRAPHQL_CASES), 'utf8');
      const res = await runQuery(client, testCase, contextId, query, deviation?.variables);

      if (testCase.output === '$error' && !deviation?.expected) {
        expect(res.errors?.length ?? 0, JSON.stringify(res)).toBeGreaterThan(0);
        return;
      }
      expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
      const expected = deviation?.expected ?? JSON.parse(readFileSync(new URL(testCase.output, R4_GRAPHQL_CASES), 'utf8'));
      const actual = restoreIds(withoutEmpty(res.data), ids);
      const compare = SERVER_SPECIFIC[testCase.name];
      if (compare) compare(actual, expected);
      else expect(actual).toEqual(expected);
    });
  }
});

describe('FHIR XML examples', () => {
  // The converter that loads the XML-only examples gives the published JSON of the examples that have both.
  it.each(['patient-example', 'condition-example', 'organization-1', 'observation-decimal'])('%s.xml converts to %s.json', (file) => {
    const withoutNarrative = (resource: Json) => ({ ...resource, text: { ...resource.text, div: undefined } });
    const converted = fhirXmlToJson(readFileSync(new URL(`${file}.xml`, R4_EXAMPLES), 'utf8'));
    const published = JSON.parse(readFileSync(new URL(`${file}.json`, R4_EXAMPLES), 'utf8'));
    expect(withoutNarrative(converted)).toEqual(withoutNarrative(published));
  });
});

// Loading examples ---------------------------------------------------------------------------------

/** The example files of a case: its context resource and the ones its query follows. */
function examplesOf(testCase: ManifestCase): string[] {
  const files = [...(EXTRA_RESOURCES[testCase.name] ?? [])];
  const context = contextOf(testCase);
  if (context) files.unshift(testCase.resource ?? `${context.type.toLowerCase()}-${context.id}`);
  return files;
}

function contextOf(testCase: ManifestCase): { type: string; id: string } | undefined {
  const match = /^([A-Za-z]+)\/([^/]+)\/\$graphql$/.exec(testCase.context);
  return match ? { type: match[1], id: match[2] } : undefined;
}

function readExample(file: string): Json {
  const json = new URL(`${file}.json`, R4_EXAMPLES);
  if (existsSync(json)) return JSON.parse(readFileSync(json, 'utf8'));
  // Some examples are published as XML only (list-example-long, patient-glossy-example, ...).
  return fhirXmlToJson(readFileSync(new URL(`${file}.xml`, R4_EXAMPLES), 'utf8'));
}

/** Loaded examples: `Type/originalId` → the id the example was stored under. */
type IdMap = Map<string, string>;

/**
 * Stores the examples (PUT at ids of this case's own). Returns the id map and the id of the first
 * example, the context resource (its id may differ from the manifest's: `List/example-long` is `long`).
 */
async function loadExamples(client: ProjectClient, files: readonly string[]): Promise<{ ids: IdMap; contextId: string | undefined }> {
  const suffix = randomUUID().slice(0, 8);
  const resources = files.map(readExample);
  const ids: IdMap = new Map(resources.map((resource) => [`${resource.resourceType}/${resource.id}`, `${resource.id}-${suffix}`]));
  for (const resource of resources) {
    const stored = relocate(resource, ids);
    const res = await client.put(`/${stored.resourceType}/${stored.id}`, stored);
    expect(res.status, `${stored.resourceType}/${resource.id}: ${res.text}`).toBe(201);
  }
  const first = resources[0];
  return { ids, contextId: first ? ids.get(`${first.resourceType}/${first.id}`) : undefined };
}

/** The resource under its new id, with references to the other loaded examples rewritten. */
function relocate(resource: Json, ids: IdMap): Json {
  const rewrite = (value: Json): Json => {
    if (typeof value === 'string') {
      const id = ids.get(value);
      return id ? `${value.slice(0, value.indexOf('/'))}/${id}` : value;
    }
    if (Array.isArray(value)) return value.map(rewrite);
    if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, rewrite(v)]));
    return value;
  };
  return { ...rewrite(resource), id: ids.get(`${resource.resourceType}/${resource.id}`) };
}

/** Output strings back to the examples' own ids: `Patient/example-1a2b3c4d` → `Patient/example`. */
function restoreIds(value: Json, ids: IdMap): Json {
  const back = new Map<string, string>();
  for (const [key, id] of ids) {
    const [type, original] = key.split('/');
    back.set(id, original);
    back.set(`${type}/${id}`, key);
  }
  const restore = (item: Json): Json => {
    if (typeof item === 'string') return back.get(item) ?? item;
    if (Array.isArray(item)) return item.map(restore);
    if (item && typeof item === 'object') return Object.fromEntries(Object.entries(item).map(([k, v]) => [k, restore(v)]));
    return item;
  };
  return restore(value);
}

function fillIds(query: string, ids: IdMap): string {
  return query.replace(/\{\{([A-Za-z]+\/[^}]+)\}\}/g, (_, key: string) => {
    const id = ids.get(key);
    if (!id) throw new Error(`${key} is not loaded for this case`);
    return id;
  });
}

// Running and comparing ----------------------------------------------------------------------------

async function runQuery(
  client: ProjectClient,
  testCase: ManifestCase,
  contextId: string | undefined,
  query: string,
  variables: Record<string, unknown> | undefined,
): Promise<{ data?: Json; errors?: Json[] }> {
  const context = contextOf(testCase);
  const path = context ? `/fhir/R4/${context.type}/${contextId}/$graphql` : '/fhir/R4/$graphql';
  const res = await api.raw(path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json', ...(await client.authHeaders()) },
    body: JSON.stringify({ query, variables, operationName: testCase.operation }),
  });
  return (await res.json()) as { data?: Json; errors?: Json[] };
}

/** Drops nulls and empty lists: the expected outputs leave absent elements out. */
function withoutEmpty(value: Json): Json {
  if (Array.isArray(value)) return value.map(withoutEmpty);
  if (!value || typeof value !== 'object') return value;
  const result: Record<string, Json> = {};
  for (const [key, item] of Object.entries(value)) {
    const cleaned = withoutEmpty(item);
    if (cleaned === null || cleaned === undefined || (Array.isArray(cleaned) && cleaned.length === 0)) continue;
    result[key] = cleaned;
  }
  return result;
}
