import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { addMemberClient } from '../auth/helpers.js';
import { projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, found, includeRefs } from './helpers.js';
import { graphql } from '../graphql/resource-helpers.js';

/**
 * Chains and `_has` look into other types: a caller may search through a type only when its
 * AccessPolicy lets it read that type, and only through the resources of it that its criteria let
 * it read, or the search would tell what it may not read.
 */
const api = await useTestServer();

function family(): string {
  return `Access${randomUUID().replace(/-/g, '').slice(0, 12)}`;
}

async function memberAllowed(admin: ProjectClient, types: readonly string[], criteria: Record<string, string> = {}): Promise<ProjectClient> {
  const policy = await admin.post('/AccessPolicy', {
    resourceType: 'AccessPolicy',
    name: types.join(' and '),
    resource: types.map((resourceType) => ({ resourceType, readonly: true, ...(criteria[resourceType] && { criteria: criteria[resourceType] }) })),
  });
  expect(policy.status, policy.text).toBe(201);
  const member = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy.body.id}` });
  return projectClient(api.fhir, admin.projectId, async () => member.token);
}

async function observationAbout(admin: ProjectClient, subject: string, code: string, status = 'final'): Promise<string> {
  const coding = [{ system: 'http://example.org/codes', code }];
  return create(admin, { resourceType: 'Observation', status, code: { coding }, subject: { reference: subject } });
}

describe('chains and _has through types the caller may not read', () => {
  it('refuses a _has through a type the AccessPolicy does not allow', async () => {
    const name = family();
    const admin = api.newProject();
    const patient = await create(admin, { resourceType: 'Patient', name: [{ family: name }] });
    await observationAbout(admin, `Patient/${patient}`, 'secret');
    const member = await memberAllowed(admin, ['Patient']);
    const res = await member.get(`/Patient?_has:Observation:subject:code=http://example.org/codes|secret&name=${name}`);
    expect(res.status).toBe(403);
    expect(res.body.issue[0].code).toBe('forbidden');
  });

  it('refuses a typed chain into a type the AccessPolicy does not allow', async () => {
    const name = family();
    const admin = api.newProject();
    const patient = await create(admin, { resourceType: 'Patient', name: [{ family: name }] });
    await observationAbout(admin, `Patient/${patient}`, 'any');
    const member = await memberAllowed(admin, ['Observation']);
    const res = await member.get(`/Observation?subject:Patient.name=${name}`);
    expect(res.status).toBe(403);
    expect(res.body.issue[0].code).toBe('forbidden');
  });

  it('looks an untyped chain up only in the target types the caller may read', async () => {
    const name = family();
    const admin = api.newProject();
    const patient = await create(admin, { resourceType: 'Patient', name: [{ family: name }] });
    const location = await create(admin, { resourceType: 'Location', name });
    const aboutPatient = await observationAbout(admin, `Patient/${patient}`, 'any');
    await observationAbout(admin, `Location/${location}`, 'any');
    const member = await memberAllowed(admin, ['Observation', 'Patient']);
    expect(await found(member, `/Observation?subject.name=${name}`)).toEqual([aboutPatient]);
  });
});

/**
 * Two Patients of one name, one managed by the organization the member's Patient criteria allow,
 * each the subject of an Observation of a code of their own; the member reads every Observation.
 */
async function patientsOfTwoOrganizations() {
  const name = family();
  const admin = api.newProject();
  const allowedOrg = await create(admin, { resourceType: 'Organization', name: 'A' });
  const otherOrg = await create(admin, { resourceType: 'Organization', name: 'B' });
  const patientOf = (org: string) =>
    create(admin, { resourceType: 'Patient', name: [{ family: name }], managingOrganization: { reference: `Organization/${org}` } });
  const [allowed, hidden] = [await patientOf(allowedOrg), await patientOf(otherOrg)];
  const aboutAllowed = await observationAbout(admin, `Patient/${allowed}`, name);
  await observationAbout(admin, `Patient/${hidden}`, name);
  const member = await memberAllowed(admin, ['Observation', 'Patient'], { Patient: `Patient?organization=Organization/${allowedOrg}` });
  return { name, member, allowed, aboutAllowed };
}

