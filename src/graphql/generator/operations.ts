import { getResourceTypes, getStructureDefinition, isResourceType } from '../../fhir/definitions.js';
import {
  isOpenType,
  isRepeating,
  isResourceParameterType,
  isSimpleType,
  type OperationDefinition,
  type OperationParameter,
} from '../../operations/definition.js';
import { appliesTo, type Operation } from '../../operations/registry.js';
import { compare } from './model.js';
import { hyphenToUnderscore, isGraphQLName, pascalCase } from './names.js';
import { block, sdlFile, type SdlArgument, type SdlField } from './sdl.js';

/**
 * The GraphQL face of the operation registry: one field per operation and place (system, or each
 * resource type), named `<ResourceType><PascalCode>` or `System<PascalCode>`, on Query when the
 * operation does not affect state and on Mutation when it does. An operation that offers
 * asynchronous running (`respondsAsync`) has a second field per place, `<Field>Async` on Mutation,
 * with the same arguments, that starts the job REST's `Prefer: respond-async` starts and returns its
 * AsyncJob. The SDL generator and the resolvers (src/graphql/operations.ts) both read
 * `operationFields`, so the schema and the runtime agree.
 */

export interface OperationField {
  /** `CodeSystemLookup`, `ProjectInit`, `SystemFoo`. */
  readonly name: string;
  readonly root: 'Query' | 'Mutation';
  readonly operation: Operation;
  /** Undefined for a system-level field. */
  readonly resourceType?: string;
  /**
   * The `id` argument: `required` for an instance-only operation, `optional` when the operation
   * runs at type and instance level (with `id` it runs on that instance), `none` otherwise.
   */
  readonly id: 'none' | 'optional' | 'required';
  /** The operation's output is one resource (a single resource-typed `return`): the field returns it. */
  readonly returnsResource: boolean;
  /**
   * The `<Field>Async` field of an operation with `respondsAsync`: it starts the operation as an
   * AsyncJob and returns the job (accepted), as REST answers `Prefer: respond-async`.
   */
  readonly async: boolean;
  /** The name of the field running the operation synchronously (`SystemReindex` for `SystemReindexAsync`; its own name otherwise). */
  readonly syncName: string;
}

/** What `<Field>Async` returns: the AsyncJob resource type, read later with `AsyncJob(id:)`. */
export const ASYNC_JOB_TYPE = 'AsyncJob';

/** The suffix of the asynchronous form of an operation field. */
export const ASYNC_SUFFIX = 'Async';

/** The name of the `id` argument of instance-level fields; no in-parameter may take it. */
export const ID_ARGUMENT = 'id';

/**
 * Every operation field, sorted by name. When several operations apply to the same place under the
 * same code, the first registered wins, as REST's `resolveOperation` picks it.
 */
export function operationFields(operations: readonly Operation[]): OperationField[] {
  const fields = new Map<string, OperationField>();
  const add = (field: Omit<OperationField, 'async' | 'syncName'>) => {
    if (fields.has(field.name)) return;
    // An operation that runs only as a job (`$export`) has no field answering at once.
    if (!field.operation.onlyAsync) fields.set(field.name, { ...field, async: false, syncName: field.name });
    // Starting a job writes it (an AsyncJob), whatever the operation does: a mutation.
    const name = `${field.name}${ASYNC_SUFFIX}`;
    if (field.operation.respondsAsync && !fields.has(name)) fields.set(name, { ...field, name, root: 'Mutation', async: true, syncName: field.name });
  };
  for (const operation of operations) {
    const { definition } = operation;
    const code = pascalCase(definition.code);
    const root = definition.affectsState ? 'Mutation' : 'Query';
    const returnsResource = isSingleResourceReturn(definition);
    if (definition.system) add({ name: `System${code}`, root, operation, id: 'none', returnsResource });
    if (!definition.type && !definition.instance) continue;
    const id = !definition.instance ? 'none' : definition.type ? 'optional' : 'required';
    for (const resourceType of getResourceTypes()) {
      if (appliesTo(definition, resourceType)) add({ name: `${resourceType}${code}`, root, operation, resourceType, id, returnsResource });
    }
  }
  return [...fields.values()].sort((a, b) => compare(a.name, b.name));
}

