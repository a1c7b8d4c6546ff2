import type { MiddlewareHandler } from 'hono';
import { compress, COMPRESSIBLE_CONTENT_TYPE_REGEX } from 'hono/compress';
import { requestHeader } from '../graphql/http-body.js';
import { encodeForClient } from './node-answers.js';
import { bodyInMemory, bodyResponse } from './responses.js';
import type { AppEnv, HonoContext } from './route.js';

/** Headers the encoding decision may set on an answer. */
const ENCODING_HEADERS = ['Vary', 'Content-Encoding', 'ETag'] as const;

/**
 * gzip (or deflate) for clients that accept it: JSON and text bodies of 1 KB or more, as hono's
 * compress middleware decides it (same threshold, content types, encodings, Vary and weak ETag),
 * so a Bundle of 1,000 resources or GraphQL's introspection answer (13 MB as JSON) travel at a
 * fraction of their size. Requests without `Accept-Encoding` skip the middleware, which reads and
 * rewrites the headers of every response (the fast paths of reads and GraphQL keep theirs as a
 * plain record); their answers lack `Vary: Accept-Encoding`, which only tells caches that a
 * compressed answer exists.
 *
 * Our answers are built in memory: those are compressed whole, in one zlib call, and sent with
 * their compressed length. Hono's middleware pipes the body through a CompressionStream, whose web
 * stream machinery, and the separate write of the headers a streamed answer gets, cost the server
 * more than the compression itself on a page of 100 resources (measured: see bench/RESULTS.md).
 * Answers streamed from their source (Binary, exports), which declare their length beforehand,
 * keep hono's streamed compression: they are never whole in memory.
 */
export function responseCompression(): MiddlewareHandler<AppEnv> {
  const streamed = compress();
  const afterwards = async () => undefined;
  return async (c, next) => {
    const acceptEncoding = requestHeader(c, 'accept-encoding');
    if (acceptEncoding === undefined) return next();
    await next();
    const compressed = await compressedInMemory(c, acceptEncoding);
    if (!compressed) return streamed(c, afterwards);
    // Unset first: Hono's setter would copy the old answer's headers (its length among them) onto
    // the new one, and rebuild it around a stream of its body.
    c.res = undefined;
    c.res = compressed;
  };
}

/**
 * The answer compressed as the client asked, when its body is built in memory (no length declared
 * beforehand, or sent a chunk at a time by bodyResponse) and of a compressible type; undefined
 * for answers hono's middleware decides.
 */
async function compressedInMemory(c: HonoContext, acceptEncoding: string): Promise<Response | undefined> {
  const res = c.res;
  if (!res.body || c.req.method === 'HEAD' || res.status === 206 || res.headers.has('Transfer-Encoding')) return undefined;
  if (!COMPRESSIBLE_CONTENT_TYPE_REGEX.test(res.headers.get('Content-Type') ?? '')) return undefined;
  const bytes = await bodyInMemory(res);
  if (!bytes) return undefined;
  const encoded = await encodeForClient(bytes, decisionHeaders(res.headers), acceptEncoding);
  const headers = new Headers(res.headers);
  for (const name of ENCODING_HEADERS) {
    const value = encoded.headers[name];
    if (value !== undefined) headers.set(name, value);
  }
  headers.set('Content-Length', String(encoded.body.byteLength));
  return bodyResponse(encoded.body, res.status, headers);
}

/** The headers the encoding decision reads, by the names encodeForClient sets. */
function decisionHeaders(headers: Headers): Record<string, string> {
  const record: Record<string, string> = {};
  for (const name of ['Content-Type', 'Cache-Control', 'Content-Encoding', ...ENCODING_HEADERS]) {
    const value = headers.get(name);
    if (value !== null) record[name] = value;
  }
  return record;
}
