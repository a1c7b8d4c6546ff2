import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';
import { addMemberClient, bearer, getJson, sendJson, tokenRequest } from './helpers.js';

const api = await useTestServer();
const LAUNCH_URI = 'https://app.example/launch?tenant=t1';
const REDIRECT_URI = 'https://app.example/callback';
const PASSWORD = 'correct horse battery staple';

const pkce = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

interface LaunchSetup {
  admin: ProjectClient;
  appId: string;
  patientId: string;
  encounterId: string;
  /** A Practitioner user of the project who signs in to the app. */
  email: string;
}

async function setup(app: Record<string, unknown> = { launchUri: LAUNCH_URI }): Promise<LaunchSetup> {
  const admin = api.newProject();
  const created = await admin.post('/ClientApplication', { resourceType: 'ClientApplication', name: 'launched app', redirectUri: REDIRECT_URI, ...app });
  expect(created.status).toBe(201);
  const patient = await admin.post('/Patient', patientBody());
  const encounter = await admin.post('/Encounter', {
    resourceType: 'Encounter',
    status: 'in-progress',
    class: { system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code: 'AMB' },
    subject: { reference: `Patient/${patient.body.id}` },
  });
  expect(encounter.status).toBe(201);
  const email = `${randomUUID()}@example.org`;
  const invited = await sendJson(
    api,
    'POST',
    `/admin/projects/${admin.projectId}/invite`,
    { resourceType: 'Practitioner', firstName: 'Ada', lastName: 'Lovelace', externalId: randomUUID(), email, password: PASSWORD },
    bearer(await admin.token()),
  );
  expect(invited.status, JSON.stringify(invited.body)).toBe(201);
  return { admin, appId: created.body.id, patientId: patient.body.id, encounterId: encounter.body.id, email };
}

const smartLaunch = (client: ProjectClient, appId: string, body: Record<string, unknown>) => client.post(`/ClientApplication/${appId}/$smart-launch`, body);

function parameter(body: any, name: string): string | undefined {
  const found = body.parameter?.find((p: any) => p.name === name);
  return found && (found.valueUri ?? found.valueId ?? found.valueString);
}

