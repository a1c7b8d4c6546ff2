import type { Config } from '../config.js';
import { outboundRequest, RefusedAddressError } from '../net/outbound-request.js';
import type { HostRequest, HostResponse } from './sandbox/protocol.js';

/** A call of the bot's to the FHIR API, below the FHIR base: path with its query. */
export interface BotApiCall {
  method: string;
  /** Below the FHIR base, without a leading slash: `Patient?name=x`, `Patient/1`, `` for the base. */
  path: string;
  headers: Record<string, string>;
  body?: string;
}

/** Sends a bot's API call through the router as the bot (supplied by the composition root). */
export type BotApi = (call: BotApiCall) => Promise<HostResponse>;

const OUTCOME = 'application/fhir+json';

function refusal(status: number, text: string): HostResponse {
  const body = { resourceType: 'OperationOutcome', issue: [{ severity: 'error', code: status === 403 ? 'forbidden' : 'not-found', diagnostics: text }] };
  return { status, headers: { 'content-type': OUTCOME }, body: JSON.stringify(body) };
}

/**
 * Answers one call of a running bot: requests below the server's FHIR base go to the router as
 * the bot's membership; anything else is an outbound fetch, refused unless the configuration
 * allows it for this Bot or its project, and to private addresses unless it allows those too.
 */
export async function answerHostCall(config: Config, botRef: { botId: string; projectId: string }, api: BotApi, request: HostRequest, deadline: number): Promise<HostResponse> {
  const fhirBase = `${config.fhirBaseUrl}/`;
  if (request.url.startsWith(fhirBase) || request.url === config.fhirBaseUrl) {
    return api({ method: request.method, path: request.url.slice(fhirBase.length), headers: request.headers, body: request.body });
  }
  if (request.url.startsWith(config.baseUrl)) return refusal(404, 'Bots reach the FHIR API of this server only (below its FHIR base)');
  if (!mayFetch(config, botRef)) {
    throw new Error(`Outbound fetch is disabled for this bot: allow it with BOT_FETCH_ALLOWED (Bot/${botRef.botId} or Project/${botRef.projectId})`);
  }
  return outboundFetch(config, request, deadline);
}

function mayFetch(config: Config, { botId, projectId }: { botId: string; projectId: string }): boolean {
  return config.botFetchAllowed.some((entry) => entry === '*' || entry === `Bot/${botId}` || entry === `Project/${projectId}`);
}

async function outboundFetch(config: Config, request: HostRequest, deadline: number): Promise<HostResponse> {
  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    throw new Error(`Outbound fetch: "${request.url}" is not an absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`Outbound fetch: only http and https URLs, got ${url.protocol}`);
  try {
    return await outboundRequest(url, {
      method: request.method, headers: request.headers, body: request.body, readBody: true,
      allowPrivate: config.outboundAllowPrivateAddresses, signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())),
    });
  } catch (error) {
    if (error instanceof RefusedAddressError) throw new Error(`Outbound fetch refused: ${error.message}`);
    throw error;
  }
}
