import { errors, issue } from '../fhir/outcome.js';
import { isRecord, type OperationOutcome, type OperationOutcomeIssue, type Resource } from '../fhir/types.js';
import { coreOperationDefinition } from '../operations/definition.js';
import type { Operation, OperationRequest } from '../operations/registry.js';
import { modeIssues, type ModeTarget, type ValidationMode } from './modes.js';
import { isError, validationIssues, validationOutcome } from './report.js';

/**
 * `Resource/$validate` (FHIR R4 Resource-validate), at type and instance level: always 200 with an
 * OperationOutcome listing every issue, nothing written. The resource comes as the `resource`
 * parameter or as the bare body (MedplumClient's validateResource); at instance level without one,
 * the stored resource is validated. `mode` adds the checks of that write (modes.ts).
 */

interface ValidateInput {
  resource?: unknown;
  mode?: string;
  profile?: string;
}

interface ValidateOutput {
  return: OperationOutcome;
}

/** R4 resource-validation-mode; `profile` is general validation against the `profile` given. */
const MODES = new Set(['create', 'update', 'delete', 'profile']);

export const validateOperation: Operation<ValidateInput, ValidateOutput> = {
  definition: coreOperationDefinition('Resource-validate'),
  bareResourceParameter: 'resource',
  examinesResource: true,
  async check(input, { level }) {
    if (input.mode !== undefined && !MODES.has(input.mode)) {
      const text = `Parameter "mode" of $validate must be create, update, delete or profile, not "${input.mode}"`;
      throw errors.invalid(text, 'Parameters.parameter');
    }
    if ((input.mode === 'update' || input.mode === 'delete') && level !== 'instance') {
      throw errors.invalid(`mode=${input.mode} names an existing resource: call $validate on the instance, [type]/[id]/$validate`, 'Parameters.parameter');
    }
    if (input.resource === undefined && level !== 'instance') {
      throw errors.invalid('$validate at type level needs the resource: as the body, or as the "resource" parameter', 'Parameters.parameter');
    }
  },
  async handler(input, request) {
    const mode = writeMode(input.mode);
    if (mode === 'delete') return { return: validationOutcome(await modeIssues(request.ctx, mode, target(request))) };
    const resource = input.resource ?? (await request.ctx.repo.readResource(request.resourceType!, request.id!));
    const issues = await validationIssues(request.ctx, resource, {
      expectedType: request.resourceType!,
      profiles: input.profile !== undefined ? [input.profile] : [],
    });
    if (mode !== 'update') issues.push(...idMismatch(request, resource));
    if (mode !== undefined && !issues.some(isError)) {
      issues.push(...(await modeIssues(request.ctx, mode, { ...target(request), resource: resource as Resource })));
    }
    return { return: validationOutcome(issues) };
  },
};

function writeMode(mode: string | undefined): ValidationMode | undefined {
  return mode === 'create' || mode === 'update' || mode === 'delete' ? mode : undefined;
}

function target(request: OperationRequest): ModeTarget {
  return { resourceType: request.resourceType!, id: request.id };
}

/** At instance level the resource is that instance: an id of its own must be the URL's (as an update requires). */
function idMismatch(request: OperationRequest, resource: unknown): OperationOutcomeIssue[] {
  if (request.level !== 'instance' || !isRecord(resource) || resource.id === undefined || resource.id === request.id) return [];
  return [issue('invalid', `The body id "${String(resource.id)}" does not match the URL id "${request.id}"`, `${request.resourceType}.id`)];
}
