import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';

const REQUEST_ID = /^[A-Za-z0-9._\-]{1,100}$/;

/** The client's X-Request-Id when it is a sensible token, else a new one. */
export function requestIdOf(incoming: string | undefined): string {
  return incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/** The one structured log line of a request: id, method, path, status, duration. */
export function logRequest(log: Logger, requestId: string, method: string, path: string, status: number, started: number): void {
  log.info({ reqId: requestId, method, path, status, ms: Math.round((performance.now() - started) * 100) / 100 }, 'request');
}
