import { errors } from '../fhir/outcome.js';
import type { Coding, Resource } from '../fhir/types.js';
import { coreOperationDefinition } from '../operations/definition.js';
import type { Operation, OperationRequest } from '../operations/registry.js';
import { designationIn } from './language.js';
import { Membership, type Member } from './membership.js';
import { subjectResource } from './resources.js';
import { systemOfResource } from './systems.js';

interface ValidateInput {
  url?: string;
  valueSet?: Resource;
  codeSystem?: Resource;
  code?: string;
  system?: string;
  version?: string;
  display?: string;
  coding?: Coding;
  codeableConcept?: { coding?: Coding[] };
  abstract?: boolean;
  displayLanguage?: string;
}

interface ValidateOutput {
  result: boolean;
  message?: string;
  display?: string;
}

/** ValueSet/$validate-code (SPEC 4.5), on the membership engine shared with $expand. */
export const valueSetValidateCodeOperation: Operation<ValidateInput, ValidateOutput> = {
  definition: coreOperationDefinition('ValueSet-validate-code'),
  async handler(input, request) {
    const valueSet = await subjectResource(request, 'ValueSet', input.valueSet, input.url);
    const label = `value set ${String(valueSet.url ?? `ValueSet/${valueSet.id}`)}`;
    return validate(request, valueSet, codingsOf(input, undefined), input, label);
  },
};

/** CodeSystem/$validate-code: membership in the whole code system (an implicit value set). */
export const codeSystemValidateCodeOperation: Operation<ValidateInput, ValidateOutput> = {
  definition: coreOperationDefinition('CodeSystem-validate-code'),
  async handler(input, request) {
    let url: string;
    let version = input.version;
    if (request.level === 'instance') {
      const system = await systemOfResource(request.db, await request.ctx.repo.readResource('CodeSystem', request.id!), request.ctx);
      url = system.url;
      version = system.version || undefined;
    } else if (input.codeSystem) {
      url = String(input.codeSystem.url);
    } else if (input.url !== undefined) {
      url = input.url;
    } else {
      const fromCoding = input.coding?.system ?? input.codeableConcept?.coding?.find((c) => c.system)?.system;
      if (!fromCoding) throw errors.invalid('Give the code system by url (or call the operation on a CodeSystem instance)', 'Parameters.parameter');
      url = fromCoding;
    }
    const implicit: Resource = { resourceType: 'ValueSet', compose: { include: [{ system: url, ...(version ? { version } : {}) }] } };
    return validate(request, implicit, codingsOf(input, url), input, `code system ${url}`);
  },
};

function codingsOf(input: ValidateInput, defaultSystem: string | undefined): Coding[] {
  if (input.coding) return [input.coding];
  if (input.codeableConcept) {
    const codings = input.codeableConcept.coding ?? [];
    if (codings.length === 0) throw errors.invalid('codeableConcept must contain at least one coding', 'Parameters.parameter');
    return codings;
  }
  const system = input.system ?? defaultSystem;
  if (input.code === undefined || system === undefined) {
    // SPEC 4.5: code with system, coding, or codeableConcept.
    throw errors.invalid('$validate-code needs code together with system, or coding, or codeableConcept', 'Parameters.parameter');
  }
  return [{ system, code: input.code, ...(input.display !== undefined ? { display: input.display } : {}) }];
}

/** True when any coding is a member (SPEC 4.5: a CodeableConcept is valid when any coding is included). */
async function validate(request: OperationRequest, valueSet: Resource, codings: Coding[], input: ValidateInput, label: string): Promise<ValidateOutput> {
  const membership = new Membership(request.ctx, request.db);
  const problems: string[] = [];
  for (const coding of codings) {
    if (coding.code === undefined) {
      problems.push('A coding without a code cannot be validated');
      continue;
    }
    const found = await membership.find(valueSet, coding.system, coding.code);
    const member = found.member;
    const name = `Code "${coding.code}"${coding.system ? ` (system ${coding.system})` : ''}`;
    if (!member) {
      problems.push(found.reason ? `${name} is not in ${label}: ${found.reason}` : `${name} is not in ${label}`);
      continue;
    }
    if (member.abstract && input.abstract !== true) {
      problems.push(`${name} is abstract and is not valid here unless abstract=true`);
      continue;
    }
    const display = coding.display ?? (codings.length === 1 ? input.display : undefined);
    // R4: the display returned is the one in displayLanguage where the code system has it.
    const correct = designationIn(input.displayLanguage, member.designations) ?? member.display;
    if (display !== undefined && !displayMatches(member, display)) {
      return {
        result: false,
        message: `The display "${display}" is not a valid display for ${name}; the correct display is "${correct ?? member.code}"`,
        display: correct ?? member.code,
      };
    }
    return { result: true, ...(correct !== undefined ? { display: correct } : {}) };
  }
  return { result: false, message: problems.join('; ') };
}

function displayMatches(member: Member, display: string): boolean {
  return (
    member.display === display || member.designations.some((d) => d.value === display) || (member.display === undefined && display === member.code)
  );
}
