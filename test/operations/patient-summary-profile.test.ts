import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer } from '../helpers/server.js';
import { create } from '../search-api/helpers.js';

/** The IPS `$summary` operation's `profile` parameter: the IPS Bundle profile is accepted, any other refused. */

const api = await useTestServer();

const IPS_BUNDLE = 'http://hl7.org/fhir/uv/ips/StructureDefinition/Bundle-uv-ips';

describe('Patient/$summary profile', () => {
  it('accepts the IPS Bundle profile, with or without its version, in GET and POST', async () => {
    const p = api.newProject();
    const patient = await create(p, patientBody());
    for (const profile of [IPS_BUNDLE, `${IPS_BUNDLE}|1.1.0`]) {
      const res = await p.get(`/Patient/${patient}/$summary?profile=${encodeURIComponent(profile)}`);
      expect(res.status, res.text).toBe(200);
      expect(res.body.type).toBe('document');
    }
    const posted = await p.post(`/Patient/${patient}/$summary`, { resourceType: 'Parameters', parameter: [{ name: 'profile', valueCanonical: IPS_BUNDLE }] });
    expect(posted.status, posted.text).toBe(200);
  });

  it('refuses another profile with a 400 naming the one the summary follows', async () => {
    const p = api.newProject();
    const patient = await create(p, patientBody());
    const res = await p.get(`/Patient/${patient}/$summary?profile=${encodeURIComponent('http://example.org/fhir/StructureDefinition/my-ips')}`);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['profile']);
    expect(res.body.issue[0].details.text).toBe(`profile http://example.org/fhir/StructureDefinition/my-ips is not offered: the summary follows IPS 1.1.0, profile ${IPS_BUNDLE}`);
  });

  it('refuses another version of the IPS Bundle profile', async () => {
    const p = api.newProject();
    const patient = await create(p, patientBody());
    const res = await p.get(`/Patient/${patient}/$summary?profile=${encodeURIComponent(`${IPS_BUNDLE}|2.0.0`)}`);
    expect(res.status).toBe(400);
  });
});
