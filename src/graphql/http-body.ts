import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import { errors } from '../fhir/outcome.js';

/**
 * The request body as text, refused with 413 (the same OperationOutcome as the HTTP layer's body
 * limit) beyond `maxBytes`. Under @hono/node-server the bytes are read straight from the Node
 * request: `c.req.raw`'s body would first build a native Request around a web stream of the socket,
 * which measured as a large part of a small GraphQL request's cost.
 */
export async function readRequestText(c: Context, maxBytes: number): Promise<string> {
  const declared = c.req.header('content-length');
  if (declared !== undefined && Number(declared) > maxBytes) throw tooLarge(maxBytes);
  const incoming = nodeRequestOf(c);
  const text = incoming ? await readIncoming(incoming, maxBytes) : await c.req.raw.text();
  // Other runtimes (and Hono's app.fetch in tests) give the text whole: checked afterwards.
  if (!incoming && Buffer.byteLength(text) > maxBytes) throw tooLarge(maxBytes);
  // A UTF-8 byte order mark, which the fetch API's text() drops too.
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

function tooLarge(maxBytes: number) {
  return errors.tooLarge(`The request body exceeds the limit of ${maxBytes} bytes`);
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

function readIncoming(incoming: IncomingMessage, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes) {
        // The rest is left to the server, which drains what the handler did not read.
        finish();
        reject(tooLarge(maxBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      finish();
      resolve(chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks, size).toString('utf8'));
    };
    const onError = (error: Error): void => {
      finish();
      reject(error);
    };
    // A client gone before the end of its body: the handler must not wait forever (nor log a server error).
    const onClose = (): void => onError(errors.invalid('The client closed the connection before the end of the request body'));
    const finish = (): void => {
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('error', onError);
      incoming.off('close', onClose);
    };
    incoming.on('data', onData);
    incoming.on('end', onEnd);
    incoming.on('error', onError);
    incoming.on('close', onClose);
  });
}
