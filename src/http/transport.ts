import type { Server, ServerResponse } from 'node:http';
import { serve, type HttpBindings } from '@hono/node-server';
import type { Logger } from 'pino';
import type { Config } from '../config.js';

type FetchHandler = (request: Request, bindings: HttpBindings) => Response | Promise<Response>;

/** The server's limits on slow clients (src/config.ts). */
export type SlowClientLimits = Pick<Config, 'sendTimeoutMs' | 'headersTimeoutMs' | 'requestTimeoutMs'>;

/**
 * Node's HTTP server for the Hono application, with limits on slow clients both ways: a client
 * trickling its request (headers or body) gets 408 and its connection closed after
 * HEADERS_TIMEOUT_MS / REQUEST_TIMEOUT_MS (Node's own checks); a client that stops reading its
 * answer has its connection closed after SEND_TIMEOUT_MS without progress, which frees what was
 * left to send.
 */
export function listenHttp(fetch: FetchHandler, port: number, limits: SlowClientLimits, log: Logger): Promise<Server> {
  const withSendTimeout: FetchHandler = async (request, bindings) => {
    const response = await fetch(request, bindings);
    armSendTimeout(bindings.outgoing, limits.sendTimeoutMs, log);
    return response;
  };
  return new Promise((resolve, reject) => {
    const server = serve(
      {
        fetch: withSendTimeout as (request: Request, bindings: unknown) => Promise<Response>,
        port,
        hostname: '0.0.0.0',
        serverOptions: {
          headersTimeout: limits.headersTimeoutMs,
          requestTimeout: limits.requestTimeoutMs,
          // How often Node looks for requests over those limits (its default, 30 s, would let a
          // short limit run well over).
          connectionsCheckingInterval: Math.min(30_000, Math.ceil(limits.headersTimeoutMs / 4)),
        },
      },
      () => resolve(server as Server),
    ) as Server;
    server.once('error', reject);
  });
}

/**
 * The answer is ready and about to be written: from now on, SEND_TIMEOUT_MS without the socket
 * taking any of it (no `drain`: large answers are written a chunk at a time, responses.ts) closes
 * the connection. Armed only here, it never cuts a handler that is still working; bytes the
 * client sends meanwhile do not count as progress, as they would for the socket's own timeout.
 */
function armSendTimeout(outgoing: ServerResponse, ms: number, log: Logger): void {
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
