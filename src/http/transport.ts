import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { getRequestListener, type HttpBindings } from '@hono/node-server';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { answerClientError } from './client-errors.js';

type FetchHandler = (request: Request, bindings: HttpBindings) => Response | Promise<Response>;

/** What answers HTTP: the Hono application, and a fast path that may answer a request before it (true when it did). */
export interface HttpHandlers {
  readonly fetch: FetchHandler;
  readonly fastPath?: (request: IncomingMessage, response: ServerResponse) => boolean;
}

/** The server's limits on slow clients (src/config.ts). */
export type SlowClientLimits = Pick<Config, 'sendTimeoutMs' | 'headersTimeoutMs' | 'requestTimeoutMs'>;

/**
 * Node's HTTP server for the Hono application, with limits on slow clients both ways: a client
 * trickling its request (headers or body) gets 408 and its connection closed after
 * HEADERS_TIMEOUT_MS / REQUEST_TIMEOUT_MS (Node's own checks); a client that stops reading its
 * answer has its connection closed after SEND_TIMEOUT_MS without progress, which frees what was
 * left to send.
 */
export function listenHttp(handlers: HttpHandlers, port: number, limits: SlowClientLimits, log: Logger): Promise<Server> {
  const withSendTimeout: FetchHandler = async (request, bindings) => {
    const response = await handlers.fetch(request, bindings);
    armSendTimeout(bindings.outgoing, limits.sendTimeoutMs, log);
    return response;
  };
  const application = getRequestListener(withSendTimeout as (request: Request, env: unknown) => Promise<Response>, { hostname: '0.0.0.0' });
  const { fastPath } = handlers;
  const listener: RequestListener = fastPath ? (request, response) => void (fastPath(request, response) || application(request, response)) : application;
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      // How often Node looks for requests over those limits (its default, 30 s, would let a
      // short limit run well over).
      connectionsCheckingInterval: Math.min(30_000, Math.ceil(limits.headersTimeoutMs / 4)),
    },
    listener,
  );
  server.on('clientError', answerClientError);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '0.0.0.0', () => resolve(server));
  });
}

/**
 * The answer is ready and about to be written: from now on, SEND_TIMEOUT_MS without the socket
 * taking any of it (no `drain`: large answers are written a chunk at a time, responses.ts) closes
 * the connection. Armed only here, it never cuts a handler that is still working; bytes the
 * client sends meanwhile do not count as progress, as they would for the socket's own timeout.
 */
export function armSendTimeout(outgoing: ServerResponse, ms: number, log: Logger): void {
  const stalled = () => {
    done();
    log.warn({ sendTimeoutMs: ms }, 'connection closed: the client took nothing of its answer within SEND_TIMEOUT_MS');
    outgoing.destroy();
  };
  const timer = setTimeout(stalled, ms).unref();
  const progress = () => timer.refresh();
  const done = () => {
    clearTimeout(timer);
    outgoing.off('drain', progress);
  };
  outgoing.on('drain', progress);
  outgoing.once('finish', done);
  outgoing.once('close', done);
}
