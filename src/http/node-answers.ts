import type { ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import { deflate, deflateSync, gzip, gzipSync } from 'node:zlib';
import type { Logger } from 'pino';
import { COMPRESSIBLE_CONTENT_TYPE_REGEX } from 'hono/compress';
import { parseAccept } from 'hono/utils/accept';
import { CHUNK, STREAMED_FROM } from './responses.js';
import { armSendTimeout } from './transport.js';

/**
 * Answers written straight to Node's ServerResponse (the read fast path), with what the Hono
 * application's middleware gives the same answer: compression as hono's `compress()` decides it
 * (same threshold, content types, encodings, Vary and weak ETag), large bodies a chunk at a time
 * under SEND_TIMEOUT_MS (responses.ts, transport.ts).
 */

const COMPRESS_FROM = 1024;
const ENCODINGS = ['gzip', 'deflate'] as const;
type Encoding = (typeof ENCODINGS)[number];
/**
 * zlib's level 3 rather than its default 6: on a page of 100 Patients (44 KB of JSON) it takes
 * about half the CPU for an answer 8% larger (measured: see bench/RESULTS.md); levels 1 and 2 cost
 * the same as 3 and compress less.
 */
const LEVEL = 3;
/**
 * Bodies up to this size are compressed on the event loop: a page of 100 resources (50 KB of JSON)
 * takes about half the CPU that way (0.11-0.16 against 0.22-0.29 ms), since zlib's asynchronous
 * form builds a stream and hands the work to the thread pool and back. Larger bodies (a page of
 * 1,000) go to the thread pool, so that one answer does not hold up the others for milliseconds.
 */
const COMPRESS_ON_LOOP_UP_TO = 128 * 1024;
const gzipAsync = promisify(gzip);
const deflateAsync = promisify(deflate);
const compressors: Record<Encoding, (body: Buffer) => Buffer | Promise<Buffer>> = {
  gzip: (body) => (body.byteLength <= COMPRESS_ON_LOOP_UP_TO ? gzipSync(body, { level: LEVEL }) : gzipAsync(body, { level: LEVEL })),
  deflate: (body) => (body.byteLength <= COMPRESS_ON_LOOP_UP_TO ? deflateSync(body, { level: LEVEL }) : deflateAsync(body, { level: LEVEL })),
};
const NO_TRANSFORM = /(?:^|,)\s*?no-transform\s*?(?:,|$)/i;
const VARY_ACCEPT_ENCODING = /(?:^|,)\s*accept-encoding\s*(?:,|$)/i;


export interface EncodedAnswer {
  readonly headers: Record<string, string>;
  readonly body: Buffer;
}

/** The body as the client asked for it by Accept-Encoding (absent: as it is, no Vary). */
export async function encodeForClient(body: Buffer, headers: Record<string, string>, acceptEncoding: string | undefined): Promise<EncodedAnswer> {
  if (acceptEncoding === undefined || !compressible(body, headers)) return { headers, body };
  const vary = header(headers, 'vary');
  const encoded: Record<string, string> = { ...headers };
  if (vary !== '*' && !(vary && VARY_ACCEPT_ENCODING.test(vary))) setHeader(encoded, 'Vary', vary ? `${vary}, Accept-Encoding` : 'Accept-Encoding');
  const encoding = chooseEncoding(acceptEncoding);
  if (!encoding) return { headers: encoded, body };
  setHeader(encoded, 'Content-Encoding', encoding);
  const etag = header(encoded, 'etag');
  if (etag && !etag.startsWith('W/')) setHeader(encoded, 'ETag', `W/${etag}`);
  return { headers: encoded, body: await compressors[encoding](body) };
}

function compressible(body: Buffer, headers: Record<string, string>): boolean {
  if (body.byteLength < COMPRESS_FROM || header(headers, 'content-encoding') !== undefined) return false;
  const type = header(headers, 'content-type');
  const cacheControl = header(headers, 'cache-control');
  return type !== undefined && COMPRESSIBLE_CONTENT_TYPE_REGEX.test(type) && !(cacheControl && NO_TRANSFORM.test(cacheControl));
}

/** hono's choice: the first encoding with q=1, else the highest q above 0 (`*` counts for unnamed ones). */
function chooseEncoding(acceptEncoding: string): Encoding | undefined {
  const accepts = parseAccept(acceptEncoding);
  const wildcard = accepts.find((accept) => accept.type === '*')?.q;
  let best: { encoding: Encoding; q: number } | undefined;
  for (const encoding of ENCODINGS) {
    const q = accepts.find((accept) => accept.type.toLowerCase() === encoding)?.q ?? wildcard ?? 0;
    if (q === 1) return encoding;
    if (q > 0 && (!best || q > best.q)) best = { encoding, q };
  }
  return best?.encoding;
}

/**
 * Writes status, headers (given to it: it adds Content-Length) and body, a large body a chunk at a
 * time. A string body (UTF-8, under STREAMED_FROM bytes) goes in one write.
 */
export function writeAnswer(response: ServerResponse, status: number, headers: Record<string, string>, body: Buffer | string, sendTimeoutMs: number, log: Logger): void {
  headers['Content-Length'] = String(typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.byteLength);
  response.writeHead(status, headers);
  if (typeof body === 'string' || body.byteLength < STREAMED_FROM) {
    response.end(body);
    // An answer the socket took whole is in the kernel's hands: no client can stall it any more.
    if (response.writableLength > 0) armSendTimeout(response, sendTimeoutMs, log);
    return;
  }
  armSendTimeout(response, sendTimeoutMs, log);
  let offset = 0;
  const writeChunks = (): void => {
    while (offset < body.byteLength && !response.destroyed) {
      const chunk = body.subarray(offset, offset + CHUNK);
      offset += chunk.byteLength;
      if (offset >= body.byteLength) response.end(chunk);
      else if (!response.write(chunk)) {
        response.once('drain', writeChunks);
        return;
      }
    }
  };
  writeChunks();
}

function header(headers: Record<string, string>, name: string): string | undefined {
  for (const key in headers) if (key.toLowerCase() === name) return headers[key];
  return undefined;
}

/** Sets a header, replacing one of the same name in another case. */
function setHeader(headers: Record<string, string>, name: string, value: string): void {
  const lower = name.toLowerCase();
  for (const key of Object.keys(headers)) if (key.toLowerCase() === lower) delete headers[key];
  headers[name] = value;
}
