import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer } from '../helpers/server.js';
import { tokenRequest, getJson, addMemberClient, sendJson } from './helpers.js';
import { graphql, onlyError } from '../graphql/resource-helpers.js';
import { expectScopeRefusal, idsOf, observationOf, patientUser, scopedClient, scopedMember } from './smart-helpers.js';

const api = await useTestServer();

describe('SMART scopes: granting', () => {
  it('the token response and the token claim say exactly what was granted (unknown scopes dropped)', async () => {
    const admin = api.newProject();
    const { token } = await scopedMember(api, admin, 'user/Observation.rs openid launch/patient made-up-scope user/Patient.read');
    expect(token.scope).toBe('user/Observation.rs openid launch/patient user/Patient.read');
    expect(decodeJwt(token.access_token).scope).toBe(token.scope);
  });

  it('refuses a malformed resource scope with 400 invalid_scope', async () => {
    const admin = api.newProject();
    const member = await addMemberClient(api, admin);
    for (const scope of ['patient/Observation.sr', 'user/Observation.xyz', 'user/NoSuchType.rs', 'user/Observation.rs?nosuchparam=x']) {
      const res = await tokenRequest(api, { grant_type: 'client_credentials', client_id: member.clientId, client_secret: member.secret, scope });
      expect(res.status, scope).toBe(400);
      expect(res.body.error).toBe('invalid_scope');
      expect(res.body.error_description).toContain(scope.split('?')[0].split('.')[0]);
    }
  });

  it('grants a client signing in for itself only system/ scopes, leaving out user/ and patient/ ones', async () => {
    const admin = api.newProject();
    const { token, client } = await scopedClient(api, admin, 'system/Patient.rs user/Observation.rs patient/Condition.rs openid');
    expect(token.scope).toBe('system/Patient.rs openid');
    expect(decodeJwt(token.access_token).scope).toBe('system/Patient.rs openid');
    expectScopeRefusal(await client.get('/Observation'), 'system/Observation.s');
  });

  it('refuses client credentials asking only for user/ or patient/ resource scopes with invalid_scope', async () => {
    const admin = api.newProject();
    const member = await addMemberClient(api, admin);
    const res = await tokenRequest(api, { grant_type: 'client_credentials', client_id: member.clientId, client_secret: member.secret, scope: 'openid user/Patient.rs patient/Observation.rs' });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_scope');
    expect(res.body.error_description).toContain('system/ scopes only');
  });

  it('grants a token acting for a user no system/ scopes', async () => {
    const admin = api.newProject();
    const user = await patientUser(api, admin);
    const { token } = await user.client('patient/Observation.rs system/Patient.rs launch/patient');
    expect(token.scope).toBe('patient/Observation.rs launch/patient');
  });

  it('refuses a user\'s sign-in asking only for system/ resource scopes, rather than granting the membership\'s whole access', async () => {
    const admin = api.newProject();
    const user = await patientUser(api, admin);
    const res = await user.signIn('openid system/*.*');
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_scope');
    expect(res.body.error_description).toContain('system/ ones are for client credentials');
  });

  it('grants the same on the password grant, whose default stays openid offline', async () => {
    const admin = api.newProject();
    const user = await patientUser(api, admin);
    expect((await user.client('patient/Observation.rs launch/patient offline_access')).token.scope).toBe('patient/Observation.rs launch/patient offline_access');
    const res = await tokenRequest(api, { grant_type: 'password', username: user.email, password: user.password, project: admin.projectId });
    expect(res.status).toBe(200);
    expect(res.body.scope).toBe('openid offline');
  });

  it('a refresh may narrow the scope, never widen it', async () => {
    const admin = api.newProject();
    const user = await patientUser(api, admin);
    const { token } = await user.client('patient/Observation.rs patient/Patient.rs openid offline');
    const narrowed = await tokenRequest(api, { grant_type: 'refresh_token', refresh_token: token.refresh_token, scope: 'patient/Observation.r' });
    expect(narrowed.status, JSON.stringify(narrowed.body)).toBe(200);
    expect(narrowed.body.scope).toBe('patient/Observation.r');
    expect(decodeJwt(narrowed.body.access_token).scope).toBe('patient/Observation.r');
    for (const scope of ['patient/Observation.cruds', 'user/Observation.rs', 'patient/Condition.rs', 'openid']) {
      const wider = await tokenRequest(api, { grant_type: 'refresh_token', refresh_token: narrowed.body.refresh_token, scope });
      expect(wider.status, scope).toBe(400);
      expect(wider.body.error).toBe('invalid_scope');
    }
  });

  it('a token without resource scopes keeps its membership access', async () => {
    const admin = api.newProject();
    const { client, token } = await scopedMember(api, admin, 'openid offline');
    expect(token.scope).toBe('openid offline');
    expect((await client.post('/Observation', observationOf('x'))).status).toBe(201);
    expect((await client.get('/Patient')).status).toBe(200);
  });
});

