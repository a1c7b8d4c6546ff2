import { afterAll, describe, expect, it } from 'vitest';
import type { OperationDefinition } from '../../src/operations/definition.js';
import { registerOperation } from '../../src/operations/registry.js';
import { useTestServer } from '../helpers/server.js';

/** A test-only operation exercising every parameter shape the framework decodes and encodes. */
const echoDefinition: OperationDefinition = {
  resourceType: 'OperationDefinition',
  id: 'test-echo',
  url: 'http://flint.test/OperationDefinition/test-echo',
  status: 'active',
  kind: 'operation',
  code: 'test-echo',
  resource: ['Patient'],
  system: true,
  type: true,
  instance: false,
  parameter: [
    { name: 'text', use: 'in', min: 1, max: '1', type: 'string' },
    { name: 'count', use: 'in', min: 0, max: '1', type: 'integer' },
    { name: 'flag', use: 'in', min: 0, max: '1', type: 'boolean' },
    { name: 'tag', use: 'in', min: 0, max: '*', type: 'code' },
    { name: 'coding', use: 'in', min: 0, max: '1', type: 'Coding' },
    { name: 'patient', use: 'in', min: 0, max: '1', type: 'Patient' },
    { name: 'pair', use: 'in', min: 0, max: '*', part: [
      { name: 'key', use: 'in', min: 1, max: '1', type: 'code' },
      { name: 'value', use: 'in', min: 0, max: '1', type: 'Element' },
    ] },
    { name: 'mode', use: 'in', min: 0, max: '1', type: 'code' },
    { name: 'echo', use: 'out', min: 1, max: '1', type: 'string' },
    { name: 'number', use: 'out', min: 0, max: '1', type: 'integer' },
    { name: 'tag', use: 'out', min: 0, max: '*', type: 'code' },
    { name: 'level', use: 'out', min: 1, max: '1', type: 'code' },
    { name: 'pair', use: 'out', min: 0, max: '*', part: [
      { name: 'key', use: 'out', min: 1, max: '1', type: 'code' },
      { name: 'value', use: 'out', min: 0, max: '1', type: 'Element' },
    ] },
    { name: 'patientName', use: 'out', min: 0, max: '1', type: 'string' },
  ],
};

const stateDefinition: OperationDefinition = {
  ...echoDefinition,
  id: 'test-change',
  url: 'http://flint.test/OperationDefinition/test-change',
  code: 'test-change',
  system: false,
  type: false,
  instance: true,
  affectsState: true,
  parameter: [
    { name: 'note', use: 'in', min: 0, max: '1', type: 'string' },
    { name: 'return', use: 'out', min: 1, max: '1', type: 'Patient' },
  ],
};

const unregister = [
  registerOperation({
    definition: echoDefinition,
    async handler(input: Record<string, any>, request) {
      if (input.mode === 'break-type') return { echo: 42, level: request.level };
      if (input.mode === 'break-missing') return { level: request.level };
      if (input.mode === 'break-unknown') return { echo: 'x', level: request.level, surprise: true };
      return {
        echo: input.text,
        number: input.count,
        tag: input.tag,
        level: request.level,
        pair: input.pair,
        patientName: input.patient?.name?.[0]?.family ?? (input.coding ? `${input.coding.system}|${input.coding.code}` : undefined),
      };
    },
  }),
  registerOperation({
    definition: stateDefinition,
    async handler(input: Record<string, any>, request) {
      const patient = await request.ctx.repo.readResource('Patient', request.id!);
      return { return: { ...patient, active: input.note === 'activate' } };
    },
  }),
];
afterAll(() => unregister.forEach((fn) => fn()));

const api = await useTestServer();

const params = (...parameter: unknown[]) => ({ resourceType: 'Parameters', parameter });
const outValue = (body: any, name: string) => body.parameter.filter((p: any) => p.name === name);

