import type { OperationOutcome, Resource } from '../fhir/types.js';
import { FHIR_JSON } from '../router/negotiation.js';

export const FHIR_CONTENT_TYPE = `${FHIR_JSON}; charset=utf-8`;

export function fhirJson(resource: Resource, status: number, headers: Record<string, string> = {}): Response {
  return bodyResponse(JSON.stringify(resource), status, { 'Content-Type': FHIR_CONTENT_TYPE, ...headers });
}

export function outcomeResponse(body: OperationOutcome, status: number, headers: Record<string, string> = {}): Response {
  return fhirJson(body, status, headers);
}

/** Bodies from this size on are written a chunk at a time; smaller ones go to the socket whole. */
export const STREAMED_FROM = 256 * 1024;
export const CHUNK = 64 * 1024;

/**
 * An answer whose large body is written a chunk at a time, each once the socket has taken the one
 * before (back-pressure): a client reading slowly, or not at all, holds at most a chunk of it in
 * the server's buffers instead of the whole remainder, and each chunk it takes counts as progress
 * for SEND_TIMEOUT_MS (transport.ts). The length is known, so it is still sent as Content-Length.
 */
export function bodyResponse(body: string | Uint8Array, status: number, headers: Record<string, string> | Headers): Response {
  if (body.length < STREAMED_FROM) return inMemory(new Response(body as BodyInit, { status, headers }), body);
  const length = typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength;
  const sized = new Headers(headers);
  sized.set('content-length', String(length));
  return inMemory(new Response(typeof body === 'string' ? textChunks(body) : byteChunks(body), { status, headers: sized }), body);
}

/**
 * The bodies of bodyResponse's answers, whole in memory even when sent a chunk at a time: read
 * from here, the compression takes them without reading them back through the fetch Response.
 */
const wholeBodies = new WeakMap<Response, string | Uint8Array>();

function inMemory(response: Response, body: string | Uint8Array): Response {
  wholeBodies.set(response, body);
  return response;
}

/**
 * The body of an answer that is whole in memory, as bytes; undefined for one streamed from its
 * source (Binary, exports), which declares its length beforehand and is never whole.
 */
export async function bodyInMemory(response: Response): Promise<Buffer | undefined> {
  const whole = wholeBodies.get(response);
  if (whole !== undefined) return typeof whole === 'string' ? Buffer.from(whole, 'utf8') : Buffer.from(whole.buffer, whole.byteOffset, whole.byteLength);
  if (response.headers.has('Content-Length')) return undefined;
  return Buffer.from(await response.arrayBuffer());
}

/**
 * Bytes read a chunk at a time from their source, each only once the socket has taken the one
 * before (as bodyResponse): a large Binary or CSV export is never whole in memory. A chunk that
 * cannot be read aborts the answer, which the client sees as a truncated body.
 */
export function streamedResponse(body: { size: number | undefined; chunks: AsyncIterable<Uint8Array> }, status: number, headers: Record<string, string>): Response {
  const iterator = body.chunks[Symbol.asyncIterator]();
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const next = await iterator.next();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      },
      async cancel() {
        await iterator.return?.();
      },
    },
    { highWaterMark: 0 },
  );
  const length: Record<string, string> = body.size === undefined ? {} : { 'content-length': String(body.size) };
  return new Response(stream, { status, headers: { ...withoutContentLength(headers), ...length } });
}

function textChunks(text: string): ReadableStream<Uint8Array> {
  let offset = 0;
  return pulled(() => {
    let end = Math.min(offset + CHUNK, text.length);
    // A surrogate pair stays in one chunk: split, each half would be encoded as U+FFFD.
    if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end--;
    const chunk = Buffer.from(text.slice(offset, end), 'utf8');
    offset = end;
    return { chunk, last: offset >= text.length };
  });
}

function byteChunks(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let offset = 0;
  return pulled(() => {
    const chunk = bytes.subarray(offset, offset + CHUNK);
    offset += chunk.byteLength;
    return { chunk, last: offset >= bytes.byteLength };
  });
}

/** A stream that makes its next chunk only when the reader asks for it (no read-ahead). */
function pulled(next: () => { chunk: Uint8Array; last: boolean }): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        const { chunk, last } = next();
        controller.enqueue(chunk);
        if (last) controller.close();
      },
    },
    { highWaterMark: 0 },
  );
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function withoutContentLength(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => name.toLowerCase() !== 'content-length'));
}