/** $smart-launch, then the launch id from its answer. */
async function launchFor(s: LaunchSetup, body: Record<string, unknown>): Promise<string> {
  const res = await smartLaunch(s.admin, s.appId, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return parameter(res.body, 'launch')!;
}

/** Sign-in through /auth/login with `launch`, then the code exchanged for tokens. */
async function signInWithLaunch(s: LaunchSetup, launch: string) {
  const { verifier, challenge } = pkce();
  const login = await sendJson(api, 'POST', '/auth/login', {
    email: s.email,
    password: PASSWORD,
    clientId: s.appId,
    launch,
    scope: 'launch openid offline',
    codeChallenge: challenge,
    codeChallengeMethod: 'S256',
  });
  if (login.status !== 200) return { login, tokens: undefined };
  const tokens = await tokenRequest(api, { grant_type: 'authorization_code', code: login.body.code, code_verifier: verifier, client_id: s.appId });
  return { login, tokens };
}

describe('ClientApplication/$smart-launch', () => {
  it("answers the app's launch URL with iss and launch, and records a SmartAppLaunch in the project", async () => {
    const s = await setup();
    const res = await smartLaunch(s.admin, s.appId, { patient: s.patientId, encounter: `Encounter/${s.encounterId}` });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.resourceType).toBe('Parameters');
    const url = new URL(parameter(res.body, 'url')!);
    const launch = parameter(res.body, 'launch')!;
    expect(url.origin + url.pathname).toBe('https://app.example/launch');
    expect(url.searchParams.get('tenant')).toBe('t1');
    expect(url.searchParams.get('iss')).toBe(parameter(res.body, 'iss'));
    expect(parameter(res.body, 'iss')).toBe(api.server.services.config.fhirBaseUrl);
    expect(url.searchParams.get('launch')).toBe(launch);
    const stored = await s.admin.get(`/SmartAppLaunch/${launch}`);
    expect(stored.status).toBe(200);
    expect(stored.body).toMatchObject({
      patient: { reference: `Patient/${s.patientId}` },
      encounter: { reference: `Encounter/${s.encounterId}` },
      meta: { project: s.admin.projectId },
    });
  });

  it("takes the patient from the encounter's subject when only the encounter is given", async () => {
    const s = await setup();
    const launch = await launchFor(s, { encounter: s.encounterId });
    const stored = await s.admin.get(`/SmartAppLaunch/${launch}`);
    expect(stored.body.patient).toEqual({ reference: `Patient/${s.patientId}` });
  });

  it('refuses a client without launchUri with 400', async () => {
    const s = await setup({});
    const res = await smartLaunch(s.admin, s.appId, { patient: s.patientId });
    expect(res.status).toBe(400);
    expect(res.body.issue[0]).toMatchObject({ code: 'invalid', expression: ['ClientApplication.launchUri'] });
    expect(res.body.issue[0].diagnostics ?? res.body.issue[0].details?.text).toMatch(/launchUri/);
  });

  it('refuses a call without patient or encounter with 400', async () => {
    const s = await setup();
    const res = await smartLaunch(s.admin, s.appId, { resourceType: 'Parameters' });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toMatch(/patient.*encounter/);
  });

  it("refuses another project's patient, an unknown one, and a reference of another type with 400", async () => {
    const s = await setup();
    const other = api.newProject();
    const theirs = await other.post('/Patient', patientBody());
    for (const patient of [theirs.body.id, randomUUID(), `Observation/${s.patientId}`]) {
      const res = await smartLaunch(s.admin, s.appId, { patient });
      expect(res.status, patient).toBe(400);
      expect(res.body.issue[0].code).toBe('invalid');
    }
  });

  it("refuses an encounter that is not the patient's with 400", async () => {
    const s = await setup();
    const otherPatient = await s.admin.post('/Patient', patientBody());
    const res = await smartLaunch(s.admin, s.appId, { patient: otherPatient.body.id, encounter: s.encounterId });
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body)).toMatch(/not an encounter of/);
  });

  it("answers 404 for another project's ClientApplication", async () => {
    const s = await setup();
    const other = api.newProject();
    const res = await smartLaunch(other, s.appId, { patient: s.patientId });
    expect(res.status).toBe(404);
  });

  it('refuses a member whose access policy does not allow SmartAppLaunch with 403', async () => {
    const s = await setup();
    const policy = await s.admin.post('/AccessPolicy', {
      resourceType: 'AccessPolicy',
      name: 'clinical reads',
      resource: [{ resourceType: 'Patient' }, { resourceType: 'Encounter' }, { resourceType: 'ClientApplication', readonly: true }],
    });
    const member = await addMemberClient(api, s.admin, { accessPolicy: `AccessPolicy/${policy.body.id}` });
    const res = await sendJson(api, 'POST', `/fhir/R4/ClientApplication/${s.appId}/$smart-launch`, { patient: s.patientId }, bearer(member.token));
    expect(res.status).toBe(403);
    expect(res.body.resourceType).toBe('OperationOutcome');
  });
});

