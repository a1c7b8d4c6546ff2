import { OperationOutcomeError, errors, outcome, issue } from '../fhir/outcome.js';
import { scopeRefusal } from '../identity/scope-access.js';
import type { Resource } from '../fhir/types.js';
import { decodeBody, encodeOutput, OutputError, type OperationInput } from './parameters.js';
import type { Operation, OperationRequest } from './registry.js';

export interface OperationResult {
  /** The response body: a Parameters resource, or the resource a `return` operation gives. */
  resource: Resource;
  status: number;
}

/**
 * Runs a handler on already-decoded input and encodes its output: the one path every transport
 * (REST, GraphQL) takes. Output that breaks the definition is a server bug: 500, logged.
 */
export async function invokeOperation(operation: Operation, input: OperationInput, request: OperationRequest): Promise<OperationResult> {
  assertOperationScopes(operation, request);
  await operation.check?.(input, request);
  const output = await operation.handler(input, request);
  try {
    return { resource: encodeOutput(operation.definition, output), status: operation.successStatus ?? 200 };
  } catch (error) {
    if (!(error instanceof OutputError)) throw error;
    const code = operation.definition.code;
    request.ctx.log.error(
      { operation: `$${code}`, definition: operation.definition.url, problem: error.message },
      `operation $${code} returned output that breaks its OperationDefinition: ${error.message}`,
    );
    throw new OperationOutcomeError(
      outcome([issue('exception', `Operation $${code} failed: its output does not match its OperationDefinition`)]),
      500,
    );
  }
}

/**
 * Runs an operation from a Parameters resource, the way any transport other than REST (GraphQL
 * fields generated from `listOperations()`) calls it: same decoding, same checks, same handler.
 */
export function executeOperation(operation: Operation, parameters: Resource | undefined, request: OperationRequest): Promise<OperationResult> {
  return invokeOperation(operation, decodeBody(operation.definition, parameters, { bareResource: operation.bareResourceParameter, examined: operation.examinesResource }), request);
}

/**
 * The operation's declared `access`, the one guard of admin-only operations: a project admin (or
 * a super admin) for `project-admin`, a super admin for `super-admin`. A project admin acts in
 * their own project only, which the guarded repository the handler uses already ensures.
 */
export function assertOperationAccess(operation: Operation, request: OperationRequest): void {
  const { superAdmin, projectAdmin } = request.ctx.identity;
  const code = `$${operation.definition.code}`;
  if (operation.access === 'super-admin' && !superAdmin) throw errors.forbidden(`Only a super admin can run ${code}`);
  if (operation.access === 'project-admin' && !superAdmin && !projectAdmin) {
    throw errors.forbidden(`Only a project admin (or a super admin) can run ${code}`);
  }
}

/**
 * SMART scopes for an operation, by its kind: on a type or instance, one that changes data needs
 * `u` on the type and one that does not needs `r`; a system-level one that changes data needs
 * `c`, `u` and `d` on every type (`user/*.cud`). What the handler then reads and writes goes
 * through the guarded repository, which checks each resource again.
 */
export function assertOperationScopes(operation: Operation, request: OperationRequest): void {
  const identity = request.ctx.identity;
  if (!identity.scopes) return;
  const changes = operation.definition.affectsState === true;
  const code = `$${operation.definition.code}`;
  if (request.resourceType) {
    const refusal = scopeRefusal(identity, request.resourceType, changes ? 'u' : 'r');
    if (refusal) throw errors.forbidden(`${refusal} (operation ${code} on ${request.resourceType})`);
    return;
  }
  if (!changes) return;
  const everyType = (['c', 'u', 'd'] as const).every((permission) =>
    identity.scopes!.scopes.some((s) => s.type === '*' && s.context !== 'patient' && s.params.length === 0 && s.permissions.has(permission)),
  );
  if (!everyType) throw errors.forbidden(`This token's scopes do not allow it: operation ${code} changes data and requires scope user/*.cud or system/*.cud`);
}
