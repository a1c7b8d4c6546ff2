import { describe, expect, it } from 'vitest';
import { FlintGraphQLClient, FlintGraphQLError } from '../../examples/typed-client/client.js';
import { CreatePatientDocument, LookupCodeDocument, ObservationsWithSubjectsDocument, PatientByIdDocument } from '../../examples/typed-client/generated.js';
import { useTestServer } from '../helpers/server.js';

const api = await useTestServer();

/** The example's client, acting in a new project; `project` is the same project's REST client. */
async function exampleClient() {
  const project = api.newProject();
  return { client: new FlintGraphQLClient(api.fhir, await project.token()), project };
}

describe('the typed client example (examples/typed-client)', () => {
  it('creates a Patient and reads it back with typed documents', async () => {
    const { client } = await exampleClient();
    const created = await client.request(CreatePatientDocument, {
      res: { name: [{ family: 'Chalmers', given: ['Peter'] }], gender: 'male', birthDate: '1974-12-25' },
    });
    const id = created.PatientCreate?.id;
    expect(id).toEqual(expect.any(String));

    const { Patient } = await client.request(PatientByIdDocument, { id: id! });
    expect(Patient).toEqual({ id, gender: 'male', birthDate: '1974-12-25', name: [{ family: 'Chalmers', given: ['Peter'] }] });
  });

  it('lists Observations with their subjects resolved', async () => {
    const { client, project } = await exampleClient();
    const { PatientCreate } = await client.request(CreatePatientDocument, { res: { name: [{ family: 'Subject' }] } });
    const res = await project.post('/Observation', {
      resourceType: 'Observation',
      status: 'final',
      code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] },
      subject: { reference: `Patient/${PatientCreate!.id}` },
      valueQuantity: { value: 72, unit: '/min' },
    });
    expect(res.status).toBe(201);

    const { ObservationList } = await client.request(ObservationsWithSubjectsDocument, { code: ['http://loinc.org|8867-4'], count: 10 });
    expect(ObservationList).toHaveLength(1);
    const subject = ObservationList![0]!.subject!.resource;
    expect(subject?.__typename).toBe('Patient');
    if (subject?.__typename === 'Patient') expect(subject.name?.[0]?.family).toBe('Subject');
  });

  it('throws a FlintGraphQLError carrying the OperationOutcome', async () => {
    const { client } = await exampleClient();
    const error = await client.request(LookupCodeDocument, { system: 'http://example.org/no-such-system', code: 'x' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FlintGraphQLError);
    expect((error as FlintGraphQLError<unknown>).outcome?.resourceType).toBe('OperationOutcome');
  });
});