describe('operation routing from the definition', () => {
  it('runs at type level by POST', async () => {
    const res = await api.newProject().post('/Patient/$test-echo', params({ name: 'text', valueString: 'hi' }));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      resourceType: 'Parameters',
      parameter: [{ name: 'echo', valueString: 'hi' }, { name: 'level', valueCode: 'type' }],
    });
  });

  it('runs at system level', async () => {
    const res = await api.newProject().get('/$test-echo?text=hi');
    expect(res.status).toBe(200);
    expect(outValue(res.body, 'level')).toEqual([{ name: 'level', valueCode: 'system' }]);
  });

  it('refuses a level the definition does not declare, naming operation and level', async () => {
    const client = api.newProject();
    const res = await client.post('/Patient/123/$test-echo', params({ name: 'text', valueString: 'hi' }));
    expect(res.status).toBe(404);
    expect(res.body.issue[0].code).toBe('not-supported');
    expect(res.body.issue[0].details.text).toContain('$test-echo');
    expect(res.body.issue[0].details.text).toContain('instance level');
  });

  it('refuses a resource type the operation is not defined on', async () => {
    const res = await api.newProject().post('/Observation/$test-echo', params({ name: 'text', valueString: 'hi' }));
    expect(res.status).toBe(404);
    expect(res.body.issue[0].code).toBe('not-supported');
    expect(res.body.issue[0].details.text).toMatch(/\$test-echo.*Observation/);
  });

  it('refuses an unknown operation', async () => {
    const res = await api.newProject().post('/Patient/$no-such-op', params());
    expect(res.status).toBe(404);
    expect(res.body.issue[0].details.text).toContain('$no-such-op');
  });

  it('leaves $graphql at system level to GraphQL', async () => {
    const res = await api.newProject().request('POST', '/$graphql', { query: '{ __typename }' }, { 'Content-Type': 'application/json' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: { __typename: 'Query' } });
  });

  it('serves the definition at OperationDefinition/{id}', async () => {
    const res = await api.newProject().get('/OperationDefinition/test-echo');
    expect(res.status).toBe(200);
    expect(res.body.code).toBe('test-echo');
  });

  it('serves a built-in definition and lists operations in the CapabilityStatement', async () => {
    const client = api.newProject();
    expect((await client.get('/OperationDefinition/CodeSystem-lookup')).body.code).toBe('lookup');
    const cap = (await client.get('/metadata')).body;
    const codeSystem = cap.rest[0].resource.find((r: any) => r.type === 'CodeSystem');
    expect(codeSystem.operation).toContainEqual({ name: 'lookup', definition: 'http://hl7.org/fhir/OperationDefinition/CodeSystem-lookup' });
    expect(cap.rest[0].operation).toContainEqual({ name: 'test-echo', definition: echoDefinition.url });
  });

  it('serves a stored OperationDefinition by the normal read', async () => {
    const client = api.newProject();
    const stored = { ...echoDefinition, id: undefined, name: 'Stored', url: 'http://flint.test/OperationDefinition/stored', code: 'stored' };
    const created = await client.post('/OperationDefinition', stored);
    expect(created.status).toBe(201);
    const res = await client.get(`/OperationDefinition/${created.body.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: created.body.id, code: 'stored' });
  });

  it('falls back to the stored OperationDefinition for other ids', async () => {
    const res = await api.newProject().get('/OperationDefinition/not-registered');
    expect(res.status).toBe(404);
    expect(res.body.issue[0].code).toBe('not-found');
  });
});

describe('GET eligibility', () => {
  it('gives the same result by GET and POST', async () => {
    const client = api.newProject();
    const get = await client.get('/Patient/$test-echo?text=hi&count=3&tag=a&tag=b');
    const post = await client.post(
      '/Patient/$test-echo',
      params({ name: 'text', valueString: 'hi' }, { name: 'count', valueInteger: 3 }, { name: 'tag', valueCode: 'a' }, { name: 'tag', valueCode: 'b' }),
    );
    expect(get.status).toBe(200);
    expect(get.body).toEqual(post.body);
    expect(outValue(get.body, 'tag')).toEqual([{ name: 'tag', valueCode: 'a' }, { name: 'tag', valueCode: 'b' }]);
  });

  it('refuses GET on an operation that affects state with 405 and Allow: POST', async () => {
    const client = api.newProject();
    const patient = await client.post('/Patient', { resourceType: 'Patient' });
    const res = await client.get(`/Patient/${patient.body.id}/$test-change`);
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    expect(res.body.resourceType).toBe('OperationOutcome');
  });

  it('refuses a complex parameter in a query string, naming it', async () => {
    const res = await api.newProject().get('/Patient/$test-echo?text=hi&coding=http://x|y');
    expect(res.status).toBe(400);
    expect(res.body.issue[0].code).toBe('invalid');
    expect(res.body.issue[0].details.text).toContain('"coding"');
  });

  it('checks primitive formats in a query string', async () => {
    const res = await api.newProject().get('/Patient/$test-echo?text=hi&count=many');
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('"count"');
    const flag = await api.newProject().get('/Patient/$test-echo?text=hi&flag=yes');
    expect(flag.status).toBe(400);
    expect(flag.body.issue[0].details.text).toContain('"flag"');
  });
});

describe('input checking', () => {
  it('refuses a missing required parameter', async () => {
    const res = await api.newProject().post('/Patient/$test-echo', params());
    expect(res.status).toBe(400);
    expect(res.body.issue[0]).toMatchObject({ code: 'invalid', expression: ['Parameters.parameter'] });
    expect(res.body.issue[0].details.text).toContain('"text"');
  });

  it('refuses a missing required parameter by GET too', async () => {
    const res = await api.newProject().get('/Patient/$test-echo');
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('"text"');
  });

  it('refuses an unknown parameter, pointing at the entry', async () => {
    const res = await api.newProject().post('/Patient/$test-echo', params({ name: 'text', valueString: 'a' }, { name: 'bogus', valueString: 'b' }));
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['Parameters.parameter[1]']);
    expect(res.body.issue[0].details.text).toContain('"bogus"');
  });

  it('refuses an unknown parameter by GET', async () => {
    const res = await api.newProject().get('/Patient/$test-echo?text=a&bogus=b');
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('"bogus"');
  });

  it('refuses the wrong value[x]', async () => {
    const res = await api.newProject().post('/Patient/$test-echo', params({ name: 'text', valueInteger: 3 }));
    expect(res.status).toBe(400);
    expect(res.body.issue[0].code).toBe('invalid');
    expect(res.body.issue[0].expression).toEqual(['Parameters.parameter[0].valueInteger']);
    expect(res.body.issue[0].details.text).toMatch(/"text".*valueString/);
  });

  it('refuses a malformed primitive', async () => {
    const res = await api.newProject().post('/Patient/$test-echo', params({ name: 'text', valueString: 'a' }, { name: 'count', valueInteger: 1.5 }));
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('"count"');
  });

  it('refuses too many values of a max-1 parameter', async () => {
    const res = await api.newProject().post('/Patient/$test-echo', params({ name: 'text', valueString: 'a' }, { name: 'text', valueString: 'b' }));
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toMatch(/"text".*at most 1/);
  });

  it('refuses a body that is not a Parameters resource', async () => {
    const res = await api.newProject().post('/Patient/$test-echo', { resourceType: 'Patient' });
    expect(res.status).toBe(400);
    expect(res.body.issue[0].code).toBe('invalid');
  });

  it('decodes a complex-typed value', async () => {
    const res = await api.newProject().post(
      '/Patient/$test-echo',
      params({ name: 'text', valueString: 'a' }, { name: 'coding', valueCoding: { system: 'http://x', code: 'y' } }),
    );
    expect(outValue(res.body, 'patientName')).toEqual([{ name: 'patientName', valueString: 'http://x|y' }]);
  });

  it('checks the elements inside a complex value', async () => {
    const res = await api.newProject().post(
      '/Patient/$test-echo',
      params({ name: 'text', valueString: 'a' }, { name: 'coding', valueCoding: { system: 'http://x', code: 7 } }),
    );
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression[0]).toContain('Parameters.parameter[1].valueCoding');
  });

  it('decodes a resource-typed parameter and checks its type', async () => {
    const client = api.newProject();
    const ok = await client.post(
      '/Patient/$test-echo',
      params({ name: 'text', valueString: 'a' }, { name: 'patient', resource: { resourceType: 'Patient', name: [{ family: 'Doe' }] } }),
    );
    expect(outValue(ok.body, 'patientName')).toEqual([{ name: 'patientName', valueString: 'Doe' }]);
    const wrong = await client.post(
      '/Patient/$test-echo',
      params({ name: 'text', valueString: 'a' }, { name: 'patient', resource: { resourceType: 'Observation' } }),
    );
    expect(wrong.status).toBe(400);
    expect(wrong.body.issue[0].details.text).toContain('"patient"');
  });

  it('decodes parameters with parts and encodes them back', async () => {
    const res = await api.newProject().post(
      '/Patient/$test-echo',
      params(
        { name: 'text', valueString: 'a' },
        { name: 'pair', part: [{ name: 'key', valueCode: 'k1' }, { name: 'value', valueBoolean: true }] },
        { name: 'pair', part: [{ name: 'key', valueCode: 'k2' }, { name: 'value', valueCoding: { code: 'c' } }] },
      ),
    );
    expect(res.status).toBe(200);
    expect(outValue(res.body, 'pair')).toEqual([
      { name: 'pair', part: [{ name: 'key', valueCode: 'k1' }, { name: 'value', valueBoolean: true }] },
      { name: 'pair', part: [{ name: 'key', valueCode: 'k2' }, { name: 'value', valueCoding: { code: 'c' } }] },
    ]);
  });

  it('checks the parts of a parameter', async () => {
    const res = await api.newProject().post(
      '/Patient/$test-echo',
      params({ name: 'text', valueString: 'a' }, { name: 'pair', part: [{ name: 'value', valueBoolean: true }] }),
    );
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('"key"');
    expect(res.body.issue[0].expression).toEqual(['Parameters.parameter[1].part']);
  });
});

describe('output', () => {
  it('returns the resource itself for a single resource-typed return parameter', async () => {
    const client = api.newProject();
    const patient = await client.post('/Patient', { resourceType: 'Patient' });
    const res = await client.post(`/Patient/${patient.body.id}/$test-change`, params({ name: 'note', valueString: 'activate' }));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ resourceType: 'Patient', id: patient.body.id, active: true });
  });

  for (const mode of ['break-type', 'break-missing', 'break-unknown']) {
    it(`gives 500 when the handler's output breaks the definition (${mode})`, async () => {
      const res = await api.newProject().post('/Patient/$test-echo', params({ name: 'text', valueString: 'a' }, { name: 'mode', valueCode: mode }));
      expect(res.status).toBe(500);
      expect(res.body.issue[0].code).toBe('exception');
      expect(res.body.issue[0].details.text).toContain('$test-echo');
    });
  }
});