describe('SMART scopes: interactions', () => {
  it('the example of the report: patient/Patient.read launch/patient cannot create an Observation (403 naming the scope)', async () => {
    const admin = api.newProject();
    const user = await patientUser(api, admin);
    const { client } = await user.client('patient/Patient.read launch/patient');
    const res = await client.post('/Observation', observationOf(user.patientId));
    expectScopeRefusal(res, 'patient/Observation.c or user/Observation.c');
    expect((await client.get(`/Patient/${user.patientId}`)).status).toBe(200);
  });

  it('v2 letters: each interaction needs its own permission', async () => {
    const admin = api.newProject();
    const patient = (await admin.post('/Patient', patientBody())).body;
    const { client: reader } = await scopedMember(api, admin, 'user/Patient.r');
    expect((await reader.get(`/Patient/${patient.id}`)).status).toBe(200);
    expect((await reader.get(`/Patient/${patient.id}/_history/${patient.meta.versionId}`)).status).toBe(200);
    expect((await reader.get(`/Patient/${patient.id}/_history`)).status).toBe(200);
    expectScopeRefusal(await reader.get('/Patient'), 'user/Patient.s');
    expectScopeRefusal(await reader.post('/Patient', patientBody()), 'user/Patient.c');
    expectScopeRefusal(await reader.put(`/Patient/${patient.id}`, { ...patient, gender: 'female' }), 'user/Patient.u');
    const patch = [{ op: 'replace', path: '/gender', value: 'female' }];
    expectScopeRefusal(await reader.request('PATCH', `/Patient/${patient.id}`, patch, { 'Content-Type': 'application/json-patch+json' }), 'user/Patient.u');
    expectScopeRefusal(await reader.request('DELETE', `/Patient/${patient.id}`), 'user/Patient.d');
    expectScopeRefusal(await reader.get(`/Observation?subject=Patient/${patient.id}`), 'user/Observation.s');
  });

  it('v2 letters: cruds allows every interaction', async () => {
    const admin = api.newProject();
    const { client } = await scopedMember(api, admin, 'user/Patient.cruds');
    const created = await client.post('/Patient', patientBody());
    expect(created.status).toBe(201);
    expect((await client.get('/Patient')).status).toBe(200);
    expect((await client.put(`/Patient/${created.body.id}`, { ...created.body, gender: 'female' })).status).toBe(200);
    const patch = [{ op: 'replace', path: '/gender', value: 'other' }];
    expect((await client.request('PATCH', `/Patient/${created.body.id}`, patch, { 'Content-Type': 'application/json-patch+json' })).status).toBe(200);
    expect((await client.request('DELETE', `/Patient/${created.body.id}`)).status).toBe(200);
  });

  it('v1 read is r and s; v1 write is c, u and d without reading', async () => {
    const admin = api.newProject();
    const patient = (await admin.post('/Patient', patientBody())).body;
    const { client: reader } = await scopedMember(api, admin, 'user/Patient.read');
    expect((await reader.get(`/Patient/${patient.id}`)).status).toBe(200);
    expect(idsOf((await reader.get('/Patient')).body)).toEqual([patient.id]);
    expectScopeRefusal(await reader.post('/Patient', patientBody()), 'user/Patient.c');
    const { client: writer } = await scopedClient(api, admin, 'system/Patient.write');
    expect((await writer.post('/Patient', patientBody())).status).toBe(201);
    expectScopeRefusal(await writer.get(`/Patient/${patient.id}`), 'system/Patient.r');
  });

  it('a wildcard type scope covers every type; system/*.* keeps full access', async () => {
    const admin = api.newProject();
    const { client: reader } = await scopedMember(api, admin, 'user/*.rs');
    expect((await reader.get('/Observation')).status).toBe(200);
    expect((await reader.get('/Patient')).status).toBe(200);
    expectScopeRefusal(await reader.post('/Patient', patientBody()), 'user/Patient.c');
    const { client: all } = await scopedClient(api, admin, 'system/*.*');
    expect((await all.post('/Patient', patientBody())).status).toBe(201);
  });

  it('a system search must name its types, each searchable', async () => {
    const admin = api.newProject();
    const { client } = await scopedMember(api, admin, 'user/Patient.rs');
    expect((await client.get('/?_type=Patient')).status).toBe(200);
    expect((await client.get('/')).status).toBe(403);
    expectScopeRefusal(await client.get('/?_type=Patient,Observation'), 'user/Observation.s');
  });

  it('_include leaves out resources of types the scopes do not allow', async () => {
    const admin = api.newProject();
    const patient = (await admin.post('/Patient', patientBody())).body;
    await admin.post('/Observation', observationOf(patient.id));
    const { client } = await scopedMember(api, admin, 'user/Observation.rs');
    const res = await client.get('/Observation?_include=Observation:subject');
    expect(res.status).toBe(200);
    expect(res.body.entry.map((e: { resource: { resourceType: string } }) => e.resource.resourceType)).toEqual(['Observation']);
  });

  it('refuses a Bundle entry its scopes do not allow, and runs those they do', async () => {
    const admin = api.newProject();
    const { client } = await scopedMember(api, admin, 'user/Patient.cruds');
    const bundle = (type: string) => ({
      resourceType: 'Bundle',
      type,
      entry: [
        { request: { method: 'POST', url: 'Patient' }, resource: patientBody() },
        { request: { method: 'POST', url: 'Observation' }, resource: observationOf('x') },
      ],
    });
    const res = await client.post('/', bundle('batch'));
    expect(res.status).toBe(200);
    expect(res.body.entry[0].response.status).toMatch(/^201/);
    expect(res.body.entry[1].response.status).toMatch(/^403/);
    expect(res.body.entry[1].response.outcome.issue[0].details.text).toContain('user/Observation.c');
    const transaction = await client.post('/', bundle('transaction'));
    expectScopeRefusal(transaction, 'user/Observation.c');
  });

  it('refuses GraphQL fields its scopes do not allow: searches, reads and mutations', async () => {
    const admin = api.newProject();
    const patient = (await admin.post('/Patient', patientBody())).body;
    const { client } = await scopedMember(api, admin, 'user/Patient.r');
    const read = await graphql(api, client, `query ($id: ID!) { Patient(id: $id) { id } }`, { id: patient.id });
    expect(read.body.data?.Patient?.id, JSON.stringify(read.body)).toBe(patient.id);
    const list = onlyError(await graphql(api, client, `{ PatientList { id } }`));
    expect(list.code).toBe('forbidden');
    expect(list.text).toContain('user/Patient.s');
    const create = onlyError(await graphql(api, client, `mutation { PatientCreate(res: { gender: "female" }) { id } }`));
    expect(create.code).toBe('forbidden');
    expect(create.text).toContain('user/Patient.c');
    const other = onlyError(await graphql(api, client, `{ ObservationList { id } }`));
    expect(other.text).toContain('user/Observation.s');
  });

  it('refuses operations: a reading one needs r on its type, a changing one u', async () => {
    const admin = api.newProject();
    const { client } = await scopedMember(api, admin, 'user/Observation.rs user/CodeSystem.rs');
    const expand = await client.get('/ValueSet/$expand?url=http://hl7.org/fhir/ValueSet/administrative-gender');
    expectScopeRefusal(expand, 'user/ValueSet.r');
    const imported = await client.post('/CodeSystem/$import', { resourceType: 'Parameters', parameter: [{ name: 'system', valueUri: 'http://example.org/cs' }] });
    expectScopeRefusal(imported, 'user/CodeSystem.u');
    const { client: reader } = await scopedMember(api, admin, 'user/ValueSet.rs');
    expect((await reader.get('/ValueSet/$expand?url=http://hl7.org/fhir/ValueSet/administrative-gender')).status).not.toBe(403);
  });
});

