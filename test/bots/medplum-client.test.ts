import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { deployedBot, diagnostics, execute } from './helpers.js';

const api = await useTestServer();

/** A bot as written for Medplum: CommonJS as its bundler emits it, using @medplum/core and the medplum client. */
const MEDPLUM_BOT = `
"use strict";
const { createReference, getReferenceString } = require("@medplum/core");
exports.handler = async function (medplum, event) {
  const patient = await medplum.createResource({ resourceType: "Patient", name: [{ family: event.input.family, given: ["Bot"] }] });
  const observation = await medplum.createResource({
    resourceType: "Observation", status: "final", code: { text: "glucose" }, subject: createReference(patient),
    valueQuantity: { value: event.input.value, unit: "mg/dL" },
  });
  const subject = await medplum.readReference(observation.subject);
  const found = await medplum.searchResources("Patient", { family: event.input.family });
  const batch = await medplum.executeBatch({
    resourceType: "Bundle", type: "batch",
    entry: [{ request: { method: "GET", url: getReferenceString(patient) } }, { request: { method: "GET", url: "Observation?subject=" + getReferenceString(patient) } }],
  });
  const upserted = await medplum.upsertResource({ resourceType: "Patient", identifier: [{ system: "urn:bot", value: event.input.family }], name: [{ family: "Upserted" }] }, { identifier: "urn:bot|" + event.input.family });
  const graph = await medplum.graphql("{ PatientList(family: \\"" + event.input.family + "\\") { id } }");
  return {
    patient: getReferenceString(patient),
    subjectFamily: subject.name[0].family,
    found: found.length,
    batchStatuses: batch.entry.map((e) => e.response.status),
    upserted: upserted.name[0].family,
    graphCount: graph.data.PatientList.length,
  };
};
`;

describe('a bot written for Medplum', () => {
  it('runs unchanged: its client creates, reads, searches, batches, upserts and queries GraphQL', async () => {
    const client = api.newProject();
    const id = await deployedBot(client, MEDPLUM_BOT);
    const answer = await execute(client, id, { family: 'Glucoski', value: 105 });
    expect(answer.status, answer.text).toBe(200);
    expect(answer.body).toMatchObject({ subjectFamily: 'Glucoski', found: 1, batchStatuses: ['200 OK', '200 OK'], upserted: 'Upserted', graphCount: 1 });
    const stored = await client.get(`/${answer.body.patient}`);
    expect(stored.status).toBe(200);
    expect(stored.body.name[0].family).toBe('Glucoski');
  });

  it('writes in the bot project', async () => {
    const client = api.newProject();
    const id = await deployedBot(client, 'exports.handler = async (medplum) => medplum.createResource({ resourceType: "Patient" });');
    const answer = await execute(client, id, {});
    expect(answer.body.meta.project).toBe(client.projectId);
  });

  it('is bound by the access policy of its membership', async () => {
    const client = api.newProject();
    const id = await deployedBot(client, 'exports.handler = async (medplum) => medplum.createResource({ resourceType: "Patient" });');
    const policy = await client.post('/AccessPolicy', { resourceType: 'AccessPolicy', name: 'observations only', resource: [{ resourceType: 'Observation' }] });
    const memberships = await client.get(`/ProjectMembership?profile=Bot/${id}`);
    expect(memberships.body.entry).toHaveLength(1);
    const membership = memberships.body.entry[0].resource;
    const updated = await client.put(`/ProjectMembership/${membership.id}`, { ...membership, accessPolicy: { reference: `AccessPolicy/${policy.body.id}` } });
    expect(updated.status, updated.text).toBe(200);
    const answer = await execute(client, id, {});
    expect(answer.status).toBe(400);
    expect(diagnostics(answer.body)).toMatch(/Patient/);
  });
});
