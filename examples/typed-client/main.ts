/**
 * The typed client example: `npx tsx examples/typed-client/main.ts` against a running Flint with
 * FLINT_FHIR_URL (default http://localhost:8080/fhir/R4) and FLINT_TOKEN (an access token).
 * Every call below is type-checked against the server's schema: a misspelt field in
 * documents.graphql or a wrong variable fails `npm run typecheck`, not the app at run time.
 */
import { FlintGraphQLClient, FlintGraphQLError } from './client.js';
import { CreatePatientDocument, ObservationsWithSubjectsDocument, PatientByIdDocument } from './generated.js';

export async function showPatientAndObservations(client: FlintGraphQLClient): Promise<void> {
  const created = await client.request(CreatePatientDocument, {
    res: { name: [{ family: 'Chalmers', given: ['Peter'] }], gender: 'male', birthDate: '1974-12-25' },
  });
  const id = created.PatientCreate?.id;
  if (!id) throw new Error('no id');

  const { Patient } = await client.request(PatientByIdDocument, { id });
  const family: string | null | undefined = Patient?.name?.[0]?.family;
  console.log(`Patient/${id}: ${family}, ${Patient?.gender}, born ${Patient?.birthDate}`);

  const { ObservationList } = await client.request(ObservationsWithSubjectsDocument, { code: ['http://loinc.org|8867-4'], count: 100 });
  for (const observation of ObservationList ?? []) {
    const subject = observation?.subject?.resource;
    const name = subject?.__typename === 'Patient' ? subject.name?.[0]?.family : undefined;
    console.log(`Observation/${observation?.id} ${observation?.valueQuantity?.value} ${observation?.valueQuantity?.unit} for ${name}`);
  }
}

async function main(): Promise<void> {
  const token = process.env.FLINT_TOKEN;
  if (!token) throw new Error('Set FLINT_TOKEN to an access token (see the README, Authentication).');
  const client = new FlintGraphQLClient(process.env.FLINT_FHIR_URL ?? 'http://localhost:8080/fhir/R4', token);
  try {
    await showPatientAndObservations(client);
  } catch (error) {
    if (error instanceof FlintGraphQLError) console.error(error.message, JSON.stringify(error.outcome));
    throw error;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
