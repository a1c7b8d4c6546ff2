import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import { typicalObservation, typicalPatient } from './fixtures.js';

/**
 * The router's scenarios: transaction and batch Bundles at 4 connections (their figures count
 * resources per second, 50 per Bundle), and a conditional create that finds its match beside the
 * search by identifier it runs.
 */

export interface BundleScenario {
  name: string;
  target: string;
  /** Resources each request writes or reads (a Bundle's entries). */
  resourcesPerRequest: number;
  run(ids: string[], seconds: number): Promise<autocannon.Result>;
}

const BUNDLE_CONNECTIONS = 4;
const ENTRIES = 50;
const MRN = 'http://hospital.example.org/mrn';

export function bundleScenarios(fhir: string, jsonHeaders: Record<string, string>): BundleScenario[] {
  const load = (options: autocannon.Options): Promise<autocannon.Result> =>
    new Promise((resolve, reject) => autocannon(options, (error, result) => (error ? reject(error) : resolve(result))));
  let identified: string[] | undefined;
  const identifiedPatients = async (): Promise<string[]> => (identified ??= await seedIdentified(fhir, jsonHeaders, 100));
  return [
    {
      name: 'transaction of 50 (1 Patient + 49 Observations by urn:uuid)',
      target: '≥3x the resources/s of single creates',
      resourcesPerRequest: ENTRIES,
      run: (_ids, seconds) =>
        load({
          url: fhir,
          connections: BUNDLE_CONNECTIONS,
          duration: seconds,
          requests: [{ method: 'POST', headers: jsonHeaders, setupRequest: (req) => ({ ...req, body: JSON.stringify(patientTransaction()) }) }],
        }),
    },
    {
      name: 'batch of 50 reads',
      target: '≥10,000 resources/s on PostgreSQL',
      resourcesPerRequest: ENTRIES,
      run: (ids, seconds) => {
        let next = 0;
        return load({
          url: fhir,
          connections: BUNDLE_CONNECTIONS,
          duration: seconds,
          requests: [
            {
              method: 'POST',
              headers: jsonHeaders,
              setupRequest: (req) => {
                const entry = Array.from({ length: ENTRIES }, () => ({ request: { method: 'GET', url: `Patient/${ids[next++ % ids.length]}` } }));
                return { ...req, body: JSON.stringify({ resourceType: 'Bundle', type: 'batch', entry }) };
              },
            },
          ],
        });
      },
    },
    {
      name: 'search Patient by identifier',
      target: 'the reference for the conditional create',
      resourcesPerRequest: 1,
      run: async (_ids, seconds) => {
        const mrns = await identifiedPatients();
        let next = 0;
        return load({
          url: fhir,
          connections: 16,
          duration: seconds,
          requests: [{ method: 'GET', headers: jsonHeaders, setupRequest: (req) => ({ ...req, path: `/fhir/R4/Patient?identifier=${MRN}|${mrns[next++ % mrns.length]}` }) }],
        });
      },
    },
    {
      name: 'conditional create that finds its match',
      target: 'within 1.5x of the search by identifier',
      resourcesPerRequest: 1,
      run: async (_ids, seconds) => {
        const mrns = await identifiedPatients();
        // Bodies made before the load, as the search's paths are: the client shares the server's cores.
        const bodies = mrns.map((mrn) => JSON.stringify({ ...typicalPatient(), identifier: [{ system: MRN, value: mrn }] }));
        let next = 0;
        return load({
          url: `${fhir}/Patient`,
          connections: 16,
          duration: seconds,
          requests: [
            {
              method: 'POST',
              headers: jsonHeaders,
              setupRequest: (req) => {
                const at = next++ % mrns.length;
                return { ...req, headers: { ...req.headers, 'if-none-exist': `identifier=${MRN}|${mrns[at]}` }, body: bodies[at] };
              },
            },
          ],
        });
      },
    },
  ];
}

/** A Patient and 49 Observations about it, referring to it by its urn:uuid fullUrl. */
function patientTransaction(): unknown {
  const patientUrl = `urn:uuid:${randomUUID()}`;
  const observations = Array.from({ length: ENTRIES - 1 }, () => {
    const observation = typicalObservation('x');
    observation.subject = { reference: patientUrl };
    return { fullUrl: `urn:uuid:${randomUUID()}`, request: { method: 'POST', url: 'Observation' }, resource: observation };
  });
  return {
    resourceType: 'Bundle',
    type: 'transaction',
    entry: [{ fullUrl: patientUrl, request: { method: 'POST', url: 'Patient' }, resource: typicalPatient() }, ...observations],
  };
}

/** Patients with known identifiers, for the conditional create and the search it is compared with. */
async function seedIdentified(fhir: string, headers: Record<string, string>, count: number): Promise<string[]> {
  const mrns = Array.from({ length: count }, () => randomUUID());
  for (const mrn of mrns) {
    const res = await fetch(`${fhir}/Patient`, { method: 'POST', headers, body: JSON.stringify({ ...typicalPatient(), identifier: [{ system: MRN, value: mrn }] }) });
    if (res.status !== 201) throw new Error(`seed failed: ${res.status} ${await res.text()}`);
  }
  return mrns;
}
