import { buildSchema as buildSdl, type GraphQLObjectType } from 'graphql';
import { describe, expect, it } from 'vitest';
import { generateOperationsSdl, operationFields } from '../../src/graphql/generator/operations.js';
import { operationResolvers } from '../../src/graphql/operations.js';
import { builtinOperations } from '../../src/builtins.js';
import type { OperationDefinition } from '../../src/operations/definition.js';
import type { Operation } from '../../src/operations/registry.js';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { create } from './resource-helpers.js';

/**
 * Asynchronous operations through GraphQL: an operation offering `Prefer: respond-async` over REST
 * (today `$reindex`) has a `<Field>Async` mutation that starts the same AsyncJob and returns it.
 */

const api = await useTestServer();

type Json = any;

/** POST /fhir/R4/$graphql as `client`: the `{ data, errors }` body. */
async function graphql(client: ProjectClient, query: string, variables?: Record<string, unknown>): Promise<{ data?: Json; errors?: Json[] }> {
  const res = await api.raw('/fhir/R4/$graphql', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(await client.authHeaders()) },
    body: JSON.stringify({ query, variables }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { data?: Json; errors?: Json[] };
}

const ASYNC = { Prefer: 'respond-async' };

const JOB_FIELDS = 'id status request requestTime transactionTime output { parameter { name valueInteger part { name valueCode valueInteger } } }';

/** Reads the job with `AsyncJob(id:)` (as the super admin) until it has stopped; fails after 30 s. */
async function pollJob(id: string): Promise<Json> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await graphql(api.superAdmin, `query ($id: ID!) { AsyncJob(id: $id) { ${JOB_FIELDS} } }`, { id });
    expect(res.errors).toBeUndefined();
    const job = res.data.AsyncJob;
    if (job.transactionTime !== null) return job;
    if (Date.now() > deadline) throw new Error(`AsyncJob still ${job.status}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The number of AsyncJobs on the server, in every project. */
/** AsyncJobs of one project, or of every project (on PostgreSQL, other test files' jobs too). */
async function jobCount(projectId?: string): Promise<number> {
  const rows = await api.server.services.db.query<{ count: string | number }>(
    `SELECT count(*) AS count FROM resource WHERE "resourceType" = 'AsyncJob' AND ($1::text IS NULL OR "projectId" = $1)`,
    [projectId ?? null],
  );
  return Number(rows[0].count);
}

/** A project with two Patients and an Observation. */
async function projectWithResources(): Promise<ProjectClient> {
  const client = api.newProject();
  await create(client, { resourceType: 'Patient', name: [{ family: 'Async' }] });
  await create(client, { resourceType: 'Patient', name: [{ family: 'Graph' }] });
  await create(client, { resourceType: 'Observation', status: 'final', code: { text: 'pulse' } });
  return client;
}

describe('SystemReindexAsync', () => {
  it('returns the accepted AsyncJob, which completes with the result SystemReindex gives', async () => {
    const client = await projectWithResources();
    const variables = { project: client.projectId, type: ['Patient', 'Observation'] };
    const sync = await graphql(
      api.superAdmin,
      'mutation ($project: String, $type: [String!]) { SystemReindex(type: $type, project: $project) { resources byType { type resources } } }',
      variables,
    );
    expect(sync.errors).toBeUndefined();

    const started = await graphql(
      api.superAdmin,
      'mutation ($project: String, $type: [String!]) { SystemReindexAsync(type: $type, project: $project) { resourceType id status transactionTime } }',
      variables,
    );

    expect(started.errors).toBeUndefined();
    const job = started.data.SystemReindexAsync;
    expect(job).toEqual({ resourceType: 'AsyncJob', id: expect.stringMatching(/^[0-9a-f-]{36}$/), status: 'accepted', transactionTime: null });
    const done = await pollJob(job.id);
    expect(done.status).toBe('completed');
    const parameter = done.output.parameter as Json[];
    expect({
      resources: parameter.find((p) => p.name === 'resources').valueInteger,
      byType: parameter
        .filter((p) => p.name === 'byType')
        .map((p) => ({ type: p.part.find((q: Json) => q.name === 'type').valueCode, resources: p.part.find((q: Json) => q.name === 'resources').valueInteger })),
    }).toEqual(sync.data.SystemReindex);
    expect(sync.data.SystemReindex).toEqual({ resources: 3, byType: [{ type: 'Patient', resources: 2 }, { type: 'Observation', resources: 1 }] });
  });

  it('starts the job REST reads: GET /AsyncJob/{id} shows it, with the REST URL of $reindex as its request', async () => {
    const client = await projectWithResources();
    const started = await graphql(api.superAdmin, `mutation { SystemReindexAsync(project: "${client.projectId}", type: ["Patient"]) { id } }`);
    expect(started.errors).toBeUndefined();
    const done = await pollJob(started.data.SystemReindexAsync.id);

    const rest = await api.superAdmin.get(`/AsyncJob/${done.id}`);

    expect(rest.status, rest.text).toBe(200);
    expect(rest.body).toMatchObject({ resourceType: 'AsyncJob', id: done.id, status: 'completed', request: 'http://localhost/fhir/R4/$reindex' });
    expect(rest.body.output).toEqual({
      resourceType: 'Parameters',
      parameter: [
        { name: 'resources', valueInteger: 2 },
        { name: 'byType', part: [{ name: 'type', valueCode: 'Patient' }, { name: 'resources', valueInteger: 2 }] },
      ],
    });
    expect(Date.parse(rest.body.transactionTime)).toBeGreaterThanOrEqual(Date.parse(rest.body.requestTime));
  });

  it('refuses anyone but a super admin with the OperationOutcome REST answers (403), and starts no job', async () => {
    const client = api.newProject();
    const before = await jobCount(client.projectId);
    const rest = await client.post('/$reindex', { resourceType: 'Parameters', parameter: [{ name: 'project', valueString: client.projectId }] }, ASYNC);
    expect(rest.status).toBe(403);

    const res = await graphql(client, `mutation { SystemReindexAsync(project: "${client.projectId}") { id status } }`);

    expect(res.data).toEqual({ SystemReindexAsync: null });
    expect(res.errors).toHaveLength(1);
    expect(res.errors![0].extensions.resource).toEqual(rest.body);
    expect(res.errors![0].extensions.resource.issue[0].code).toBe('forbidden');
    expect(await jobCount(client.projectId)).toBe(before);
  });

  it('answers a mistake in the arguments at once, with the OperationOutcome REST answers (400), before any job is created', async () => {
    const before = await jobCount();
    const restProject = await api.superAdmin.post('/$reindex', { resourceType: 'Parameters', parameter: [{ name: 'project', valueString: 'no-such-project' }] }, ASYNC);
    const restType = await api.superAdmin.post('/$reindex', { resourceType: 'Parameters', parameter: [{ name: 'type', valueCode: 'Spaceship' }] }, ASYNC);
    expect([restProject.status, restType.status]).toEqual([400, 400]);

    const res = await graphql(
      api.superAdmin,
      'mutation { project: SystemReindexAsync(project: "no-such-project") { id } type: SystemReindexAsync(type: ["Spaceship"]) { id } }',
    );

    expect(res.data).toEqual({ project: null, type: null });
    const byPath = Object.fromEntries(res.errors!.map((error: Json) => [error.path[0], error.extensions.resource]));
    expect(byPath).toEqual({ project: restProject.body, type: restType.body });
    expect(byPath.project.issue[0].details.text).toContain('no-such-project');
    expect(await jobCount()).toBe(before);
  });
});

describe('<Field>Async fields', () => {
  it('exist only for the operations offering asynchronous running, on Mutation, returning AsyncJob', async () => {
    const res = await graphql(api.newProject(), '{ __type(name: "Mutation") { fields { name type { name } } } }');
    const fields = res.data.__type.fields as { name: string; type: { name: string } }[];
    const asyncFields = fields.filter((field) => field.name.endsWith('Async'));
    expect(asyncFields).toEqual([
      { name: 'GroupExportAsync', type: { name: 'AsyncJob' } },
      { name: 'PatientExportAsync', type: { name: 'AsyncJob' } },
      { name: 'ProjectCloneAsync', type: { name: 'AsyncJob' } },
      { name: 'ProjectExpungeAsync', type: { name: 'AsyncJob' } },
      { name: 'SystemExportAsync', type: { name: 'AsyncJob' } },
      { name: 'SystemReindexAsync', type: { name: 'AsyncJob' } },
    ]);
    // The same as the registry says: the operations with `respondsAsync`.
    const offering = builtinOperations.filter((operation) => operation.respondsAsync).map((operation) => operation.definition.code);
    expect(offering).toEqual(['clone', 'reindex', 'export', 'export', 'export', 'expunge']);
  });

  it('are absent for operations without asynchronous running: querying one is a validation error', async () => {
    const res = await graphql(api.superAdmin, 'mutation { ProjectInitAsync(name: "No async") { id } }');
    expect(res.data).toBeUndefined();
    expect(res.errors![0].message).toMatch(/^Cannot query field "ProjectInitAsync" on type "Mutation"\./);
  });

  it('are the only field of an operation that runs only as a job: SystemExport is a validation error', async () => {
    const res = await graphql(api.newProject(), '{ SystemExport { transactionTime } }');
    expect(res.data).toBeUndefined();
    expect(res.errors![0].message).toMatch(/^Cannot query field "SystemExport" on type "Query"\./);
  });

  it('are generated from the registry: an operation with respondsAsync at type and instance level gets one beside its field', () => {
    const definition: OperationDefinition = {
      resourceType: 'OperationDefinition',
      id: 'async-slow',
      url: 'http://flint.test/OperationDefinition/async-slow',
      name: 'H2Slow',
      status: 'active',
      kind: 'operation',
      code: 'slow-count',
      resource: ['Patient'],
      system: false,
      type: true,
      instance: true,
      parameter: [
        { name: 'limit', use: 'in', min: 0, max: '1', type: 'integer' },
        { name: 'filter', use: 'in', min: 0, max: '*', part: [{ name: 'code', use: 'in', min: 1, max: '1', type: 'code' }] },
        { name: 'count', use: 'out', min: 1, max: '1', type: 'integer' },
      ],
    };
    const slow: Operation = { definition, respondsAsync: true, handler: async () => ({ count: 1 }) };
    const plain: Operation = { definition: { ...definition, id: 'async-plain', code: 'plain-count', url: 'http://flint.test/OperationDefinition/async-plain' }, handler: async () => ({ count: 1 }) };

    const sdl = generateOperationsSdl([slow, plain]);
    const schema = buildSdl(`type Query { x: Int } type Mutation { x: Int } type AsyncJob { id: ID } ${sdl}`);
    const query = schema.getQueryType()!.getFields();
    const mutation = (schema.getMutationType() as GraphQLObjectType).getFields();
    const args = (field: { args: readonly { name: string; type: unknown }[] }) => field.args.map((arg) => `${arg.name}: ${String(arg.type)}`);

    // Not state-changing: the operation is a Query field, its asynchronous form a Mutation field.
    expect(Object.keys(query).filter((name) => name.startsWith('Patient'))).toEqual(['PatientPlainCount', 'PatientSlowCount']);
    expect(Object.keys(mutation).filter((name) => name.startsWith('Patient'))).toEqual(['PatientSlowCountAsync']);
    expect(String(mutation.PatientSlowCountAsync.type)).toBe('AsyncJob');
    expect(args(mutation.PatientSlowCountAsync)).toEqual(args(query.PatientSlowCount));
    expect(args(mutation.PatientSlowCountAsync)).toEqual(['id: ID', 'limit: Int', 'filter: [PatientSlowCountFilterInput!]']);
    // And a resolver for it.
    const resolvers = operationResolvers([slow, plain]) as Record<string, Record<string, unknown>>;
    expect(resolvers.Mutation.PatientSlowCountAsync).toBeTypeOf('function');
    expect(operationFields([slow, plain]).filter((field) => field.async).map((field) => field.name)).toEqual(['PatientSlowCountAsync']);
  });
});
