import type { IncomingMessage } from 'node:http';
import { isResourceType } from '../fhir/definitions.js';
import { incomingHeaders, readIncoming } from '../graphql/http-body.js';
import { headerValue } from '../graphql/http-fast-path.js';
import { textBody, utf8Text } from '../router/request-body.js';
import type { FhirRequest, RequestBody } from '../router/types.js';
import { FHIR_BASE_PATH } from './fhir-adapter.js';
import { answerDirectly, type DirectAnswering, type FastPath } from './read-fast-path.js';

/** The create's pattern in the route table, as the full path labels it in the metrics. */
const CREATE_ROUTE = `${FHIR_BASE_PATH}/:type`;

/** `POST /fhir/R4/<Type>` and nothing else: no query, so `_format`, `_pretty`... take the full path. */
const CREATE_PATH = /^\/fhir\/R4\/([A-Z][A-Za-z]{1,63})$/;

/**
 * The create, the most frequent write, on the read's fast path (read-fast-path.ts): without
 * Hono's routing and middleware chain and the fetch Request/Response objects around it, which
 * cost a create about as much as they cost a read. What clients see is the full path's answer
 * (the router does all of the create: content type, conditional create, Prefer, access control),
 * with the same limit on the body: a declared length over MAX_BODY_BYTES takes the full path (its
 * 413 comes before authentication), and a body that grows past it is refused while read. Requests from browsers (`Origin`) and
 * Binary uploads (raw bytes) take the full path; test/rest/create-fast-path.test.ts compares both ways.
 */
export function createFastPath(answering: DirectAnswering): FastPath {
  const maxBytes = answering.services.config.maxBodyBytes;
  return (request, response) => {
    if (request.method !== 'POST' || request.headers.origin !== undefined) return false;
    const match = CREATE_PATH.exec(request.url ?? '');
    if (!match || match[1] === 'Binary' || !isResourceType(match[1])) return false;
    // The full path refuses a declared length over the limit before anything else, authentication included.
    if (Number(request.headers['content-length'] ?? 0) > maxBytes) return false;
    const headers = incomingHeaders(request);
    void answerDirectly(answering, request, response, new CreateRequest(request, headers, maxBytes), headers, CREATE_ROUTE);
    return true;
  };
}

/** The create as the FHIR router takes it: its body read from the Node request when the router asks for it. */
class CreateRequest implements FhirRequest {
  readonly method = 'POST';
  readonly path: string;
  readonly query = new URLSearchParams();
  readonly body: RequestBody;
  private bytes: Promise<Buffer> | undefined;

  constructor(
    private readonly incoming: IncomingMessage,
    private readonly headers: IncomingMessage['headers'],
    private readonly maxBytes: number,
  ) {
    this.path = incoming.url!.slice(FHIR_BASE_PATH.length + 1);
    this.body = textBody(
      () => this.read().then(utf8Text),
      () => this.read(),
    );
  }

  header(name: string): string | undefined {
    return headerValue(this.headers, name) ?? undefined;
  }

  private read(): Promise<Buffer> {
    return (this.bytes ??= readIncoming(this.incoming, this.maxBytes));
  }
}
