import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { out, params, SYSTEM, withAnimals, withValueSet } from '../terminology/fixtures.js';
import { buildSchema } from '../../src/graphql/schema.js';
import { operationFields } from '../../src/graphql/generator/operations.js';
import { listOperations } from '../../src/operations/registry.js';
import { create } from './resource-helpers.js';

const api = await useTestServer();

/** POST /fhir/R4/$graphql as `client`: the status and the `{ data, errors }` body. */
async function graphql(client: ProjectClient, query: string, variables?: Record<string, unknown>) {
  const res = await api.raw('/fhir/R4/$graphql', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(await client.authHeaders()) },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, body: (await res.json()) as { data?: any; errors?: any[] } };
}

/** The value of the one `name` out-parameter of a REST Parameters answer. */
const valueOf = (body: unknown, name: string, key: string) => out(body, name)[0]?.[key];

/** A part list of a REST answer as `{ partName: entry }`. */
const partsByName = (entry: { part: Record<string, any>[] }): Record<string, Record<string, any>> =>
  Object.fromEntries(entry.part.map((part) => [part.name, part]));

/** An entry without its name: how an open-typed (value[x]) parameter appears in GraphQL. */
const withoutName = ({ name: _name, ...value }: Record<string, unknown>) => value;

const MAP = 'http://flint.test/ConceptMap/animals-to-latin';
const LATIN = 'http://flint.test/CodeSystem/latin';
const VS = 'http://flint.test/ValueSet/mammals';

