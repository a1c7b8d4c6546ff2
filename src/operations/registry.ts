import type { RequestContext } from './context.js';
import type { Database } from '../db/database.js';
import { errors } from '../fhir/outcome.js';
import { listsResourceType, type OperationDefinition, type OperationLevel } from './definition.js';

/** Where and by whom an operation was invoked; the handler's only view of the request. */
export interface OperationRequest {
  readonly level: OperationLevel;
  /** The resource type of a type- or instance-level call. */
  readonly resourceType?: string;
  /** The resource id of an instance-level call. */
  readonly id?: string;
  readonly ctx: RequestContext;
  /** The database, for services that keep tables of their own (terminology). */
  readonly db: Database;
  /** Set when the operation runs as an asynchronous job (`Prefer: respond-async`, src/operations/jobs). */
  readonly job?: AsyncJobControl;
}

/** What a handler running as an asynchronous job gets from its AsyncJob. */
export interface AsyncJobControl {
  /** The AsyncJob's id. */
  readonly id: string;
  /**
   * Aborted once the job is cancelled (AsyncJob/$cancel, on this server or another): the handler
   * stops at its next safe point and returns what it did.
   */
  readonly signal: AbortSignal;
  /**
   * Reports the output so far (the handler's output shape, possibly partial); stored as the job's
   * output at most once a second. Each call also notices a cancellation made on another server.
   */
  progress(output: unknown): Promise<void>;
  /**
   * Records where a later run of this job starts (any JSON value): a job whose server stopped is
   * resumed by another one with `resumeFrom` set to the last state recorded. Record a state only
   * once the work before it is durable (committed), so that a resumed run repeats nothing.
   */
  checkpoint(state: unknown): Promise<void>;
  /** The state the last run recorded with `checkpoint`; undefined on a first run. */
  readonly resumeFrom: unknown;
}

/**
 * One operation: its definition, and a handler that receives input already decoded and checked
 * against the definition's `in` parameters (one property per parameter: a value when `max` is 1,
 * an array otherwise; parts as nested objects; open types as `{ type, value }`) and returns one
 * property per `out` parameter in the same shapes. The handler never sees HTTP or GraphQL.
 */
/** Who may call an operation (Operation.access). */
export type OperationAccess = 'project-admin' | 'super-admin';

export interface Operation<I = any, O = any> {
  readonly definition: OperationDefinition;
  handler(input: I, request: OperationRequest): Promise<O>;
  /** Status of a success; 200 unless the operation creates the resource it returns (201). */
  readonly successStatus?: number;
  /**
   * The POST body may also be a plain JSON object whose keys are the in-parameters (arrays
   * repeat a parameter), as SPEC 4.7 specifies for `$clone`. A Parameters body is still accepted.
   */
  readonly acceptsPlainJsonBody?: boolean;
  /**
   * The POST body may also be the value of this resource-typed in-parameter itself (a resource
   * other than Parameters), as MedplumClient posts it. A Parameters body is still accepted.
   */
  readonly bareResourceParameter?: string;
  /**
   * The operation examines the `bareResourceParameter` resource itself (`$validate`): decoding
   * passes it through unvalidated, and with a bare body the other parameters come from the query
   * string.
   */
  readonly examinesResource?: boolean;
  /**
   * A POST may also give simple parameters in the query string (Medplum's `$expand-profile?url=`);
   * one given in both places takes the body's value.
   */
  readonly readsQueryOnPost?: boolean;
  /**
   * Who may call the operation at all, checked by the framework first (assertOperationAccess):
   * `project-admin` (a project admin or a super admin) or `super-admin`. Refused: 403 `forbidden`.
   */
  readonly access?: OperationAccess;
  /**
   * Further rules of who may call it (after `access`), before the input is decoded: a refusal
   * (403) comes before any complaint about the body.
   */
  authorize?(request: OperationRequest): void;
  /**
   * Checks the decoded input before the handler runs (invokeOperation), and before an asynchronous
   * job is started: a client's mistake is answered at once, not recorded as a failed job.
   */
  check?(input: I, request: OperationRequest): Promise<void>;
  /**
   * With `Prefer: respond-async` the REST call is answered `202 Accepted` at once, with
   * `Content-Location` naming an AsyncJob, and the handler runs in the background (request.job set;
   * src/operations/jobs). Without the header it runs within the request as usual. GraphQL
   * gives such an operation a second field, `<Field>Async`, that starts the same job and returns it.
   */
  readonly respondsAsync?: boolean;
  /** Only the asynchronous form exists (`$export`): a REST call without `Prefer: respond-async` is 400. */
  readonly onlyAsync?: boolean;
  /**
   * The `Content-Location` of the 202 answer when the operation has a status endpoint of its own
   * (the Bulk Data IG's); the AsyncJob's URL otherwise.
   */
  asyncStatusUrl?(fhirBase: string, jobId: string): string;
  /**
   * Every write it makes goes through the request context (its repository and database), so a
   * transaction Bundle can roll it back: it may be an entry of one although it affects state.
   * Operations that write elsewhere (accounts, other projects, jobs, memory) leave it unset.
   */
  readonly rollsBack?: boolean;
}

