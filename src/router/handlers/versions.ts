import { requestedJsonKind } from '../negotiation.js';
import { resourceResponse, textResponse } from '../responses.js';
import type { FhirRequest, FhirResponse } from '../types.js';

/** The FHIR versions this server speaks, as `$versions` names them (major.minor). */
const VERSIONS = ['4.0'];
const DEFAULT_VERSION = '4.0';

/**
 * `GET $versions` (FHIR R4 http.html 3.1.0.17, CapabilityStatement/$versions): public, like
 * `metadata`. FHIR media types get the Parameters form (`version` repeated, `default`); plain
 * `application/json` (what Medplum's client asks for) and wildcards get `{versions, default}`, the
 * shape Medplum's server answers.
 */
export async function versionsHandler(req: FhirRequest): Promise<FhirResponse> {
  const headers = { Vary: 'Accept' };
  if (requestedJsonKind(req.query.get('_format'), req.header('accept') ?? null) === 'plain') {
    return textResponse(JSON.stringify({ versions: VERSIONS, default: DEFAULT_VERSION }), 200, {
      ...headers,
      'Content-Type': 'application/json; charset=utf-8',
    });
  }
  return resourceResponse(
    {
      resourceType: 'Parameters',
      parameter: [
        ...VERSIONS.map((version) => ({ name: 'version', valueCode: version })),
        { name: 'default', valueCode: DEFAULT_VERSION },
      ],
    },
    200,
    headers,
  );
}
