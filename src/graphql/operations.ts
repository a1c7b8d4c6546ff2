import type { GraphQLFieldResolver } from 'graphql';
import { errors } from '../fhir/outcome.js';
import { isRecord, type Resource } from '../fhir/types.js';
import { isOpenType, isRepeating, isResourceParameterType, valueKey, type OperationParameter } from '../operations/definition.js';
import { listBuiltinOperations, type Operation } from '../operations/registry.js';
import { answerOf, routeAs } from './router-calls.js';
import type { Resolvers } from '../generated/graphql.js';
import type { GraphQLContext } from './context.js';
import {
  graphqlName,
  hasParts,
  ID_ARGUMENT,
  operationFields,
  parametersOf,
  partsOf,
  type OperationField,
} from './generator/operations.js';

/**
 * One resolver per operation field (schema/fhir-operations.graphql). GraphQL arguments become the
 * Parameters resource a REST client would send, POSTed through the FHIR router: the same route,
 * decoding, validation, authorization and handler as REST. The Parameters it returns is read back
 * into the output type's fields.
 *
 * A `<Field>Async` field (operations with `respondsAsync`) decodes and checks the same way, then
 * starts the operation as an AsyncJob, as REST does with `Prefer: respond-async`, and returns the job.
 *
 * The fields are those of the committed SDL, generated from the built-in operations; an operation
 * registered at run time (tests do) has no field, so it gets no resolver either.
 */
export function operationResolvers(operations: readonly Operation[] = listBuiltinOperations()): Resolvers {
  const roots: Record<string, Record<string, GraphQLFieldResolver<unknown, GraphQLContext>>> = {};
  for (const field of operationFields(operations)) (roots[field.root] ??= {})[field.name] = operationResolver(field);
  // The field names are computed from the operation definitions, so the generated per-field types cannot check them.
  return roots as Resolvers;
}

type Args = Record<string, unknown>;

function operationResolver(field: OperationField): GraphQLFieldResolver<unknown, GraphQLContext> {
  const { operation } = field;
  return async (_parent, args: Args, { requestContext }) => {
    const id = args[ID_ARGUMENT];
    const path = [field.resourceType, typeof id === 'string' ? id : undefined, `$${operation.definition.code}`].filter((part) => part !== undefined).join('/');
    const parameters = toParameters(args, operation);
    if (field.async) {
      // REST's `Prefer: respond-async`: the same checks, then the job the router accepted is the answer.
      const accepted = await routeAs(requestContext, 'POST', path, parameters, { prefer: 'respond-async' });
      const jobId = /\/AsyncJob\/([^/]+)$/.exec(accepted.headers['Content-Location'] ?? '')?.[1];
      if (!jobId) throw new Error(`$${operation.definition.code} did not start a job`);
      return requestContext.repo.readResource('AsyncJob', jobId);
    }
    const result = answerOf(await routeAs(requestContext, 'POST', path, parameters));
    if (field.returnsResource) return result;
    const out = parametersOf(operation.definition, 'out');
    return out.length === 0 ? result : fromEntries(entriesOf(result), out);
  };
}

/** A Parameters entry, as REST clients send and receive them. */
interface Entry {
  name: string;
  part?: Entry[];
  resource?: unknown;
  [value: string]: unknown;
}

/** The arguments as the Parameters resource a REST client would POST. */
function toParameters(args: Args, operation: Operation): Resource {
  return { resourceType: 'Parameters', parameter: toEntries(args, parametersOf(operation.definition, 'in'), operation.definition.code) };
}

function toEntries(values: Args, declared: OperationParameter[], code: string): Entry[] {
  const entries: Entry[] = [];
  for (const parameter of declared) {
    const value = values[graphqlName(parameter.name)];
    if (value === undefined || value === null) continue;
    for (const item of Array.isArray(value) ? value : [value]) {
      if (item !== null && item !== undefined) entries.push(toEntry(item, parameter, code));
    }
  }
  return entries;
}

function toEntry(value: unknown, parameter: OperationParameter, code: string): Entry {
  const { name } = parameter;
  if (hasParts(parameter)) return { name, part: toEntries(value as Args, partsOf(parameter), code) };
  if (isResourceParameterType(parameter.type)) return { name, resource: plainJson(value, false) };
  if (isOpenType(parameter)) {
    if (!isRecord(value)) {
      throw errors.invalid(
        `Parameter "${name}" of $${code} takes any type of value: give an object with one value[x] property, such as {"valueString": "text"}`,
        'Parameters.parameter',
      );
    }
    return { ...(plainJson(value, false) as Args), name };
  }
  // Typed input objects carry an explicit null for a field the client set to null: FHIR JSON has no nulls.
  return { name, [valueKey(parameter.type!)]: plainJson(value, true) };
}

/**
 * A copy made of plain objects and arrays (graphql-js builds argument objects without a prototype),
 * without null properties when `dropNulls`.
 */
function plainJson(value: unknown, dropNulls: boolean): unknown {
  if (Array.isArray(value)) return value.map((item) => plainJson(item, dropNulls));
  if (typeof value !== 'object' || value === null) return value;
  const copy: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (!(dropNulls && item === null)) copy[key] = plainJson(item, dropNulls);
  }
  return copy;
}

function entriesOf(resource: Resource): Entry[] {
  return Array.isArray(resource.parameter) ? (resource.parameter as Entry[]) : [];
}

/** Encoded out-parameters → the output object type's fields (lists for repeating ones). */
function fromEntries(entries: Entry[], declared: OperationParameter[]): Args {
  const output: Args = {};
  for (const parameter of declared) {
    const values = entries.filter((entry) => entry.name === parameter.name).map((entry) => fromEntry(entry, parameter));
    output[graphqlName(parameter.name)] = isRepeating(parameter) ? values : (values[0] ?? null);
  }
  return output;
}

function fromEntry(entry: Entry, parameter: OperationParameter): unknown {
  if (hasParts(parameter)) return fromEntries(entry.part ?? [], partsOf(parameter));
  if (isResourceParameterType(parameter.type)) return entry.resource;
  if (isOpenType(parameter)) {
    // The entry without its name: `{ "valueCode": "x" }`, the same shape the open-typed input takes.
    const { name: _name, ...value } = entry;
    return value;
  }
  return entry[valueKey(parameter.type!)];
}
