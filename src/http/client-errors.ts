import type { Duplex } from 'node:stream';
import { issue, outcome } from '../fhir/outcome.js';
import type { IssueType } from '../fhir/resources.js';

/**
 * Requests Node's HTTP parser refuses before any handler sees them. Without a `clientError`
 * listener Node answers them with a bare status line and no body; every 4xx of ours is an
 * OperationOutcome saying what to change, so this listener writes one, with Node's status.
 */

interface ParserRefusal {
  readonly status: number;
  readonly reason: string;
  readonly code: IssueType;
  readonly text: string;
}

const REFUSALS: Record<string, ParserRefusal> = {
  // A search of many values in the URL reaches Node's header limit (16 KB) before the search's own.
  HPE_HEADER_OVERFLOW: {
    status: 431,
    reason: 'Request Header Fields Too Large',
    code: 'too-long',
    text: 'The request line and headers are longer than the server reads (16 KB): send a long search as POST [type]/_search with the parameters in a form body',
  },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: {
    status: 413,
    reason: 'Payload Too Large',
    code: 'too-long',
    text: 'The chunk extensions of the request body are longer than the server reads',
  },
  ERR_HTTP_REQUEST_TIMEOUT: {
    status: 408,
    reason: 'Request Timeout',
    code: 'timeout',
    text: 'The request was not received in time (REQUEST_TIMEOUT_MS, HEADERS_TIMEOUT_MS): send it whole, without pauses',
  },
};

const MALFORMED: ParserRefusal = {
  status: 400,
  reason: 'Bad Request',
  code: 'structure',
  text: 'The request is not valid HTTP/1.1',
};

/** The HTTP answer to a request the parser refused, its connection closed after it. */
export function parserRefusalText(errorCode: string | undefined): string {
  const refusal = (errorCode !== undefined ? REFUSALS[errorCode] : undefined) ?? MALFORMED;
  const body = JSON.stringify(outcome([issue(refusal.code, refusal.text)]));
  return [
    `HTTP/1.1 ${refusal.status} ${refusal.reason}`,
    'Content-Type: application/fhir+json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/**
 * Node's `clientError` listener: writes the refusal unless an answer has started on the
 * connection (bytes of it would corrupt that one), then closes the connection, as Node's own
 * default does.
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (error.code !== 'ECONNRESET' && socket.writable && !inFlight?.headersSent) socket.write(parserRefusalText(error.code));
  socket.destroy(error);
}
