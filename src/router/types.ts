import type { Config } from '../config.js';
import type { Database } from '../db/database.js';
import type { Resource } from '../fhir/types.js';
import type { RequestContext } from '../operations/context.js';
import type { OperationLevel } from '../operations/definition.js';
import type { WriteDependency } from '../cache/search-cache.js';

/**
 * The FHIR router's own request and response: plain values with no transport in them, so REST,
 * Bundle entries, GraphQL and bots reach the same handlers (http.html's interactions).
 */

export type FhirMethod = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** A request body read on demand: REST streams it, a Bundle entry already holds it parsed. */
export interface RequestBody {
  /** The body as JSON; undefined when it is empty. Malformed JSON is a 400 naming the parser's reason. */
  json(): Promise<unknown>;
  text(): Promise<string>;
  bytes(): Promise<Uint8Array>;
}

export interface FhirRequest {
  method: FhirMethod;
  /** The path below the FHIR base, without a leading slash: `Patient/1/_history`, `` for the base itself. */
  path: string;
  query: URLSearchParams;
  /** A request header by its lower-case name. */
  header(name: string): string | undefined;
  body?: RequestBody;
  /** The id a create must give its resource: a transaction assigns ids before it rewrites references. */
  assignedId?: string;
}

/**
 * Bytes sent a chunk at a time as the client takes them (a Binary read, a CSV export): a class, so
 * that a body is told apart from a resource by `instanceof`. `size` undefined: not known ahead
 * (the answer has no Content-Length).
 */
export class StreamedBytes {
  constructor(
    readonly size: number | undefined,
    readonly chunks: AsyncIterable<Uint8Array>,
  ) {}
}

/**
 * `body` is FHIR JSON text ready to send (stored resources travel as stored), a resource built by a
 * handler, or bytes whose type is in the `Content-Type` header (a Binary read), whole or streamed.
 */
export interface FhirResponse {
  status: number;
  headers: Record<string, string>;
  body?: string | Resource | Uint8Array | StreamedBytes;
  /** A search page: what its answer depends on, and its next page's link (src/http/read-ahead.ts). */
  walk?: WalkPage;
}

/** A search page: the HTTP layer may read the next one ahead of its request. */
export interface WalkPage {
  /** Whose writes change this answer: a page read ahead is kept until one is heard of. */
  readonly dependency: WriteDependency;
  /** The `next` link, as the Bundle gives it; absent on the last page. */
  readonly next: string | undefined;
}

/** FHIR RESTful interactions (http://hl7.org/fhir/R4/http.html); the CapabilityStatement lists them. */
export type TypeInteraction =
  | 'read'
  | 'vread'
  | 'update'
  | 'patch'
  | 'delete'
  | 'history-instance'
  | 'history-type'
  | 'create'
  | 'search-type';
export type SystemInteraction = 'capabilities' | 'transaction' | 'batch' | 'search-system' | 'history-system';

/** The path parameters a route names (`:type`, `:id`, `:vid`, `:op`, `:file`). */
export interface RouteParams {
  type?: string;
  id?: string;
  vid?: string;
  op?: string;
  /** A file of a bulk data export. */
  file?: string;
}

/** What a public route gets: the server's settings, and the caller's context when a token came with the request. */
export interface PublicCaller {
  config: Config;
  database: Database;
  ctx?: RequestContext;
}

interface RouteBase {
  method: Exclude<FhirMethod, 'HEAD'>;
  /** Below the FHIR base, in Hono's pattern syntax (`:type{[A-Z][A-Za-z]+}/:id`). */
  path: string;
  interaction?: { type: TypeInteraction } | { system: SystemInteraction };
  /** A transaction refuses the route: what it does cannot be rolled back (a nested Bundle). */
  refusedInTransaction?: boolean;
  /** The route runs operations of this level: a transaction admits those that change no data. */
  operationLevel?: OperationLevel;
  /** The route is the conditional form of its interaction (`PUT [type]?search`); the CapabilityStatement says so. */
  conditional?: boolean;
  /**
   * The handler decides which content types it can answer in: a read (a Binary's own bytes, and a
   * 304 that has no body), `$csv`, bot calls, export files. Every other route answers FHIR JSON,
   * so the router refuses (406) an Accept or `_format` that rules it out before the handler runs,
   * and before a write writes.
   */
  ownAnswerTypes?: true;
}

export interface AuthenticatedRoute extends RouteBase {
  public?: false;
  handler: (req: FhirRequest, params: RouteParams, ctx: RequestContext) => Promise<FhirResponse>;
}

/** Served without authentication (the CapabilityStatement). */
export interface PublicRoute extends RouteBase {
  public: true;
  handler: (req: FhirRequest, params: RouteParams, caller: PublicCaller) => Promise<FhirResponse>;
}

export type FhirRoute = AuthenticatedRoute | PublicRoute;

export interface RouteMatch {
  route: FhirRoute;
  params: RouteParams;
}

/** The router as the Bundle handlers use it to run their entries. */
export interface EntryRouter {
  match(method: FhirMethod, path: string): RouteMatch | undefined;
  /** Runs a request; every failure becomes its OperationOutcome answer. */
  handle(req: FhirRequest, ctx: RequestContext): Promise<FhirResponse>;
  /** Runs a request; failures are thrown. */
  dispatch(req: FhirRequest, caller: PublicCaller, found?: RouteMatch): Promise<FhirResponse>;
}