/** A FHIR parameter or part name as a GraphQL argument or field name: `exclude-system` → `exclude_system`. */
export function graphqlName(name: string): string {
  const candidate = hyphenToUnderscore(name).replace(/[^A-Za-z0-9_]/g, '_');
  const result = /^[0-9]/.test(candidate) ? `_${candidate}` : candidate;
  if (!isGraphQLName(result)) throw new Error(`generate-schema: operation parameter "${name}" has no GraphQL name`);
  return result;
}

/** Same rule as the REST encoding: a lone resource-typed `return` is the whole response. */
export function isSingleResourceReturn(definition: OperationDefinition): boolean {
  const out = parametersOf(definition, 'out');
  return out.length === 1 && out[0].name === 'return' && isResourceParameterType(out[0].type);
}

/** The `in` or `out` parameters that can carry a value (`max: "0"` ones cannot). */
export function parametersOf(definition: OperationDefinition, use: 'in' | 'out'): OperationParameter[] {
  return (definition.parameter ?? []).filter((p) => p.use === use && p.max !== '0');
}

/** Parameters with parts and no type are nested parameters (the decoding's rule, SPEC 4.1). */
export function hasParts(parameter: OperationParameter): boolean {
  return Boolean(parameter.part?.length) && !parameter.type;
}

/** The parts that can carry a value. */
export function partsOf(parameter: OperationParameter): OperationParameter[] {
  return (parameter.part ?? []).filter((p) => p.max !== '0');
}

/**
 * A data type the FHIR schema has object and input types for (same rule as the type generator:
 * concrete complex types). Profiles such as `Duration` or `SimpleQuantity` are not: they travel as JSON.
 */
function isObjectDataType(type: string): boolean {
  const definition = getStructureDefinition(type);
  return definition?.kind === 'complex-type' && !definition.abstract;
}

/** FHIR primitive types → GraphQL scalars (the plan's mapping; everything else is a String). */
const SCALARS: Record<string, string> = {
  boolean: 'Boolean',
  integer: 'Int',
  positiveInt: 'Int',
  unsignedInt: 'Int',
  decimal: 'Float',
};

/**
 * `extend type Query` / `extend type Mutation` with the operation fields, and the input and output
 * types they need: the whole text of schema/fhir-operations.graphql (empty without operations).
 */
export function generateOperationsSdl(operations: readonly Operation[]): string {
  const fields = operationFields(operations);
  // No operations, no file (an SDL file without definitions does not parse).
  if (fields.length === 0) return '';
  const writer = new SdlWriter();
  const roots: Record<OperationField['root'], SdlField[]> = { Query: [], Mutation: [] };
  for (const field of fields) roots[field.root].push(writer.field(field));
  const blocks = (['Query', 'Mutation'] as const)
    .filter((root) => roots[root].length > 0)
    // Type extensions take no description.
    .map((root) => block(`extend type ${root}`, roots[root]));
  return sdlFile([...blocks, ...writer.types.sort((a, b) => compare(a.name, b.name)).map((type) => type.text)]);
}

class SdlWriter {
  /** Input and output type blocks with their names (the file lists them by name). */
  readonly types: { name: string; text: string }[] = [];

  field(field: OperationField): SdlField {
    const { definition } = field.operation;
    const args: SdlArgument[] = [];
    if (field.id !== 'none') args.push({ name: ID_ARGUMENT, type: field.id === 'required' ? 'ID!' : 'ID' });
    for (const parameter of parametersOf(definition, 'in')) {
      const name = graphqlName(parameter.name);
      if (args.some((arg) => arg.name === name)) {
        throw new Error(`generate-schema: $${definition.code} has two arguments named ${name} on ${field.name}`);
      }
      // The asynchronous form takes the very input types of the synchronous field.
      args.push({ name, type: this.inputReference(parameter, field.syncName) });
    }
    const type = field.async ? ASYNC_JOB_TYPE : this.outputOf(field);
    return { name: field.name, args, type, description: fieldDescription(field) };
  }

  /** The argument or input field type of an in-parameter: lists for repeating ones, `!` when required. */
  private inputReference(parameter: OperationParameter, owner: string): string {
    const named = this.inputNamedType(parameter, owner);
    const type = isRepeating(parameter) ? `[${named}!]` : named;
    // Decoding rejects a missing required parameter anyway: non-null only moves the check earlier.
    return parameter.min >= 1 ? `${type}!` : type;
  }