describe('signing in with a launch', () => {
  it('POST /auth/login with launch: the token response and the access token carry patient and encounter; refresh keeps them', async () => {
    const s = await setup();
    const launch = await launchFor(s, { patient: s.patientId, encounter: s.encounterId });
    const { login, tokens } = await signInWithLaunch(s, launch);
    expect(login.status, JSON.stringify(login.body)).toBe(200);
    expect(tokens!.status, JSON.stringify(tokens!.body)).toBe(200);
    expect(tokens!.body).toMatchObject({ patient: s.patientId, encounter: s.encounterId, scope: 'launch openid offline' });
    expect(decodeJwt(tokens!.body.access_token)).toMatchObject({ patient: s.patientId, encounter: s.encounterId });
    const stored = await api.superAdmin.get(`/Login/${login.body.login}`);
    expect(stored.body.launch).toEqual({ reference: `SmartAppLaunch/${launch}` });
    const refreshed = await tokenRequest(api, { grant_type: 'refresh_token', refresh_token: tokens!.body.refresh_token });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body).toMatchObject({ patient: s.patientId, encounter: s.encounterId });
    expect(decodeJwt(refreshed.body.access_token)).toMatchObject({ patient: s.patientId, encounter: s.encounterId });
  });

  it('GET then POST /oauth2/authorize with launch (EHR launch): the code gives tokens with the launch context', async () => {
    const s = await setup();
    const launch = await launchFor(s, { patient: `Patient/${s.patientId}` });
    const { verifier, challenge } = pkce();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: s.appId,
      redirect_uri: REDIRECT_URI,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'st',
      scope: 'launch patient/*.rs openid',
      launch,
    });
    const form = await api.raw(`/oauth2/authorize?${query}`);
    expect(form.status).toBe(200);
    expect(await form.text()).toContain(`name="launch" value="${launch}"`);
    const post = await api.raw('/oauth2/authorize', {
      method: 'POST',
      redirect: 'manual',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...Object.fromEntries(query), email: s.email, password: PASSWORD }),
    });
    expect(post.status).toBe(302);
    const location = new URL(post.headers.get('location')!);
    expect(location.searchParams.get('state')).toBe('st');
    const tokens = await tokenRequest(api, { grant_type: 'authorization_code', code: location.searchParams.get('code')!, code_verifier: verifier, client_id: s.appId });
    expect(tokens.status, JSON.stringify(tokens.body)).toBe(200);
    expect(tokens.body.patient).toBe(s.patientId);
    expect(tokens.body.encounter).toBeUndefined();
    expect(decodeJwt(tokens.body.access_token).patient).toBe(s.patientId);
  });

  it('GET /oauth2/authorize with an unknown launch redirects back with invalid_request', async () => {
    const s = await setup();
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: s.appId,
      redirect_uri: REDIRECT_URI,
      code_challenge: pkce().challenge,
      state: 'st',
      launch: randomUUID(),
    });
    const res = await api.raw(`/oauth2/authorize?${query}`, { redirect: 'manual' });
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get('location')!);
    expect(location.searchParams.get('error')).toBe('invalid_request');
    expect(location.searchParams.get('error_description')).toMatch(/launch is unknown/);
    expect(location.searchParams.get('state')).toBe('st');
  });

  it('refuses a launch used a second time', async () => {
    const s = await setup();
    const launch = await launchFor(s, { patient: s.patientId });
    expect((await signInWithLaunch(s, launch)).tokens?.status).toBe(200);
    const again = await signInWithLaunch(s, launch);
    expect(again.login.status).toBe(400);
    expect(JSON.stringify(again.login.body)).toMatch(/already used/);
  });

  it('refuses an expired launch', async () => {
    const s = await setup();
    const launch = await launchFor(s, { patient: s.patientId });
    // Ten minutes and more ago, as if it were made then.
    const old = new Date(Date.now() - 11 * 60_000).toISOString();
    await api.server.services.db.execute(
      `UPDATE resource SET content = jsonb_set(content::jsonb, '{meta,lastUpdated}', to_jsonb($2::text))::json WHERE "resourceType" = 'SmartAppLaunch' AND id = $1`,
      [launch, old],
    );
    const res = await signInWithLaunch(s, launch);
    expect(res.login.status).toBe(400);
    expect(JSON.stringify(res.login.body)).toMatch(/expired/);
  });

  it("refuses another project's launch, and an unknown one", async () => {
    const s = await setup();
    const elsewhere = await setup();
    const theirs = await launchFor(elsewhere, { patient: elsewhere.patientId });
    const res = await signInWithLaunch(s, theirs);
    expect(res.login.status).toBe(400);
    expect(JSON.stringify(res.login.body)).toMatch(/project you are not a member of/);
    const unknown = await signInWithLaunch(s, randomUUID());
    expect(unknown.login.status).toBe(400);
    expect(JSON.stringify(unknown.login.body)).toMatch(/launch is unknown/);
  });

  it('prefers the launch patient over the Patient-profile rule', async () => {
    const s = await setup();
    const email = `${randomUUID()}@example.org`;
    const invited = await sendJson(
      api,
      'POST',
      `/admin/projects/${s.admin.projectId}/invite`,
      { resourceType: 'Patient', firstName: 'Pat', lastName: 'Ient', externalId: randomUUID(), email, password: PASSWORD },
      bearer(await s.admin.token()),
    );
    expect(invited.status).toBe(201);
    const ownId = invited.body.profile.reference.split('/')[1];
    const launch = await launchFor(s, { patient: s.patientId });
    const { tokens } = await signInWithLaunch({ ...s, email }, launch);
    expect(tokens!.status).toBe(200);
    expect(tokens!.body.patient).toBe(s.patientId);
    expect(tokens!.body.patient).not.toBe(ownId);
  });
});

describe('/.well-known/smart-configuration for EHR launch', () => {
  it('lists launch-ehr and the EHR context capabilities', async () => {
    const res = await getJson(api, '/.well-known/smart-configuration');
    expect(res.body.capabilities).toEqual(expect.arrayContaining(['launch-ehr', 'context-ehr-patient', 'context-ehr-encounter']));
  });
});