/** The one registry of operations: REST routing, the CapabilityStatement and GraphQL read it. */
const registry: Operation[] = [];

/** Adds an operation; returns a function that removes it again (tests register their own). */
export function registerOperation(operation: Operation): () => void {
  const { code } = operation.definition;
  for (const type of operation.definition.resource ?? []) {
    if (registry.some((other) => other.definition.code === code && other.definition.resource?.includes(type))) {
      throw new Error(`Operation $${code} is already registered for ${type}`);
    }
  }
  registry.push(operation);
  return () => {
    const index = registry.indexOf(operation);
    if (index >= 0) registry.splice(index, 1);
  };
}

/** The server's own operations, registered once at start by the composition root. */
const builtins: Operation[] = [];

/** Registers the server's own operations: the ones the committed GraphQL schema has fields for. */
export function registerBuiltinOperations(operations: readonly Operation[]): void {
  for (const operation of operations) registerOperation(operation);
  builtins.push(...operations);
}

/** Every registered operation with its definition and handler (REST and the CapabilityStatement). */
export function listOperations(): readonly Operation[] {
  return registry;
}

/** The built-in operations, which GraphQL generates its operation fields from. */
export function listBuiltinOperations(): readonly Operation[] {
  return builtins;
}

export function findOperationDefinition(id: string): OperationDefinition | undefined {
  return registry.find((operation) => operation.definition.id === id)?.definition;
}

/**
 * The operation `$code` at a level (on `resourceType` for type and instance levels). Anything
 * else is 404 `not-supported` naming the operation and the level.
 */
export function resolveOperation(code: string, level: OperationLevel, resourceType?: string): Operation {
  const sameCode = registry.filter((operation) => operation.definition.code === code);
  const candidates =
    level === 'system'
      ? sameCode.filter((operation) => operation.definition.system)
      : sameCode.filter((operation) => appliesTo(operation.definition, resourceType!));
  const where = level === 'system' ? 'at system level' : `at ${level} level on ${resourceType}`;
  if (sameCode.length === 0) throw errors.notSupported(`Operation $${code} is not supported by this server`);
  if (level === 'system') {
    if (candidates.length === 0) throw errors.notSupported(`Operation $${code} is not supported ${where}${availability(sameCode)}`);
    return candidates[0];
  }
  const operation = candidates[0];
  if (!operation) throw errors.notSupported(`Operation $${code} is not supported ${where}${availability(sameCode)}`);
  if (!operation.definition[level]) throw errors.notSupported(`Operation $${code} is not supported ${where}${availability([operation])}`);
  return operation;
}

/** Whether an operation on `definition.resource` applies to `resourceType` (GraphQL makes one field per type it applies to). */
export function appliesTo(definition: OperationDefinition, resourceType: string): boolean {
  const types = definition.resource ?? [];
  return listsResourceType(definition, resourceType) || types.includes('Resource') || (types.includes('DomainResource') && resourceType !== 'Bundle');
}

/** ": it is available at type level on CodeSystem, ..." */
function availability(operations: Operation[]): string {
  const places: string[] = [];
  for (const { definition } of operations) {
    const types = (definition.resource ?? []).join(', ');
    if (definition.system) places.push('system level');
    if (definition.type) places.push(`type level on ${types}`);
    if (definition.instance) places.push(`instance level on ${types}`);
  }
  return places.length > 0 ? `; it is available at ${places.join(', ')}` : '';
}