  private inputNamedType(parameter: OperationParameter, owner: string): string {
    if (hasParts(parameter)) {
      const name = `${owner}${pascalCase(parameter.name)}`;
      const fields = partsOf(parameter).map((part) => ({
        name: graphqlName(part.name),
        type: this.inputReference(part, name),
        description: part.documentation,
      }));
      this.define(`${name}Input`, `input ${name}Input`, fields, parameter.documentation);
      return `${name}Input`;
    }
    // Resources travel as FHIR JSON and are validated by the decoding, as in a REST Parameters body;
    // open types as an object with one `value[x]` property, e.g. `{ "valueCode": "x" }`.
    if (isResourceParameterType(parameter.type) || isOpenType(parameter)) return 'JSON';
    const type = parameter.type!;
    if (isSimpleType(type)) return SCALARS[type] ?? 'String';
    return isObjectDataType(type) ? `${type}Input` : 'JSON';
  }

  private outputOf(field: OperationField): string {
    const { definition } = field.operation;
    if (field.returnsResource) return outputResourceType(parametersOf(definition, 'out')[0].type!);
    const out = parametersOf(definition, 'out');
    // Nothing to return but success: the Parameters resource REST answers with, as JSON.
    if (out.length === 0) return 'JSON';
    const name = `${field.name}Output`;
    this.define(name, `type ${name}`, this.outputFields(out, field.name), `Output of $${definition.code}.`);
    return name;
  }

  private outputFields(parameters: OperationParameter[], owner: string): SdlField[] {
    return parameters.map((parameter) => {
      const named = this.outputNamedType(parameter, owner);
      const type = isRepeating(parameter) ? `[${named}!]` : named;
      // The output is checked against the definition before it is returned, so `min` holds.
      return { name: graphqlName(parameter.name), type: parameter.min >= 1 ? `${type}!` : type, description: parameter.documentation };
    });
  }

  private outputNamedType(parameter: OperationParameter, owner: string): string {
    if (hasParts(parameter)) {
      const name = `${owner}${pascalCase(parameter.name)}`;
      this.define(name, `type ${name}`, this.outputFields(partsOf(parameter), name), parameter.documentation);
      return name;
    }
    if (isResourceParameterType(parameter.type)) return outputResourceType(parameter.type!);
    if (isOpenType(parameter)) return 'JSON';
    const type = parameter.type!;
    if (isSimpleType(type)) return SCALARS[type] ?? 'String';
    return isObjectDataType(type) ? type : 'JSON';
  }

  private define(name: string, head: string, fields: SdlField[], text: string | undefined): void {
    const written = block(head, fields, text);
    const same = this.types.find((type) => type.name === name);
    // The synchronous and asynchronous fields of one operation share their input types.
    if (same?.text === written) return;
    if (same) throw new Error(`generate-schema: two operation types are named ${name}`);
    this.types.push({ name, text: written });
  }
}

/** A concrete resource type is its object type; `Resource`, `DomainResource` and `Any` the interface. */
function outputResourceType(type: string): string {
  return isResourceType(type) ? type : 'Resource';
}

function fieldDescription(field: OperationField): string {
  const { definition } = field.operation;
  const where = field.resourceType
    ? `on ${field.resourceType}${field.id === 'optional' ? ' (with `id`: on that instance)' : field.id === 'required' ? ' instance `id`' : ''}`
    : 'at system level';
  if (field.async) {
    const sameAtOnce = field.operation.onlyAsync ? '' : `; \`${field.syncName}\` gives the same result at once`;
    return (
      `$${definition.code} ${where}, as an asynchronous job (REST's \`Prefer: respond-async\`): checks the arguments, ` +
      `starts the job and returns its AsyncJob (\`accepted\`); read it with \`AsyncJob(id:)\` until its \`status\` is ` +
      `completed (\`output\`: the operation's Parameters, as REST's job holds them${sameAtOnce}), error or cancelled.`
    );
  }
  const about = typeof definition.description === 'string' ? `: ${definition.description}` : '';
  return `$${definition.code} ${where}${about}`;
}
