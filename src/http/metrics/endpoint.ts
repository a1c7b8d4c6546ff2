import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { Logger } from 'pino';
import { errors, toOperationOutcomeError, type OperationOutcomeError } from '../../fhir/outcome.js';
import { requestHeader } from '../../graphql/http-body.js';
import type { HonoContext } from '../route.js';
import type { MetricsExposition } from './server-metrics.js';

/**
 * `GET /metrics` on the server's port: only with METRICS_TOKEN set, and only for a request that
 * carries it as its bearer token, since per-route counts tell who is busy. Unset, the endpoint
 * does not exist (404, as any unknown path).
 */
export async function metricsHandler(c: HonoContext): Promise<Response> {
  const token = c.get('services').config.metricsToken;
  const exposition = c.get('metricsExposition');
  if (token === undefined || exposition === undefined) throw errors.notFound(`No endpoint at GET ${c.req.path}`);
  const refused = refusal(requestHeader(c, 'authorization'), token);
  if (refused) throw refused;
  return new Response(await exposition.text(), { headers: { 'Content-Type': exposition.contentType } });
}

/** Why a scrape is refused (401), or undefined when it carries the token. */
export function refusal(authorization: string | undefined, token: string): OperationOutcomeError | undefined {
  const match = /^Bearer +(\S+)\s*$/i.exec(authorization ?? '');
  if (!match) return errors.unauthorized('/metrics needs Authorization: Bearer <METRICS_TOKEN>');
  return sameSecret(match[1], token) ? undefined : errors.unauthorized('The bearer token is not METRICS_TOKEN');
}

/** Compares digests in constant time: the time taken says nothing about how much of the token matched. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/**
 * METRICS_PORT: `/metrics` on a port of its own, for a network only the monitoring reaches; the
 * token is asked there too when METRICS_TOKEN is set. Nothing else is served on it.
 */
export function listenMetrics(port: number, exposition: MetricsExposition, token: string | undefined, log: Logger): Promise<Server> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    const failure =
      path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')
        ? errors.notFound(`No endpoint at ${request.method} ${path} (this port serves GET /metrics)`)
        : token !== undefined
          ? refusal(request.headers.authorization, token)
          : undefined;
    if (failure) {
      response.writeHead(failure.status, { 'Content-Type': 'application/fhir+json', ...failure.headers }).end(JSON.stringify(failure.outcome));
      return;
    }
    exposition.text().then(
      (text) => response.writeHead(200, { 'Content-Type': exposition.contentType }).end(request.method === 'HEAD' ? undefined : text),
      (error: unknown) => {
        log.error({ err: error }, 'collecting metrics failed');
        const failed = toOperationOutcomeError(error);
        response.writeHead(failed.status, { 'Content-Type': 'application/fhir+json' }).end(JSON.stringify(failed.outcome));
      },
    );
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '0.0.0.0', () => resolve(server));
  });
}
