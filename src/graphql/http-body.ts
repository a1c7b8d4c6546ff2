import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import { errors } from '../fhir/outcome.js';
import { headerValue } from './http-fast-path.js';
import { utf8Text } from '../router/request-body.js';

/**
 * The request body as text, refused with 413 (the same OperationOutcome as the HTTP layer's body
 * limit) beyond `maxBytes`. Under @hono/node-server the bytes are read straight from the Node
 * request: `c.req.raw`'s body would first build a native Request around a web stream of the socket,
 * which measured as a large part of a small GraphQL request's cost.
 */
export async function readRequestText(c: Context, maxBytes: number): Promise<string> {
  // Mutations carry resources: bytes that are not UTF-8 are refused, as on REST, not stored as U+FFFD.
  return utf8Text(await readRequestBytes(c, maxBytes));
}


/** The request body as bytes, with the same limit and the same way round the fetch Request. */
export async function readRequestBytes(c: Context, maxBytes: number): Promise<Buffer> {
  const declared = requestHeader(c, 'content-length');
  if (declared !== undefined && Number(declared) > maxBytes) throw tooLarge(maxBytes);
  const incoming = nodeRequestOf(c);
  const bytes = incoming ? await readIncoming(incoming, maxBytes) : Buffer.from(await c.req.raw.arrayBuffer());
  // Other runtimes (and Hono's app.fetch in tests) give the body whole: checked afterwards.
  if (!incoming && bytes.byteLength > maxBytes) throw tooLarge(maxBytes);
  return bytes;
}

function tooLarge(maxBytes: number) {
  return errors.tooLarge(`The request body exceeds the limit of ${maxBytes} bytes`);
}

/**
 * The request headers as Node parsed them (names in lower case), when Hono runs on Node: reading
 * them through `c.req` builds a fetch Headers object first (its validation is a noticeable cost of
 * a small GraphQL request; measured: see bench/RESULTS.md). Undefined on other runtimes. A repeated
 * Authorization header is given as REST sees it (below).
 */
export function nodeHeadersOf(c: Context): IncomingHttpHeaders | undefined {
  const incoming = (c.env as { incoming?: unknown } | undefined)?.incoming;
  return isIncomingMessage(incoming) ? incomingHeaders(incoming) : undefined;
}

/** Node's parsed headers of a request, with repeated Authorization headers joined as fetch Headers join them. */
export function incomingHeaders(incoming: IncomingMessage): IncomingHttpHeaders {
  return incoming.headers.authorization === undefined ? incoming.headers : withEveryAuthorization(incoming);
}

/**
 * The Authorization header as fetch Headers would give it (repeated headers joined with ", "),
 * read from Node's parsed headers when Hono runs on Node; null when absent.
 */
export function authorizationHeader(c: Context): string | null {
  const headers = nodeHeadersOf(c);
  return headers ? (headers.authorization ?? null) : c.req.raw.headers.get('authorization');
}

/**
 * Node's parsed headers keep the first of repeated Authorization headers only (IncomingMessage
 * discards duplicates of `authorization`), where the fetch Headers that REST reads join every
 * value with ", ". With the values joined alike here, authentication sees the same value on every
 * route and refuses a repeated header everywhere (src/auth/authenticate.ts, hasSeveralCredentials)
 * instead of GraphQL using the first credential. A copy only when the header is repeated.
 */
function withEveryAuthorization(incoming: IncomingMessage): IncomingHttpHeaders {
  const raw = incoming.rawHeaders;
  let values: string[] | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i];
    if (name.length === 13 && name.toLowerCase() === 'authorization') (values ??= []).push(raw[i + 1]);
  }
  return values && values.length > 1 ? { ...incoming.headers, authorization: values.join(', ') } : incoming.headers;
}

/** One request header (first value), from Node's parsed headers when there are any. */
export function requestHeader(c: Context, name: string): string | undefined {
  const incoming = (c.env as { incoming?: unknown } | undefined)?.incoming;
  return isIncomingMessage(incoming) ? (headerValue(incoming.headers, name) ?? undefined) : c.req.header(name);
}

/** The Node request behind the Hono context, when Hono runs on Node. */
export function incomingMessageOf(c: Context): IncomingMessage | undefined {
  const incoming = (c.env as { incoming?: unknown } | undefined)?.incoming;
  return isIncomingMessage(incoming) ? incoming : undefined;
}

/** The Node request behind the Hono context, unless something has started reading it already. */
function nodeRequestOf(c: Context): IncomingMessage | undefined {
  const incoming = (c.env as { incoming?: unknown } | undefined)?.incoming;
  if (!isIncomingMessage(incoming) || incoming.readableDidRead || incoming.readableEnded) return undefined;
  return incoming;
}

function isIncomingMessage(value: unknown): value is IncomingMessage {
  return typeof value === 'object' && value !== null && typeof (value as IncomingMessage).on === 'function' && 'readableDidRead' in value;
}

/** The body of a Node request nothing has read yet, refused with 413 beyond `maxBytes` (its declared length is not checked here). */
export function readIncoming(incoming: IncomingMessage, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => new BodyReader(incoming, maxBytes, resolve, reject).start());
}

/**
 * Collects a Node request's body. A class rather than closures: under tsx every closure created per
 * request is also renamed (esbuild's keepNames), which showed in profiles of small requests.
 */
class BodyReader {
  private readonly chunks: Buffer[] = [];
  private size = 0;

  constructor(
    private readonly incoming: IncomingMessage,
    private readonly maxBytes: number,
    private readonly resolve: (bytes: Buffer) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    this.onData = this.onData.bind(this);
    this.onEnd = this.onEnd.bind(this);
    this.onError = this.onError.bind(this);
    this.onClose = this.onClose.bind(this);
  }

  start(): void {
    this.incoming.on('data', this.onData);
    this.incoming.on('end', this.onEnd);
    this.incoming.on('error', this.onError);
    this.incoming.on('close', this.onClose);
  }

  private onData(chunk: Buffer): void {
    this.size += chunk.length;
    if (this.size > this.maxBytes) {
      // The rest is left to the server, which drains what the handler did not read.
      this.finish();
      this.reject(tooLarge(this.maxBytes));
      return;
    }
    this.chunks.push(chunk);
  }

  private onEnd(): void {
    this.finish();
    this.resolve(this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.size));
  }

  private onError(error: Error): void {
    this.finish();
    this.reject(error);
  }

  /** A client gone before the end of its body: the handler must not wait forever (nor log a server error). */
  private onClose(): void {
    this.onError(errors.invalid('The client closed the connection before the end of the request body'));
  }

  private finish(): void {
    this.incoming.off('data', this.onData);
    this.incoming.off('end', this.onEnd);
    this.incoming.off('error', this.onError);
    this.incoming.off('close', this.onClose);
  }
}