/** Two Patients of one name, each the subject of an Observation of one code; the member's Observation criteria allow only the final one. */
async function observationsOfTwoStatuses() {
  const name = family();
  const admin = api.newProject();
  const withFinal = await create(admin, { resourceType: 'Patient', name: [{ family: name }] });
  const withPreliminary = await create(admin, { resourceType: 'Patient', name: [{ family: name }] });
  await observationAbout(admin, `Patient/${withFinal}`, name, 'final');
  await observationAbout(admin, `Patient/${withPreliminary}`, name, 'preliminary');
  const member = await memberAllowed(admin, ['Observation', 'Patient'], { Observation: 'Observation?status=final' });
  return { name, member, withFinal };
}

describe('chains and _has through resources the AccessPolicy criteria exclude', () => {
  it('a chain matches only through targets the criteria let the caller read', async () => {
    const { name, member, aboutAllowed } = await patientsOfTwoOrganizations();
    expect(await found(member, `/Observation?subject:Patient.name=${name}`)).toEqual([aboutAllowed]);
  });

  it('a chain tested on each resource (its target condition not index rows) matches only through targets the criteria allow', async () => {
    const { name, member, aboutAllowed } = await patientsOfTwoOrganizations();
    expect(await found(member, `/Observation?code=http://example.org/codes|${name}&subject:Patient._lastUpdated=gt2000-01-01`)).toEqual([aboutAllowed]);
  });

  it('a chain of two levels matches only through second-level targets the criteria allow', async () => {
    const name = family();
    const admin = api.newProject();
    const organizationOf = (value: string) => create(admin, { resourceType: 'Organization', name, identifier: [{ system: 'http://example.org/orgs', value }] });
    const patientOf = async (org: string) => create(admin, { resourceType: 'Patient', managingOrganization: { reference: `Organization/${org}` } });
    const aboutAllowed = await observationAbout(admin, `Patient/${await patientOf(await organizationOf('allowed'))}`, name);
    await observationAbout(admin, `Patient/${await patientOf(await organizationOf('other'))}`, name);
    const criteria = { Organization: 'Organization?identifier=http://example.org/orgs|allowed' };
    const member = await memberAllowed(admin, ['Observation', 'Patient', 'Organization'], criteria);
    expect(await found(member, `/Observation?subject:Patient.organization.name=${name}`)).toEqual([aboutAllowed]);
  });

  it('an exact count through a chain counts only what the criteria let the caller read', async () => {
    const { name, member } = await patientsOfTwoOrganizations();
    const res = await member.get(`/Observation?subject:Patient.name=${name}&_summary=count`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.total).toBe(1);
  });

  it('a chain through GraphQL matches only through targets the criteria allow', async () => {
    const { name, member, aboutAllowed } = await patientsOfTwoOrganizations();
    const query = `query ($name: String!) { ObservationList(_params: [{ name: "subject:Patient.name", value: $name }]) { id } }`;
    const res = await graphql(api, member, query, { name });
    expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
    expect(res.body.data.ObservationList).toEqual([{ id: aboutAllowed }]);
  });

  it('_include brings only the targets the criteria let the caller read', async () => {
    const { name, member, allowed } = await patientsOfTwoOrganizations();
    expect(includeRefs(await member.get(`/Observation?code=http://example.org/codes|${name}&_include=Observation:subject`))).toEqual([`Patient/${allowed}`]);
  });

  it('a _has matches only through referencing resources the criteria let the caller read', async () => {
    const { name, member, withFinal } = await observationsOfTwoStatuses();
    expect(await found(member, `/Patient?_has:Observation:subject:code=http://example.org/codes|${name}`)).toEqual([withFinal]);
  });

  it('a _has tested on each resource matches only through referencing resources the criteria allow', async () => {
    const { name, member, withFinal } = await observationsOfTwoStatuses();
    expect(await found(member, `/Patient?name=${name}&_has:Observation:subject:_lastUpdated=gt2000-01-01`)).toEqual([withFinal]);
  });

  it('an exact count through a _has counts only what the criteria let the caller read', async () => {
    const { name, member } = await observationsOfTwoStatuses();
    const res = await member.get(`/Patient?_has:Observation:subject:code=http://example.org/codes|${name}&_summary=count`);
    expect(res.status, res.text).toBe(200);
    expect(res.body.total).toBe(1);
  });

  it('a _has through GraphQL matches only through referencing resources the criteria allow', async () => {
    const { name, member, withFinal } = await observationsOfTwoStatuses();
    const query = `query ($code: String!) { PatientList(_params: [{ name: "_has:Observation:subject:code", value: $code }]) { id } }`;
    const res = await graphql(api, member, query, { code: `http://example.org/codes|${name}` });
    expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
    expect(res.body.data.PatientList).toEqual([{ id: withFinal }]);
  });
});