describe('operations as GraphQL fields', () => {
  it('CodeSystemLookup gives the same answer as REST $lookup: display, designations, open-typed property values', async () => {
    const client = api.newProject();
    await withAnimals(client);
    const rest = await client.post('/CodeSystem/$lookup', params({ name: 'code', valueCode: 'dog' }, { name: 'system', valueUri: SYSTEM }));
    expect(rest.status).toBe(200);

    const res = await graphql(
      client,
      `query ($system: String) {
        CodeSystemLookup(code: "dog", system: $system) {
          name display version
          designation { language value use { code } }
          property { code value description }
        }
      }`,
      { system: SYSTEM },
    );

    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.CodeSystemLookup).toEqual({
      name: valueOf(rest.body, 'name', 'valueString'),
      display: valueOf(rest.body, 'display', 'valueString'),
      version: null,
      designation: out(rest.body, 'designation').map((entry) => {
        const parts = partsByName(entry);
        return { language: parts.language.valueCode, value: parts.value.valueString, use: null };
      }),
      property: out(rest.body, 'property').map((entry) => {
        const parts = partsByName(entry);
        return { code: parts.code.valueCode, value: withoutName(parts.value), description: parts.description?.valueString ?? null };
      }),
    });
    expect(res.body.data.CodeSystemLookup.property[0]).toEqual({ code: 'color', value: { valueCode: 'brown' }, description: 'Colour of the living thing' });
  });

  it('CodeSystemLookup runs on an instance given its id, with a Coding argument', async () => {
    const client = api.newProject();
    const id = await withAnimals(client);
    const res = await graphql(client, `{ CodeSystemLookup(id: "${id}", coding: { code: "tree" }) { display } }`);
    expect(res.body).toEqual({ data: { CodeSystemLookup: { display: 'Tree' } } });
  });

  it('CodeSystemValidateCode gives the same result, message and display as REST $validate-code', async () => {
    const client = api.newProject();
    const id = await withAnimals(client);
    const rest = await client.post(`/CodeSystem/${id}/$validate-code`, params({ name: 'code', valueCode: 'cat' }, { name: 'display', valueString: 'Kitty' }));
    expect(valueOf(rest.body, 'result', 'valueBoolean')).toBe(false);

    const res = await graphql(
      client,
      `{
        wrongDisplay: CodeSystemValidateCode(id: "${id}", code: "cat", display: "Kitty") { result message display }
        byUrl: CodeSystemValidateCode(url: "${SYSTEM}", code: "puppy") { result message display }
      }`,
    );

    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.wrongDisplay).toEqual({
      result: false,
      message: valueOf(rest.body, 'message', 'valueString') ?? null,
      display: valueOf(rest.body, 'display', 'valueString'),
    });
    expect(res.body.data.byUrl).toEqual({ result: true, message: null, display: 'Puppy' });
  });

  it('ValueSetExpand returns the expanded ValueSet itself, as REST $expand does', async () => {
    const client = api.newProject();
    await withAnimals(client);
    await withValueSet(client, VS, { include: [{ system: SYSTEM, filter: [{ property: 'concept', op: 'is-a', value: 'mammal' }] }] });
    const rest = await client.get(`/ValueSet/$expand?url=${encodeURIComponent(VS)}&excludeNested=true`);
    expect(rest.status).toBe(200);

    const res = await graphql(
      client,
      `{ ValueSetExpand(url: "${VS}", excludeNested: true) { resourceType url expansion { total contains { system code display } } } }`,
    );

    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.ValueSetExpand).toEqual({
      resourceType: 'ValueSet',
      url: VS,
      expansion: { total: rest.body.expansion.total, contains: rest.body.expansion.contains },
    });
    expect(res.body.data.ValueSetExpand.expansion.contains.map((c: { code: string }) => c.code)).toEqual(['mammal', 'dog', 'puppy', 'cat']);
  });

  it('ValueSetExpand takes a resource argument as FHIR JSON', async () => {
    const client = api.newProject();
    await withAnimals(client);
    const valueSet = { resourceType: 'ValueSet', status: 'active', compose: { include: [{ system: SYSTEM, concept: [{ code: 'dog' }, { code: 'moss' }] }] } };

    const res = await graphql(client, 'query ($vs: JSON) { ValueSetExpand(valueSet: $vs) { expansion { contains { code display } } } }', { vs: valueSet });

    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.ValueSetExpand.expansion.contains).toEqual([
      { code: 'dog', display: 'Dog' },
      { code: 'moss', display: 'Moss' },
    ]);
  });

  it('takes repeating parameters with parts as lists of input objects (ConceptMapImport, then ConceptMapTranslate)', async () => {
    const client = api.newProject();
    const map = await client.post('/ConceptMap', {
      resourceType: 'ConceptMap',
      url: MAP,
      status: 'active',
      group: [{ source: SYSTEM, target: LATIN, element: [{ code: 'dog', target: [{ code: 'canis', equivalence: 'equivalent' }] }] }],
    });
    expect(map.status).toBe(201);

    const imported = await graphql(
      client,
      `mutation ($mapping: [ConceptMapImportMappingInput!]!) { ConceptMapImport(url: "${MAP}", mapping: $mapping) { resourceType id } }`,
      { mapping: [{ source: { system: SYSTEM, code: 'cat' }, target: { system: LATIN, code: 'felis' }, equivalence: 'wider' }] },
    );
    expect(imported.body).toEqual({ data: { ConceptMapImport: { resourceType: 'ConceptMap', id: map.body.id } } });

    const translated = await graphql(
      client,
      `{ ConceptMapTranslate(url: "${MAP}", system: "${SYSTEM}", code: "cat") { result match { equivalence concept { system code } source } } }`,
    );
    expect(translated.body).toEqual({
      data: { ConceptMapTranslate: { result: true, match: [{ equivalence: 'wider', concept: { system: LATIN, code: 'felis' }, source: MAP }] } },
    });
  });

  it('takes an open-typed (value[x]) parameter as JSON with one value[x] property (CodeSystemImport)', async () => {
    const client = api.newProject();
    const id = await withAnimals(client);

    const imported = await graphql(
      client,
      `mutation ($id: ID) {
        CodeSystemImport(id: $id, concept: [{ code: "wolf", display: "Wolf" }],
          property: [{ code: "wolf", property: "color", value: { valueCode: "grey" } }]) { resourceType id }
      }`,
      { id },
    );
    expect(imported.body).toEqual({ data: { CodeSystemImport: { resourceType: 'CodeSystem', id } } });

    const lookup = await graphql(client, `{ CodeSystemLookup(id: "${id}", code: "wolf") { display property { code value } } }`);
    expect(lookup.body.data.CodeSystemLookup).toEqual({ display: 'Wolf', property: [{ code: 'color', value: { valueCode: 'grey' } }] });

    const bare = await graphql(client, `mutation { CodeSystemImport(id: "${id}", property: [{ code: "wolf", property: "color", value: "grey" }]) { id } }`);
    expect(bare.body.data).toEqual({ CodeSystemImport: null });
    expect(bare.body.errors![0].extensions.resource.issue[0]).toMatchObject({ code: 'invalid', details: { text: expect.stringContaining('value[x]') } });
  });

  it('reports an operation error (unknown code) as a GraphQL error with the REST OperationOutcome, keeping the other fields', async () => {
    const client = api.newProject();
    await withAnimals(client);
    const rest = await client.post('/CodeSystem/$lookup', params({ name: 'code', valueCode: 'unicorn' }, { name: 'system', valueUri: SYSTEM }));
    expect(rest.status).toBe(404);

    const res = await graphql(
      client,
      `{
        known: CodeSystemLookup(code: "dog", system: "${SYSTEM}") { display }
        unknown: CodeSystemLookup(code: "unicorn", system: "${SYSTEM}") { display }
      }`,
    );

    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ known: { display: 'Dog' }, unknown: null });
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors![0]).toMatchObject({ path: ['unknown'], extensions: { resource: rest.body } });
  });

  it('checks argument values with the same decoding as a REST Parameters body', async () => {
    const client = api.newProject();
    await withAnimals(client);
    const rest = await client.post('/CodeSystem/$lookup', params({ name: 'date', valueDateTime: 'yesterday' }));
    expect(rest.status).toBe(400);

    const res = await graphql(client, '{ CodeSystemLookup(date: "yesterday") { display } }');

    expect(res.body.data).toEqual({ CodeSystemLookup: null });
    expect(res.body.errors![0].extensions.resource).toEqual(rest.body);
    expect(rest.body.issue[0]).toMatchObject({ code: 'invalid', details: { text: expect.stringContaining('"date"') } });
  });

  it('ProjectInit is a mutation: a super admin creates a project with its owner', async () => {
    const email = `${randomUUID()}@example.org`;
    const name = `GraphQL clinic ${randomUUID().slice(0, 6)}`;

    const res = await graphql(
      api.superAdmin,
      'mutation ($name: String!, $email: String) { ProjectInit(name: $name, ownerEmail: $email) { resourceType id name strictMode owner { reference } } }',
      { name, email },
    );

    expect(res.body.errors).toBeUndefined();
    const project = res.body.data.ProjectInit;
    expect(project).toMatchObject({ resourceType: 'Project', name, strictMode: true, owner: { reference: expect.stringMatching(/^User\//) } });
    const stored = await api.superAdmin.get(`/Project/${project.id}`);
    expect(stored.status).toBe(200);
    expect(stored.body).toMatchObject({ name, owner: project.owner });
    const owner = await api.superAdmin.get(`/${project.owner.reference}`);
    expect(owner.body.email).toBe(email);
  });

  it('has a resolver behind every operation field of the schema (none answers null silently)', () => {
    const schema = buildSchema();
    const fields = operationFields(listOperations());
    expect(fields.some((field) => field.name === 'SystemReindex')).toBe(true);
    for (const field of fields) {
      const root = field.root === 'Query' ? schema.getQueryType() : schema.getMutationType();
      const schemaField = root?.getFields()[field.name];
      // Operations a test registers at run time are REST-only: the committed schema has no field for them.
      if (schemaField) expect(schemaField.resolve, field.name).toBeTypeOf('function');
    }
  });

  it('SystemReindex gives what REST $reindex gives, for a super admin', async () => {
    const client = api.newProject();
    await create(client, { resourceType: 'Patient', name: [{ family: 'Reindexed' }] });
    const res = await graphql(
      api.superAdmin,
      'mutation ($project: String) { SystemReindex(type: ["Patient"], project: $project) { resources byType { type resources } } }',
      { project: client.projectId },
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.SystemReindex).toEqual({ resources: 1, byType: [{ type: 'Patient', resources: 1 }] });
  });

  it('refuses a super-admin operation (ProjectClone) to a project admin: forbidden, with the OperationOutcome', async () => {
    const client = api.newProject();
    const rest = await client.post(`/Project/${client.projectId}/$clone`, params());
    expect(rest.status).toBe(403);

    const res = await graphql(client, `mutation { ProjectClone(id: "${client.projectId}", name: "Copy") { id } }`);

    expect(res.body.data).toEqual({ ProjectClone: null });
    expect(res.body.errors![0].extensions.resource).toEqual(rest.body);
    expect(res.body.errors![0].extensions.resource.issue[0].code).toBe('forbidden');
  });

  it('does not offer a state-changing operation as a Query field', async () => {
    const client = api.newProject();
    const res = await graphql(client, '{ ProjectInit(name: "Not through a query") { id } }');
    expect(res.body.data).toBeUndefined();
    expect(res.body.errors![0].message).toMatch(/^Cannot query field "ProjectInit" on type "Query"\./);
  });

  it('generates fields from the definitions: Query or Mutation by affectsState, `-` in parameter names as `_`', async () => {
    const res = await graphql(
      api.newProject(),
      `{
        query: __type(name: "Query") { fields { name args { name type { kind name ofType { kind name } } } } }
        mutation: __type(name: "Mutation") { fields { name } }
      }`,
    );
    const queryFields = res.body.data.query.fields as { name: string; args: { name: string; type: unknown }[] }[];
    const mutationFields = (res.body.data.mutation.fields as { name: string }[]).map((field) => field.name);
    expect(queryFields.map((field) => field.name)).toEqual(expect.arrayContaining(['CodeSystemLookup', 'CodeSystemValidateCode', 'ValueSetValidateCode', 'ValueSetExpand']));
    expect(mutationFields).toEqual(expect.arrayContaining(['ProjectInit', 'ProjectClone', 'CodeSystemImport', 'ConceptMapImport']));
    expect(queryFields.map((field) => field.name)).not.toContain('ProjectInit');
    expect(mutationFields).not.toContain('CodeSystemLookup');
    const expand = queryFields.find((field) => field.name === 'ValueSetExpand')!;
    expect(expand.args.find((arg) => arg.name === 'exclude_system')?.type).toEqual({ kind: 'LIST', name: null, ofType: { kind: 'NON_NULL', name: null } });
  });
});
