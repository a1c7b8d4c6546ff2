import http from 'node:http';
import https from 'node:https';
import { checkedLookup, refusedEndpoint, RefusedAddressError } from './outbound-addresses.js';

export interface OutboundRequest {
  readonly method: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
  readonly signal: AbortSignal;
  /** Whether private addresses may be reached (OUTBOUND_ALLOW_PRIVATE_ADDRESSES). */
  readonly allowPrivate: boolean;
  /** Whether the answer's body is read (else it is discarded). */
  readonly readBody: boolean;
  /**
   * The most the whole request may take: then it fails with a `TimeoutError`. One timer, where
   * `AbortSignal.any([AbortSignal.timeout(ms), signal])` would make two signals per request.
   */
  readonly timeoutMs?: number;
}

export interface OutboundResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

export { RefusedAddressError };

/** Kept-alive connections, apart for each rule on private addresses (a pooled socket was checked under one). */
const agents = new Map<boolean, { http: http.Agent; https: https.Agent }>();

function agentsFor(allowPrivate: boolean) {
  let pair = agents.get(allowPrivate);
  if (!pair) {
    const options = { keepAlive: true, lookup: checkedLookup(allowPrivate) };
    pair = { http: new http.Agent(options), https: new https.Agent(options) };
    agents.set(allowPrivate, pair);
  }
  return pair;
}

/**
 * One request on a project's behalf (rest-hook deliveries, bots' fetch), never redirected. Its
 * connection goes to the address its host name resolved to when that address was checked
 * (checkedLookup), with the name kept for the Host header and TLS: a refused address rejects with
 * RefusedAddressError, whether given as is or resolved.
 */
export function outboundRequest(url: URL, request: OutboundRequest): Promise<OutboundResponse> {
  const refusal = refusedEndpoint(url, request.allowPrivate);
  if (refusal) return Promise.reject(new RefusedAddressError(refusal));
  const secure = url.protocol === 'https:';
  const pair = agentsFor(request.allowPrivate);
  return new Promise((resolve, reject) => {
    const outgoing = (secure ? https : http).request(url, { method: request.method, headers: request.headers, agent: secure ? pair.https : pair.http, signal: request.signal }, (response) => {
      const chunks: Buffer[] = [];
      if (request.readBody) response.on('data', (chunk: Buffer) => chunks.push(chunk));
      else response.resume();
      response.on('error', reject);
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: headersOf(response.headers), body: Buffer.concat(chunks).toString('utf8') }));
    });
    outgoing.on('error', reject);
    if (request.timeoutMs !== undefined) {
      const timer = setTimeout(() => outgoing.destroy(timeoutError(request.timeoutMs!)), request.timeoutMs);
      outgoing.on('close', () => clearTimeout(timer));
    }
    outgoing.end(request.body);
  });
}

function timeoutError(ms: number): Error {
  const error = new Error(`no answer within ${ms} ms`);
  error.name = 'TimeoutError';
  return error;
}

function headersOf(headers: http.IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(', ') : value;
  return flat;
}
