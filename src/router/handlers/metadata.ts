import type { Config } from '../../config.js';
import { buildCapabilityStatement, projectCapabilityText } from '../capability.js';
import { textResponse } from '../responses.js';
import type { FhirRequest, FhirResponse, FhirRoute, PublicCaller } from '../types.js';

/** The CapabilityStatement is fixed for a process's configuration: built once per configuration. */
const capabilityByConfig = new WeakMap<Config, string>();

/**
 * `GET metadata`: the CapabilityStatement generated from the route table it is served from. Public;
 * with a token, the caller's project's own search parameters too.
 */
export function metadataHandler(routes: () => readonly FhirRoute[]) {
  return async (req: FhirRequest, _params: unknown, caller: PublicCaller): Promise<FhirResponse> => {
    let text = capabilityByConfig.get(caller.config);
    if (!text) {
      text = JSON.stringify(buildCapabilityStatement(caller.config, routes()));
      capabilityByConfig.set(caller.config, text);
    }
    if (caller.ctx) text = await projectCapabilityText(caller.database, caller.ctx.identity, text);
    return textResponse(text);
  };
}
