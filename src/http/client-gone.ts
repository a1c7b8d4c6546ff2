import type { ServerResponse } from 'node:http';
import type { HttpBindings } from '@hono/node-server';
import type { HonoContext } from './route.js';

/** A signal aborted when the connection of `response` closes before its answer is sent (its client went away). */
export function closedSignal(response: ServerResponse): AbortSignal {
  const closed = new AbortController();
  if (response.destroyed) closed.abort();
  response.once('close', () => {
    if (!response.writableFinished) closed.abort();
  });
  return closed.signal;
}

/**
 * The signal of a Hono request's client going away, made when first asked: from Node's response
 * (one listener on its `close`), or, when the request did not come through Node's server (a test's
 * in-process fetch), the fetch Request's own signal.
 */
export function clientGoneOf(c: HonoContext): () => AbortSignal {
  return () => {
    const outgoing = (c.env as Partial<HttpBindings> | undefined)?.outgoing;
    return outgoing ? closedSignal(outgoing) : c.req.raw.signal;
  };
}