describe('SMART discovery', () => {
  it('/.well-known/smart-configuration lists what works', async () => {
    const res = await getJson(api, '/.well-known/smart-configuration');
    expect(res.status).toBe(200);
    expect(res.body.capabilities).toEqual(
      expect.arrayContaining(['launch-standalone', 'client-public', 'client-confidential-symmetric', 'permission-v1', 'permission-v2', 'permission-patient', 'permission-user', 'context-standalone-patient']),
    );
    expect(res.body.capabilities).not.toContain('sso-openid-connect');
    expect(res.body.code_challenge_methods_supported).toEqual(['S256']);
    expect(res.body.scopes_supported).toEqual(expect.arrayContaining(['openid', 'launch/patient', 'offline_access', 'patient/*.rs', 'user/*.cruds']));
    expect(res.body.token_endpoint_auth_methods_supported).toEqual(['client_secret_basic', 'client_secret_post', 'private_key_jwt']);
  });

  it('the CapabilityStatement names SMART-on-FHIR security with its OAuth URIs', async () => {
    const res = await getJson(api, '/fhir/R4/metadata');
    const security = res.body.rest[0].security;
    expect(security.service[0].coding[0].code).toBe('SMART-on-FHIR');
    const uris = Object.fromEntries(security.extension[0].extension.map((e: { url: string; valueUri: string }) => [e.url, e.valueUri]));
    expect(uris.authorize).toMatch(/\/oauth2\/authorize$/);
    expect(uris.token).toMatch(/\/oauth2\/token$/);
    expect(security.description).toContain('smart-configuration');
  });
});

describe('SMART scopes at the authorization endpoints', () => {
  it('/oauth2/authorize answers a malformed scope with a redirect carrying invalid_scope', async () => {
    const admin = api.newProject();
    const app = await admin.post('/ClientApplication', { resourceType: 'ClientApplication', name: 'app', redirectUri: 'https://app.example/cb' });
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: app.body.id,
      redirect_uri: 'https://app.example/cb',
      scope: 'patient/Observation.xyz launch/patient',
      state: 's1',
      code_challenge: 'x'.repeat(43),
      code_challenge_method: 'S256',
    });
    const res = await api.raw(`/oauth2/authorize?${query}`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get('location')!);
    expect(location.searchParams.get('error')).toBe('invalid_scope');
    expect(location.searchParams.get('state')).toBe('s1');
  });

  it('/auth/login refuses a malformed scope with 400', async () => {
    const admin = api.newProject();
    const user = await patientUser(api, admin);
    const res = await sendJson(api, 'POST', '/auth/login', { email: user.email, password: user.password, scope: 'user/Observation.sr' });
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('user/Observation.sr');
  });
});
