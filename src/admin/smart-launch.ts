import { errors, OperationOutcomeError } from '../fhir/outcome.js';
import { isFhirId } from '../fhir/ids.js';
import type { ClientApplication, Encounter, Patient, SmartAppLaunch } from '../fhir/resources.js';
import { ownOperationDefinition } from '../operations/definition.js';
import type { RequestContext } from '../operations/context.js';
import type { Operation } from '../operations/registry.js';

interface LaunchInput {
  patient?: string;
  encounter?: string;
}

interface LaunchOutput {
  url: string;
  iss: string;
  launch: string;
}

/**
 * `POST /ClientApplication/{id}/$smart-launch` (SMART App Launch, EHR launch): records the launch
 * context (patient, encounter) as a SmartAppLaunch in the caller's project, through the caller's
 * own repository, so whoever may create a SmartAppLaunch and read the patient and encounter may
 * launch (Medplum's apps create the SmartAppLaunch themselves, with the same access). Answers the
 * app's `launchUri` with `iss` and `launch`; the launch is bound to a sign-in by /oauth2/authorize
 * or /auth/login (src/auth/launches.ts).
 */
export const smartLaunchOperation: Operation<LaunchInput, LaunchOutput> = {
  definition: ownOperationDefinition('ClientApplication-smart-launch.json'),
  acceptsPlainJsonBody: true,
  rollsBack: true,
  async handler(input, { ctx, id }) {
    if (!input.patient && !input.encounter) throw errors.invalid('Give the launch context: "patient", "encounter" or both', 'Parameters.parameter');
    const client = (await ctx.repo.readResource('ClientApplication', id!)) as ClientApplication;
    // The launch is made in the caller's project; so must the app be (a super admin reads them all).
    if (client.meta?.project !== ctx.identity.projectId) throw errors.notFound(`ClientApplication/${id} is not a client of your project`);
    if (!client.launchUri) {
      throw errors.invalid(`ClientApplication/${id} has no launchUri: set the URL the app is launched at first`, 'ClientApplication.launchUri');
    }
    let launchUrl: URL;
    try {
      launchUrl = new URL(client.launchUri);
    } catch {
      throw errors.invalid(`The launchUri of ClientApplication/${id} is not an absolute URL`, 'ClientApplication.launchUri');
    }
    const encounter = input.encounter ? ((await contextResource(ctx, 'Encounter', input.encounter, 'encounter')) as Encounter) : undefined;
    const patientRef = input.patient ?? patientOf(encounter);
    const patient = patientRef ? ((await contextResource(ctx, 'Patient', patientRef, 'patient')) as Patient) : undefined;
    if (encounter && patient && encounter.subject?.reference !== `Patient/${patient.id}`) {
      throw errors.invalid(`Encounter/${encounter.id} is not an encounter of Patient/${patient.id} (its subject differs)`, 'Parameters.parameter');
    }
    const launch: SmartAppLaunch = {
      resourceType: 'SmartAppLaunch',
      ...(patient ? { patient: { reference: `Patient/${patient.id}` } } : {}),
      ...(encounter ? { encounter: { reference: `Encounter/${encounter.id}` } } : {}),
    };
    const created = await ctx.repo.createResource('SmartAppLaunch', launch);
    const iss = ctx.config.fhirBaseUrl;
    launchUrl.searchParams.set('iss', iss);
    launchUrl.searchParams.set('launch', created.resource.id!);
    return { url: launchUrl.toString(), iss, launch: created.resource.id! };
  },
};

/** The encounter's subject, when it is a Patient (the launch patient when none is given). */
function patientOf(encounter: Encounter | undefined): string | undefined {
  const subject = encounter?.subject?.reference;
  return subject?.startsWith('Patient/') ? subject : undefined;
}

/**
 * A Patient or Encounter named by id or reference (`Type/id`, or this server's absolute URL), read
 * as the caller: it must exist in the caller's project and be readable by the caller; otherwise 400
 * naming the parameter (the input is wrong, whichever the reason).
 */
async function contextResource(ctx: RequestContext, type: 'Patient' | 'Encounter', value: string, name: string) {
  const relative = value.startsWith(`${ctx.config.fhirBaseUrl}/`) ? value.slice(ctx.config.fhirBaseUrl.length + 1) : value;
  const parts = relative.split('/');
  const id = parts.length === 1 ? parts[0] : parts.length === 2 && parts[0] === type ? parts[1] : undefined;
  if (!id || !isFhirId(id)) throw errors.invalid(`"${name}" must be a ${type} id or a reference ${type}/<id>`, 'Parameters.parameter');
  const missing = () => errors.invalid(`"${name}": ${type}/${id} is not a ${type} of your project that you can read`, 'Parameters.parameter');
  try {
    const resource = await ctx.repo.readResource(type, id);
    if (resource.meta?.project !== ctx.identity.projectId) throw missing();
    return resource;
  } catch (error) {
    if (error instanceof OperationOutcomeError && [403, 404, 410].includes(error.status)) throw missing();
    throw error;
  }
}
